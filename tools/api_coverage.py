"""How much of PyTorch's everyday API rawdev runs: a checklist, each row tried on cpu and on cuda.

Each row names a PyTorch API, its category and a small snippet, written the way tutorials, the
PyTorch examples, makemore and nanoGPT-style scripts call it: typical arguments, the result checked
(a shape, a value against numpy), and a backward pass with a check that the gradient appeared where
the op is differentiable. For each row the tool reports

  exists  the name resolves in rawdev (torch.X -> rawdev.X),
  cpu     the snippet runs with device="cpu" without an exception,
  cuda    the same snippet with device="cuda" on the chosen driver (the simulator by default).

A snippet runs in a forked worker process with a time limit (default 20 s): one that takes longer is
"slow" and its worker is replaced; so is the worker after any failure, so that no row inherits another
row's state. Rows whose name does not resolve are not run: their cpu/cuda cells carry the lookup error.

    python tools/api_coverage.py                          # Markdown table on stdout
    python tools/api_coverage.py --out docs/API_COVERAGE.md --json coverage.json
    python tools/api_coverage.py --only torch.cat,torch.nn.Linear --devices cpu
"""
import argparse
import collections
import datetime
import json
import math
import multiprocessing
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

CATEGORIES = [
    "creation", "random", "joining", "indexing", "views", "math", "operators", "reductions", "comparison",
    "linalg", "dtype-device", "tensor", "autograd", "utilities", "nn.layers", "nn.activations", "nn.losses",
    "nn.module", "nn.functional", "nn.init", "optim", "lr_scheduler", "utils.data",
]


@dataclass
class Row:
    name: str                       # the PyTorch name, e.g. "torch.cat", "torch.Tensor.view"
    category: str
    fn: object                      # fn(torch, device): raises on failure
    note: str = ""                  # which use of the API the snippet exercises, when a name has several rows
    devices: tuple = ("cpu", "cuda")
    result: dict = field(default_factory=dict)
    timeout: float | None = None    # seconds for this row's snippet; None: run_rows' timeout

    @property
    def key(self):
        return f"{self.name} [{self.note}]" if self.note else self.name


ROWS = []


def row(name, category, note="", devices=("cpu", "cuda")):
    assert category in CATEGORIES, category

    def deco(fn):
        ROWS.append(Row(name, category, fn, note, tuple(devices)))
        return fn
    return deco


# ----------------------------------------------------------------------------------------------------------
# helpers the snippets use (numpy only: the values are compared on the host)

class CheckFailed(AssertionError):
    pass


def _check(cond, what):
    if not cond:
        raise CheckFailed(what)


def _np(t):
    """A tensor's values on the host, through tolist (so that .numpy() is measured by its own row)."""
    if hasattr(t, "detach"):
        t = t.detach()
    if hasattr(t, "cpu"):
        t = t.cpu()
    return np.asarray(t.tolist() if hasattr(t, "tolist") else t, dtype=np.float64)


def _close(t, ref, tol=1e-4, what="values"):
    got, ref = _np(t), np.asarray(ref, dtype=np.float64)
    _check(got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}")
    _check(np.allclose(got, ref, rtol=tol, atol=tol, equal_nan=True),
           f"wrong {what}: {np.round(got.ravel()[:4], 4).tolist()} vs {np.round(ref.ravel()[:4], 4).tolist()}")


def _shape(t, *shape):
    _check(tuple(t.shape) == tuple(shape), f"shape {tuple(t.shape)}, expected {tuple(shape)}")


def _data(*shape, lo=-1.0, hi=1.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(np.float32)


def _leaf(torch, device, arr):
    """A float32 leaf that requires grad, as programs make one: torch.tensor(..., requires_grad=True)."""
    return torch.tensor(np.asarray(arr).tolist(), dtype=torch.float32, device=device, requires_grad=True)


def _t(torch, device, arr, dtype=None):
    arr = np.asarray(arr)
    if dtype is None:
        dtype = torch.int64 if arr.dtype.kind in "iu" else torch.bool if arr.dtype.kind == "b" else torch.float32
    return torch.tensor(arr.tolist(), dtype=dtype, device=device)


def _backward(out, *leaves, grads=None):
    """out.sum().backward(), then every leaf has a gradient of its own shape (and the given values)."""
    out.sum().backward()
    for i, x in enumerate(leaves):
        _check(x.grad is not None, "no gradient reached the input")
        _check(tuple(x.grad.shape) == tuple(x.shape), f"grad shape {tuple(x.grad.shape)} != {tuple(x.shape)}")
        if grads is not None and grads[i] is not None:
            _close(x.grad, grads[i], what="gradient")


def _on(t, device):
    _check(t.device.type == device, f"result on {t.device}, expected {device}")


def _softmax(a, axis=-1):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ----------------------------------------------------------------------------------------------------------
# creation

@row("torch.tensor", "creation")
def _(torch, device):
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    _check(t.dtype == torch.float32, f"dtype {t.dtype}")
    _close(t, [[1, 2], [3, 4]])
    i = torch.tensor([1, 2, 3], device=device)
    _check(i.dtype == torch.int64, f"int list gives {i.dtype}")
    b = torch.tensor([True, False], device=device)
    _check(b.dtype == torch.bool, f"bool list gives {b.dtype}")
    _on(t, device)


@row("torch.as_tensor", "creation")
def _(torch, device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = torch.as_tensor(a, device=device)
    _close(t, a)
    _check(t.dtype == torch.float32, f"dtype {t.dtype}")


@row("torch.from_numpy", "creation")
def _(torch, device):
    a = np.arange(6, dtype=np.int64).reshape(3, 2)
    t = torch.from_numpy(a).to(device)
    _check(t.dtype == torch.int64, f"dtype {t.dtype}")
    _close(t, a)
    f = torch.from_numpy(np.ones(3, dtype=np.float64)).float().to(device)
    _check(f.dtype == torch.float32, f"dtype {f.dtype}")


@row("torch.zeros", "creation")
def _(torch, device):
    _close(torch.zeros(2, 3, device=device), np.zeros((2, 3)))
    z = torch.zeros((4,), dtype=torch.long, device=device)
    _check(z.dtype == torch.int64, f"dtype {z.dtype}")
    _close(z, np.zeros(4))


@row("torch.ones", "creation")
def _(torch, device):
    o = torch.ones(2, 3, device=device, requires_grad=True)
    _check(o.requires_grad, "requires_grad not set")
    _backward(o * 3, o, grads=[np.full((2, 3), 3.0)])


@row("torch.zeros_like", "creation")
def _(torch, device):
    x = torch.randn(2, 3, device=device)
    z = torch.zeros_like(x)
    _shape(z, 2, 3)
    _on(z, device)
    _close(z, np.zeros((2, 3)))


@row("torch.ones_like", "creation")
def _(torch, device):
    x = torch.randn(3, device=device)
    _close(torch.ones_like(x), np.ones(3))
    _check(torch.ones_like(x, dtype=torch.int64).dtype == torch.int64, "dtype= ignored")


@row("torch.full", "creation")
def _(torch, device):
    _close(torch.full((2, 2), 7.0, device=device), np.full((2, 2), 7.0))
    _close(torch.full((3,), float("-inf"), device=device), np.full(3, -np.inf))


@row("torch.full_like", "creation")
def _(torch, device):
    x = torch.zeros(2, 3, device=device)
    _close(torch.full_like(x, 0.5), np.full((2, 3), 0.5))


@row("torch.empty", "creation")
def _(torch, device):
    e = torch.empty(3, 4, device=device)
    _shape(e, 3, 4)
    _check(e.dtype == torch.float32, f"dtype {e.dtype}")
    _on(e, device)


@row("torch.empty_like", "creation")
def _(torch, device):
    e = torch.empty_like(torch.ones(2, 5, device=device))
    _shape(e, 2, 5)


@row("torch.arange", "creation")
def _(torch, device):
    a = torch.arange(5, device=device)
    _check(a.dtype == torch.int64, f"dtype {a.dtype}")
    _close(a, np.arange(5))
    _close(torch.arange(0, 1, 0.25, device=device), np.arange(0, 1, 0.25))
    _close(torch.arange(10, 0, -3, device=device), [10, 7, 4, 1])


@row("torch.linspace", "creation")
def _(torch, device):
    _close(torch.linspace(0, 1, steps=5, device=device), np.linspace(0, 1, 5))
    _close(torch.linspace(-3, 3, 7, device=device), np.linspace(-3, 3, 7))


@row("torch.logspace", "creation")
def _(torch, device):
    _close(torch.logspace(-2, 0, steps=3, device=device), [0.01, 0.1, 1.0])


@row("torch.eye", "creation")
def _(torch, device):
    _close(torch.eye(3, device=device), np.eye(3))
    _close(torch.eye(2, 3, device=device), np.eye(2, 3))


@row("torch.tril", "creation")
def _(torch, device):
    mask = torch.tril(torch.ones(4, 4, device=device))
    _close(mask, np.tril(np.ones((4, 4))))
    a = _data(3, 3)
    x = _leaf(torch, device, a)
    y = torch.tril(x)
    _close(y, np.tril(a))
    _backward(y, x, grads=[np.tril(np.ones((3, 3)))])


@row("torch.triu", "creation")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    y = torch.triu(x, diagonal=1)
    _close(y, np.triu(a, 1))
    _backward(y, x, grads=[np.triu(np.ones((3, 4)), 1)])


@row("torch.meshgrid", "creation")
def _(torch, device):
    a, b = torch.arange(3, device=device), torch.arange(2, device=device)
    gx, gy = torch.meshgrid(a, b, indexing="ij")
    rx, ry = np.meshgrid(np.arange(3), np.arange(2), indexing="ij")
    _close(gx, rx)
    _close(gy, ry)
    gx, gy = torch.meshgrid(a, b, indexing="xy")
    _shape(gx, 2, 3)


@row("torch.diag", "creation")
def _(torch, device):
    _close(torch.diag(torch.tensor([1.0, 2.0, 3.0], device=device)), np.diag([1, 2, 3]))
    a = _data(3, 3)
    _close(torch.diag(_t(torch, device, a)), np.diag(a))


# ----------------------------------------------------------------------------------------------------------
# random

@row("torch.manual_seed", "random")
def _(torch, device):
    torch.manual_seed(1337)
    a = torch.randn(4, device=device)
    torch.manual_seed(1337)
    b = torch.randn(4, device=device)
    _close(a, _np(b), tol=0)


@row("torch.cuda.manual_seed", "random", devices=("cuda",))
def _(torch, device):
    torch.cuda.manual_seed(7)
    a = torch.rand(4, device=device)
    torch.cuda.manual_seed(7)
    _close(torch.rand(4, device=device), _np(a), tol=0)


@row("torch.cuda.manual_seed_all", "random", devices=("cuda",))
def _(torch, device):
    torch.cuda.manual_seed_all(7)
    a = torch.randn(4, device=device)
    torch.cuda.manual_seed_all(7)
    _close(torch.randn(4, device=device), _np(a), tol=0)


@row("torch.initial_seed", "random")
def _(torch, device):
    torch.manual_seed(42)
    _check(torch.initial_seed() == 42, f"initial_seed() = {torch.initial_seed()}")


@row("torch.get_rng_state", "random")
def _(torch, device):
    state = torch.get_rng_state()
    a = torch.rand(3).to(device)
    torch.set_rng_state(state)
    _close(torch.rand(3).to(device), _np(a), tol=0)


@row("torch.Generator", "random")
def _(torch, device):
    g = torch.Generator(device=device).manual_seed(2147483647)
    a = torch.randn(5, generator=g, device=device)
    g2 = torch.Generator(device=device).manual_seed(2147483647)
    _close(torch.randn(5, generator=g2, device=device), _np(a), tol=0)


@row("torch.rand", "random")
def _(torch, device):
    r = torch.rand(4, 8, device=device)
    _shape(r, 4, 8)
    v = _np(r)
    _check(((v >= 0) & (v < 1)).all(), "values outside [0, 1)")
    _check(len(np.unique(v)) > 16, "values repeat")


@row("torch.randn", "random")
def _(torch, device):
    r = torch.randn(64, 4, device=device)
    _shape(r, 64, 4)
    v = _np(r)
    _check(0.6 < v.std() < 1.4 and abs(v.mean()) < 0.3, f"mean {v.mean():.2f} std {v.std():.2f}")


@row("torch.randint", "random")
def _(torch, device):
    r = torch.randint(0, 10, (32,), device=device)
    _check(r.dtype == torch.int64, f"dtype {r.dtype}")
    v = _np(r)
    _check(v.min() >= 0 and v.max() < 10 and len(np.unique(v)) > 3, "values out of range or constant")
    _shape(torch.randint(5, (2, 3), device=device), 2, 3)


@row("torch.randperm", "random")
def _(torch, device):
    p = torch.randperm(10, device=device)
    _check(p.dtype == torch.int64, f"dtype {p.dtype}")
    _close(np.sort(_np(p)), np.arange(10))


@row("torch.rand_like", "random")
def _(torch, device):
    r = torch.rand_like(torch.zeros(3, 4, device=device))
    _shape(r, 3, 4)
    _check(((_np(r) >= 0) & (_np(r) < 1)).all(), "values outside [0, 1)")


@row("torch.randn_like", "random")
def _(torch, device):
    r = torch.randn_like(torch.zeros(16, 4, device=device))
    _shape(r, 16, 4)
    _check(_np(r).std() > 0.5, "not normal")


@row("torch.normal", "random")
def _(torch, device):
    r = torch.normal(torch.zeros(64, device=device), torch.ones(64, device=device) * 2)
    _shape(r, 64)
    _check(1.0 < _np(r).std() < 3.0, f"std {_np(r).std():.2f}")
    _shape(torch.normal(0.0, 1.0, size=(3, 2), device=device), 3, 2)


@row("torch.bernoulli", "random")
def _(torch, device):
    r = torch.bernoulli(torch.full((64,), 0.5, device=device))
    v = _np(r)
    _check(set(np.unique(v)) <= {0.0, 1.0} and 5 < v.sum() < 59, "not 0/1 samples")


@row("torch.multinomial", "random", note="replacement=True, makemore sampling")
def _(torch, device):
    g = torch.Generator(device=device).manual_seed(2147483647)
    p = torch.tensor([0.1, 0.0, 0.6, 0.3], device=device)
    ix = torch.multinomial(p, num_samples=20, replacement=True, generator=g)
    v = _np(ix)
    _check(ix.dtype == torch.int64 and v.min() >= 0 and v.max() <= 3 and 1 not in v, f"bad samples {v[:6]}")
    _check(torch.multinomial(p, num_samples=1, generator=g).item() in (0, 2, 3), "zero-probability class drawn")


@row("torch.multinomial", "random", note="rows of a 2-D batch, no replacement")
def _(torch, device):
    probs = torch.softmax(torch.randn(3, 5, device=device), dim=-1)
    ix = torch.multinomial(probs, num_samples=4)
    _shape(ix, 3, 4)
    _check(all(len(set(r)) == 4 for r in _np(ix).tolist()), "repeats without replacement")


@row("torch.Tensor.uniform_", "random")
def _(torch, device):
    w = torch.empty(50, device=device).uniform_(-0.1, 0.1)
    v = _np(w)
    _check(v.min() >= -0.1 and v.max() <= 0.1 and v.std() > 0.02, "not uniform in [-0.1, 0.1]")


@row("torch.Tensor.normal_", "random")
def _(torch, device):
    w = torch.empty(64, device=device).normal_(mean=0.0, std=0.02)
    _check(0.01 < _np(w).std() < 0.03, f"std {_np(w).std():.3f}")


# ----------------------------------------------------------------------------------------------------------
# joining and splitting

@row("torch.cat", "joining")
def _(torch, device):
    a, b = _data(2, 3), _data(1, 3, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    c = torch.cat([x, y], dim=0)
    _close(c, np.concatenate([a, b]))
    _close(torch.cat((x, x), dim=1), np.concatenate([a, a], 1))
    _backward(c * 2, x, y, grads=[np.full((2, 3), 2.0), np.full((1, 3), 2.0)])


@row("torch.concat", "joining")
def _(torch, device):
    a = _data(2, 2)
    _close(torch.concat([_t(torch, device, a), _t(torch, device, a)], dim=-1), np.concatenate([a, a], -1))


@row("torch.stack", "joining")
def _(torch, device):
    a, b = _data(2, 3), _data(2, 3, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    s = torch.stack([x, y])
    _close(s, np.stack([a, b]))
    _close(torch.stack([x, y], dim=1), np.stack([a, b], 1))
    _backward(s, x, y)


@row("torch.hstack", "joining")
def _(torch, device):
    a = _data(2, 3)
    _close(torch.hstack([_t(torch, device, a), _t(torch, device, a)]), np.hstack([a, a]))


@row("torch.vstack", "joining")
def _(torch, device):
    a = _data(2, 3)
    _close(torch.vstack([_t(torch, device, a), _t(torch, device, a[:1])]), np.vstack([a, a[:1]]))


@row("torch.split", "joining")
def _(torch, device):
    a = _data(2, 6)
    x = _leaf(torch, device, a)
    q, k, v = x.split(2, dim=1)
    _close(k, a[:, 2:4])
    p1, p2 = torch.split(x, [1, 5], dim=1)
    _shape(p2, 2, 5)
    _backward(q + 2 * v, x)


@row("torch.chunk", "joining")
def _(torch, device):
    a = _data(6, 2)
    x = _leaf(torch, device, a)
    parts = torch.chunk(x, 3, dim=0)
    _check(len(parts) == 3, f"{len(parts)} chunks")
    _close(parts[2], a[4:])
    _backward(parts[0] * parts[1], x)


@row("torch.unbind", "joining")
def _(torch, device):
    a = _data(3, 2)
    rows = torch.unbind(_t(torch, device, a), dim=0)
    _check(len(rows) == 3, f"{len(rows)} parts")
    _close(rows[1], a[1])


@row("torch.Tensor.repeat", "joining")
def _(torch, device):
    a = _data(2, 3)
    x = _leaf(torch, device, a)
    r = x.repeat(2, 1)
    _close(r, np.tile(a, (2, 1)))
    _backward(r, x, grads=[np.full((2, 3), 2.0)])


@row("torch.tile", "joining")
def _(torch, device):
    a = _data(2, 2)
    _close(torch.tile(_t(torch, device, a), (1, 3)), np.tile(a, (1, 3)))


@row("torch.repeat_interleave", "joining")
def _(torch, device):
    t = torch.tensor([1, 2, 3], device=device)
    _close(torch.repeat_interleave(t, 2), [1, 1, 2, 2, 3, 3])
    _close(t.repeat_interleave(torch.tensor([1, 0, 2], device=device)), [1, 3, 3])


@row("torch.roll", "joining")
def _(torch, device):
    a = _data(3, 4)
    _close(torch.roll(_t(torch, device, a), shifts=1, dims=1), np.roll(a, 1, axis=1))


@row("torch.flip", "joining")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    f = torch.flip(x, dims=[0])
    _close(f, a[::-1])
    _backward(f, x)


# ----------------------------------------------------------------------------------------------------------
# indexing

@row("torch.Tensor.__getitem__", "indexing", note="ints, slices, None, ...")
def _(torch, device):
    a = _data(3, 4, 5)
    x = _leaf(torch, device, a)
    _close(x[1], a[1])
    _close(x[:, 1:3], a[:, 1:3])
    _close(x[..., -1], a[..., -1])
    _close(x[None, :, ::2], a[None, :, ::2])
    _backward(x[:, -1, :], x)


@row("torch.Tensor.__getitem__", "indexing", note="C[X], X an integer tensor (embedding lookup)")
def _(torch, device):
    c = _data(27, 2)
    xi = np.array([[0, 5, 13], [5, 5, 26]])
    C = _leaf(torch, device, c)
    emb = C[_t(torch, device, xi)]
    _close(emb, c[xi])
    g = np.zeros((27, 2))
    np.add.at(g, xi.ravel(), 1.0)
    _backward(emb, C, grads=[g])


@row("torch.Tensor.__getitem__", "indexing", note="probs[torch.arange(n), Y], two index tensors")
def _(torch, device):
    a = _data(4, 5)
    y = np.array([1, 0, 4, 4])
    x = _leaf(torch, device, a)
    picked = x[torch.arange(4, device=device), _t(torch, device, y)]
    _close(picked, a[np.arange(4), y])
    _backward(-picked.mean(), x)


@row("torch.Tensor.__getitem__", "indexing", note="boolean mask")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    sel = x[x > 0]
    _close(sel, a[a > 0])
    _backward(sel, x, grads=[(a > 0).astype(float)])


@row("torch.Tensor.__setitem__", "indexing")
def _(torch, device):
    x = torch.zeros(3, 4, device=device)
    x[0] = 5
    x[:, 1] = torch.tensor([1.0, 2.0, 3.0], device=device)
    x[x > 4] = -1.0
    ref = np.zeros((3, 4))
    ref[0] = 5
    ref[:, 1] = [1, 2, 3]
    ref[ref > 4] = -1
    _close(x, ref)


@row("torch.Tensor.__setitem__", "indexing", note="x[idx] = v with an index tensor")
def _(torch, device):
    x = torch.zeros(5, device=device)
    x[torch.tensor([0, 3], device=device)] = torch.tensor([1.0, 2.0], device=device)
    _close(x, [1, 0, 0, 2, 0])


@row("torch.index_select", "indexing")
def _(torch, device):
    a = _data(4, 3)
    x = _leaf(torch, device, a)
    s = torch.index_select(x, 0, torch.tensor([2, 0, 2], device=device))
    _close(s, a[[2, 0, 2]])
    _backward(s, x, grads=[np.array([[1] * 3, [0] * 3, [2] * 3, [0] * 3])])


@row("torch.gather", "indexing")
def _(torch, device):
    a = _data(3, 4)
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    x = _leaf(torch, device, a)
    g = torch.gather(x, 1, _t(torch, device, idx))
    _close(g, np.take_along_axis(a, idx, 1))
    _backward(g, x)


@row("torch.Tensor.scatter_", "indexing", note="one-hot by scatter_")
def _(torch, device):
    y = torch.tensor([[2], [0], [1]], device=device)
    oh = torch.zeros(3, 4, device=device).scatter_(1, y, 1.0)
    _close(oh, np.eye(4)[[2, 0, 1]])


@row("torch.scatter", "indexing")
def _(torch, device):
    src = torch.arange(1, 7, device=device).float().view(2, 3)
    idx = torch.tensor([[0, 1, 2], [2, 0, 1]], device=device)
    out = torch.scatter(torch.zeros(2, 3, device=device), 1, idx, src)
    _close(out, [[1, 2, 3], [5, 6, 4]])


@row("torch.scatter_add", "indexing")
def _(torch, device):
    idx = torch.tensor([0, 1, 0, 1, 2], device=device)
    out = torch.zeros(3, device=device).scatter_add(0, idx, torch.ones(5, device=device))
    _close(out, [2, 2, 1])


@row("torch.Tensor.index_add_", "indexing")
def _(torch, device):
    x = torch.zeros(4, 2, device=device)
    x.index_add_(0, torch.tensor([0, 2, 0], device=device), torch.ones(3, 2, device=device))
    _close(x, [[2, 2], [0, 0], [1, 1], [0, 0]])


@row("torch.Tensor.masked_fill", "indexing", note="causal attention mask")
def _(torch, device):
    a = _data(3, 3)
    x = _leaf(torch, device, a)
    tril = torch.tril(torch.ones(3, 3, device=device))
    m = x.masked_fill(tril == 0, float("-inf"))
    ref = np.where(np.tril(np.ones((3, 3))) == 0, -np.inf, a)
    _close(m, ref)
    w = torch.softmax(m, dim=-1)
    _backward(w * _t(torch, device, a), x)


@row("torch.masked_select", "indexing")
def _(torch, device):
    a = _data(3, 4)
    x = _t(torch, device, a)
    _close(torch.masked_select(x, x > 0), a[a > 0])


@row("torch.where", "indexing", note="where(cond, a, b)")
def _(torch, device):
    a, b = _data(2, 3), _data(2, 3, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    w = torch.where(x > y, x, y)
    _close(w, np.where(a > b, a, b))
    _close(torch.where(x > 0, x, 0.0), np.where(a > 0, a, 0))
    _backward(w, x, y, grads=[(a > b).astype(float), (a <= b).astype(float)])


@row("torch.nonzero", "indexing")
def _(torch, device):
    t = torch.tensor([[0, 1], [2, 0]], device=device)
    _close(torch.nonzero(t), [[0, 1], [1, 0]])
    _close(torch.where(t > 0)[1], [1, 0])


@row("torch.take_along_dim", "indexing")
def _(torch, device):
    a = _data(3, 4)
    x = _t(torch, device, a)
    idx = torch.argsort(x, dim=1)
    _close(torch.take_along_dim(x, idx, dim=1), np.sort(a, axis=1))


# ----------------------------------------------------------------------------------------------------------
# views and shapes

@row("torch.Tensor.view", "views")
def _(torch, device):
    a = _data(2, 6)
    x = _leaf(torch, device, a)
    v = x.view(3, 4)
    _close(v, a.reshape(3, 4))
    _shape(x.view(-1), 12)
    _shape(x.view(2, 3, -1), 2, 3, 2)
    _backward(v * 2, x, grads=[np.full((2, 6), 2.0)])


@row("torch.Tensor.reshape", "views")
def _(torch, device):
    a = _data(2, 3, 4)
    x = _leaf(torch, device, a)
    r = x.transpose(0, 1).reshape(3, -1)
    _close(r, a.transpose(1, 0, 2).reshape(3, -1))
    _shape(torch.reshape(x, (4, 6)), 4, 6)
    _backward(r, x)


@row("torch.Tensor.permute", "views")
def _(torch, device):
    a = _data(2, 3, 4)
    x = _leaf(torch, device, a)
    p = x.permute(2, 0, 1)
    _close(p, a.transpose(2, 0, 1))
    _backward(p * _t(torch, device, a.transpose(2, 0, 1)), x, grads=[a])


@row("torch.Tensor.transpose", "views")
def _(torch, device):
    a = _data(2, 3, 4)
    x = _leaf(torch, device, a)
    t = x.transpose(1, 2)
    _close(t, a.transpose(0, 2, 1))
    _close(torch.transpose(x, -2, -1), a.transpose(0, 2, 1))
    _backward(t, x)


@row("torch.Tensor.t", "views")
def _(torch, device):
    a = _data(2, 3)
    x = _leaf(torch, device, a)
    _close(x.t(), a.T)
    _close(torch.t(x), a.T)
    _backward(x.t(), x)


@row("torch.Tensor.T", "views")
def _(torch, device):
    a = _data(2, 3)
    _close(_t(torch, device, a).T, a.T)


@row("torch.Tensor.unsqueeze", "views")
def _(torch, device):
    a = _data(3)
    x = _leaf(torch, device, a)
    _shape(x.unsqueeze(0), 1, 3)
    u = torch.unsqueeze(x, -1)
    _shape(u, 3, 1)
    _backward(u, x)


@row("torch.Tensor.squeeze", "views")
def _(torch, device):
    x = torch.zeros(1, 3, 1, device=device)
    _shape(x.squeeze(), 3)
    _shape(x.squeeze(0), 3, 1)
    _shape(torch.squeeze(x, -1), 1, 3)


@row("torch.Tensor.flatten", "views")
def _(torch, device):
    a = _data(2, 3, 4)
    x = _leaf(torch, device, a)
    f = torch.flatten(x, 1)
    _shape(f, 2, 12)
    _shape(x.flatten(), 24)
    _backward(f, x)


@row("torch.Tensor.contiguous", "views")
def _(torch, device):
    a = _data(3, 4)
    t = _t(torch, device, a).t()
    _check(not t.is_contiguous(), "a transpose reports contiguous")
    c = t.contiguous()
    _check(c.is_contiguous(), "contiguous() is not contiguous")
    _close(c.view(-1), a.T.ravel())


@row("torch.Tensor.expand", "views")
def _(torch, device):
    a = _data(3, 1)
    x = _leaf(torch, device, a)
    e = x.expand(3, 4)
    _close(e, np.broadcast_to(a, (3, 4)))
    _shape(x.expand(2, -1, 5), 2, 3, 5)
    _backward(e, x, grads=[np.full((3, 1), 4.0)])


@row("torch.Tensor.expand_as", "views")
def _(torch, device):
    x = torch.ones(1, 3, device=device)
    _shape(x.expand_as(torch.zeros(4, 3, device=device)), 4, 3)


@row("torch.Tensor.view_as", "views")
def _(torch, device):
    a = _data(6)
    _close(_t(torch, device, a).view_as(torch.zeros(2, 3, device=device)), a.reshape(2, 3))


@row("torch.Tensor.unflatten", "views")
def _(torch, device):
    _shape(torch.zeros(2, 12, device=device).unflatten(1, (3, 4)), 2, 3, 4)


@row("torch.Tensor.narrow", "views")
def _(torch, device):
    a = _data(4, 5)
    _close(_t(torch, device, a).narrow(1, 1, 3), a[:, 1:4])


@row("torch.movedim", "views")
def _(torch, device):
    a = _data(2, 3, 4)
    _close(torch.movedim(_t(torch, device, a), 0, -1), np.moveaxis(a, 0, -1))


# ----------------------------------------------------------------------------------------------------------
# elementwise math: unary functions (torch.f(x) and x.f(), forward against numpy, gradient against its formula)

def _erf(a):
    return np.vectorize(math.erf)(a)


def _sig(a):
    return 1 / (1 + np.exp(-a))


_UNARY = [
    # name, forward, derivative, input range
    ("abs", np.abs, np.sign, (-2, 2)),
    ("sqrt", np.sqrt, lambda a: 0.5 / np.sqrt(a), (0.5, 2)),
    ("rsqrt", lambda a: 1 / np.sqrt(a), lambda a: -0.5 * a ** -1.5, (0.5, 2)),
    ("exp", np.exp, np.exp, (-2, 2)),
    ("log", np.log, lambda a: 1 / a, (0.5, 2)),
    ("log2", np.log2, lambda a: 1 / (a * np.log(2)), (0.5, 2)),
    ("log1p", np.log1p, lambda a: 1 / (1 + a), (0, 1)),
    ("expm1", np.expm1, np.exp, (-1, 1)),
    ("sin", np.sin, np.cos, (-3, 3)),
    ("cos", np.cos, lambda a: -np.sin(a), (-3, 3)),
    ("tan", np.tan, lambda a: 1 / np.cos(a) ** 2, (-1, 1)),
    ("tanh", np.tanh, lambda a: 1 - np.tanh(a) ** 2, (-2, 2)),
    ("atan", np.arctan, lambda a: 1 / (1 + a * a), (-2, 2)),
    ("sigmoid", _sig, lambda a: _sig(a) * (1 - _sig(a)), (-3, 3)),
    ("erf", _erf, lambda a: 2 / np.sqrt(np.pi) * np.exp(-a * a), (-2, 2)),
    ("reciprocal", lambda a: 1 / a, lambda a: -1 / (a * a), (0.5, 2)),
    ("neg", np.negative, lambda a: -np.ones_like(a), (-2, 2)),
    ("square", np.square, lambda a: 2 * a, (-2, 2)),
    ("floor", np.floor, np.zeros_like, (-3, 3)),
    ("ceil", np.ceil, np.zeros_like, (-3, 3)),
    ("round", np.round, np.zeros_like, (-3, 3)),
    ("trunc", np.trunc, np.zeros_like, (-3, 3)),
    ("sign", np.sign, np.zeros_like, (-2, 2)),
]


def _unary_row(name, fwd, deriv, rng):
    def snippet(torch, device):
        a = _data(3, 4, lo=rng[0], hi=rng[1], seed=3)
        x = _leaf(torch, device, a)
        y = getattr(torch, name)(x)
        _close(y, fwd(a.astype(np.float64)), tol=2e-4)
        _close(getattr(x, name)(), fwd(a.astype(np.float64)), tol=2e-4)
        _backward(y, x, grads=[deriv(a.astype(np.float64))])
    row(f"torch.{name}", "math")(snippet)


for _u in _UNARY:
    _unary_row(*_u)


@row("torch.clamp", "math")
def _(torch, device):
    a = _data(3, 4, lo=-2, hi=2)
    x = _leaf(torch, device, a)
    c = torch.clamp(x, min=-1.0, max=0.5)
    _close(c, np.clip(a, -1, 0.5))
    _close(x.clamp(min=0), np.maximum(a, 0))
    _backward(c, x, grads=[((a > -1) & (a < 0.5)).astype(float)])


@row("torch.clamp", "math", note="tensor bounds")
def _(torch, device):
    a = _data(3, 4, lo=-2, hi=2)
    lo = _t(torch, device, np.full(4, -0.5, dtype=np.float32))
    _close(torch.clamp(_t(torch, device, a), min=lo), np.maximum(a, -0.5))


@row("torch.clip", "math")
def _(torch, device):
    a = _data(5, lo=-2, hi=2)
    _close(torch.clip(_t(torch, device, a), -1, 1), np.clip(a, -1, 1))


@row("torch.pow", "math", note="tensor exponent")
def _(torch, device):
    a, b = _data(2, 3, lo=0.5, hi=2), _data(2, 3, lo=-1, hi=2, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    p = torch.pow(x, y)
    _close(p, a.astype(np.float64) ** b)
    _close(torch.pow(x, 2), a.astype(np.float64) ** 2)
    _backward(p, x, y, grads=[b * a.astype(np.float64) ** (b - 1), a.astype(np.float64) ** b * np.log(a)])


def _binary_row(name, ref, grad=True, lo=-2.0, hi=2.0, blo=None, bhi=None, note=""):
    def snippet(torch, device):
        a = _data(2, 3, lo=lo, hi=hi)
        b = _data(3, lo=lo if blo is None else blo, hi=hi if bhi is None else bhi, seed=1)
        x, y = _leaf(torch, device, a), _leaf(torch, device, b)
        out = getattr(torch, name)(x, y)
        _close(out, ref(a.astype(np.float64), b.astype(np.float64)), tol=2e-4)
        _close(getattr(x, name)(y), ref(a.astype(np.float64), b.astype(np.float64)), tol=2e-4)
        if grad:
            _backward(out, x, y)
    row(f"torch.{name}", "math", note=note)(snippet)


_binary_row("add", np.add)
_binary_row("sub", np.subtract)
_binary_row("mul", np.multiply)
_binary_row("div", np.divide, blo=0.5, bhi=2.0)
_binary_row("maximum", np.maximum)
_binary_row("minimum", np.minimum)
_binary_row("max", np.maximum, note="elementwise max(a, b)")
_binary_row("atan2", np.arctan2)
_binary_row("fmod", np.fmod, grad=False, blo=0.5, bhi=2.0)
_binary_row("remainder", np.remainder, grad=False, blo=0.5, bhi=2.0)


@row("torch.floor_divide", "math")
def _(torch, device):
    a = torch.tensor([7, -7, 9], device=device)
    _close(torch.floor_divide(a, 2), [3, -4, 4])
    _close(a // torch.tensor([2, 2, 4], device=device), [3, -4, 2])


@row("torch.lerp", "math")
def _(torch, device):
    a, b = _data(4), _data(4, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    out = torch.lerp(x, y, 0.3)
    _close(out, a + 0.3 * (b - a))
    _backward(out, x, y, grads=[np.full(4, 0.7), np.full(4, 0.3)])


@row("torch.addcmul", "math")
def _(torch, device):
    a, b, c = _data(4), _data(4, seed=1), _data(4, seed=2)
    out = torch.addcmul(_t(torch, device, a), _t(torch, device, b), _t(torch, device, c), value=0.5)
    _close(out, a + 0.5 * b * c)


# ----------------------------------------------------------------------------------------------------------
# Python operators on tensors

@row("torch.Tensor.__add__", "operators", note="a + b with broadcasting, scalars on either side")
def _(torch, device):
    a, b = _data(2, 3), _data(3, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    s = x + y + 1
    _close(s, a + b + 1)
    _close(2.5 + x, 2.5 + a)
    _backward(s, x, y, grads=[np.ones((2, 3)), np.full(3, 2.0)])


@row("torch.Tensor.__sub__", "operators", note="a - b, 1 - a")
def _(torch, device):
    a, b = _data(2, 3), _data(2, 1, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    d = x - y
    _close(d, a - b)
    _close(1 - x, 1 - a)
    _backward(d, x, y, grads=[np.ones((2, 3)), np.full((2, 1), -3.0)])


@row("torch.Tensor.__mul__", "operators", note="a * b, 0.5 * a")
def _(torch, device):
    a, b = _data(2, 3), _data(2, 3, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    m = x * y * 2
    _close(m, a * b * 2)
    _close(0.5 * x, 0.5 * a)
    _backward(m, x, y, grads=[2 * b, 2 * a])


@row("torch.Tensor.__truediv__", "operators", note="a / b, a / 2, 1 / a")
def _(torch, device):
    a, b = _data(2, 3, lo=0.5, hi=2), _data(2, 3, lo=0.5, hi=2, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    q = x / y
    _close(q, a / b)
    _close(x / 2, a / 2)
    _close(1 / x, 1 / a)
    _backward(q, x, y, grads=[1 / b, -a / (b.astype(np.float64) ** 2)])


@row("torch.Tensor.__truediv__", "operators", note="int / int gives float")
def _(torch, device):
    q = torch.tensor([1, 2, 3], device=device) / 2
    _check(q.dtype == torch.float32, f"dtype {q.dtype}")
    _close(q, [0.5, 1, 1.5])


@row("torch.Tensor.__pow__", "operators", note="a ** 2, a ** 0.5")
def _(torch, device):
    a = _data(2, 3, lo=0.5, hi=2)
    x = _leaf(torch, device, a)
    p = x ** 2
    _close(p, a.astype(np.float64) ** 2)
    _close(x ** 0.5, np.sqrt(a))
    _backward(p, x, grads=[2 * a])


@row("torch.Tensor.__rpow__", "operators", note="10 ** t")
def _(torch, device):
    a = _data(4, lo=-2, hi=1)
    x = _leaf(torch, device, a)
    p = 10 ** x
    _close(p, 10.0 ** a.astype(np.float64), tol=1e-3)
    _backward(p, x, grads=[10.0 ** a.astype(np.float64) * np.log(10)])


@row("torch.Tensor.__neg__", "operators")
def _(torch, device):
    a = _data(3)
    x = _leaf(torch, device, a)
    _close(-x, -a)
    _backward(-x, x, grads=[-np.ones(3)])


@row("torch.Tensor.__mod__", "operators")
def _(torch, device):
    _close(torch.tensor([5, -3, 8], device=device) % 3, [2, 0, 2])


@row("torch.Tensor.__iadd__", "operators", note="x += y, x *= 2 in place")
def _(torch, device):
    x = torch.zeros(3, device=device)
    ref = x
    x += torch.ones(3, device=device)
    x *= 4
    x -= 1
    x /= 3
    _check(ref is x, "in-place operator made a new tensor")
    _close(x, [1, 1, 1])


@row("torch.Tensor.__and__", "operators", note="mask & mask, ~mask, mask | mask")
def _(torch, device):
    a = torch.tensor([1, 2, 3, 4], device=device)
    _close((a > 1) & (a < 4), [0, 1, 1, 0])
    _close((a < 2) | (a > 3), [1, 0, 0, 1])
    _close(~(a > 2), [1, 1, 0, 0])


# ----------------------------------------------------------------------------------------------------------
# reductions

@row("torch.sum", "reductions")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    _close(x.sum(), a.sum())
    _close(torch.sum(x, dim=0), a.sum(0))
    s = x.sum(1, keepdim=True)
    _close(s, a.sum(1, keepdims=True))
    _close(x.sum(dim=(0, 1)), a.sum())
    _backward(s * 2, x, grads=[np.full((3, 4), 2.0)])


@row("torch.mean", "reductions")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    m = x.mean(dim=-1, keepdim=True)
    _close(m, a.mean(-1, keepdims=True))
    _close(torch.mean(x), a.mean())
    _backward(m, x, grads=[np.full((3, 4), 0.25)])


@row("torch.prod", "reductions")
def _(torch, device):
    a = _data(2, 3, lo=0.5, hi=2)
    x = _leaf(torch, device, a)
    p = torch.prod(x, dim=1)
    _close(p, a.prod(1))
    _backward(p, x, grads=[a.prod(1, keepdims=True) / a])


@row("torch.var", "reductions")
def _(torch, device):
    a = _data(3, 5)
    x = _leaf(torch, device, a)
    v = x.var(dim=1)
    _close(v, a.var(1, ddof=1))
    _close(torch.var(x, dim=0, unbiased=False), a.var(0))
    _close(x.var(1, keepdim=True, correction=0), a.var(1, keepdims=True))
    _backward(v, x)


@row("torch.std", "reductions")
def _(torch, device):
    a = _data(3, 5)
    x = _leaf(torch, device, a)
    s = x.std(0)
    _close(s, a.std(0, ddof=1))
    _close(torch.std(x), a.std(ddof=1))
    _backward(s, x)


@row("torch.norm", "reductions")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    n = x.norm(dim=1)
    _close(n, np.linalg.norm(a, axis=1))
    _close(torch.norm(x), np.linalg.norm(a))
    _backward(n, x, grads=[a / np.linalg.norm(a, axis=1, keepdims=True)])


@row("torch.logsumexp", "reductions")
def _(torch, device):
    a = _data(3, 4, lo=-3, hi=3)
    x = _leaf(torch, device, a)
    lse = torch.logsumexp(x, dim=1)
    _close(lse, np.log(np.exp(a.astype(np.float64)).sum(1)))
    _backward(lse, x, grads=[_softmax(a.astype(np.float64))])


@row("torch.amax", "reductions")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    m = torch.amax(x, dim=1)
    _close(m, a.max(1))
    _close(torch.amin(x, dim=(0, 1)), a.min())
    _backward(m, x)


@row("torch.max", "reductions", note="max(x) and max(x, dim) -> (values, indices)")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    _close(torch.max(x), a.max())
    values, indices = torch.max(x, dim=1)
    _close(values, a.max(1))
    _close(indices, a.argmax(1))
    r = x.max(0, keepdim=True)
    _close(r.values, a.max(0, keepdims=True))
    _close(r.indices, a.argmax(0)[None])
    _backward(values, x, grads=[np.eye(4)[a.argmax(1)]])


@row("torch.min", "reductions")
def _(torch, device):
    a = _data(3, 4)
    x = _leaf(torch, device, a)
    v, i = x.min(dim=-1)
    _close(v, a.min(-1))
    _close(i, a.argmin(-1))
    _backward(v, x)


@row("torch.argmax", "reductions")
def _(torch, device):
    a = _data(3, 4)
    x = _t(torch, device, a)
    i = torch.argmax(x, dim=1)
    _check(i.dtype == torch.int64, f"dtype {i.dtype}")
    _close(i, a.argmax(1))
    _check(x.argmax().item() == int(a.argmax()), "flat argmax")
    _close(x.argmax(dim=1, keepdim=True), a.argmax(1)[:, None])


@row("torch.argmax", "reductions", note="axis= alias")
def _(torch, device):
    a = _data(3, 4)
    _close(_t(torch, device, a).argmax(axis=1), a.argmax(1))
    _close(torch.sum(_t(torch, device, a), axis=0), a.sum(0))


@row("torch.argmin", "reductions")
def _(torch, device):
    a = _data(3, 4)
    _close(torch.argmin(_t(torch, device, a), dim=0), a.argmin(0))


@row("torch.cumsum", "reductions")
def _(torch, device):
    a = _data(2, 4)
    x = _leaf(torch, device, a)
    c = torch.cumsum(x, dim=1)
    _close(c, a.cumsum(1))
    _backward(c, x, grads=[np.tile([4.0, 3, 2, 1], (2, 1))])


@row("torch.cumprod", "reductions")
def _(torch, device):
    a = _data(2, 3, lo=0.5, hi=2)
    x = _leaf(torch, device, a)
    c = x.cumprod(dim=1)
    _close(c, a.cumprod(1))
    _backward(c, x)


@row("torch.all", "reductions")
def _(torch, device):
    t = torch.tensor([[True, False], [True, True]], device=device)
    _check(not torch.all(t).item(), "all() of a False")
    _close(t.all(dim=1), [0, 1])
    _check(bool((torch.ones(3, device=device) > 0).all()), "all of true")


@row("torch.any", "reductions")
def _(torch, device):
    t = torch.tensor([[False, False], [True, False]], device=device)
    _check(torch.any(t).item(), "any() missed a True")
    _close(t.any(dim=1), [0, 1])


@row("torch.median", "reductions")
def _(torch, device):
    a = _data(3, 5)
    x = _t(torch, device, a)
    _close(torch.median(x), np.sort(a.ravel())[(a.size - 1) // 2])
    _close(x.median(dim=1).values, np.median(a, 1))


@row("torch.topk", "reductions")
def _(torch, device):
    a = _data(3, 5)
    x = _leaf(torch, device, a)
    v, i = torch.topk(x, 2, dim=-1)
    _close(v, -np.sort(-a, 1)[:, :2])
    _close(i, np.argsort(-a, 1)[:, :2])
    _backward(v, x)


@row("torch.sort", "reductions")
def _(torch, device):
    a = _data(3, 5)
    x = _leaf(torch, device, a)
    v, i = torch.sort(x, dim=1, descending=True)
    _close(v, -np.sort(-a, 1))
    _close(i, np.argsort(-a, 1))
    _backward(v, x)


@row("torch.argsort", "reductions")
def _(torch, device):
    a = _data(4, 3)
    _close(torch.argsort(_t(torch, device, a), dim=0), np.argsort(a, 0))


@row("torch.unique", "reductions")
def _(torch, device):
    t = torch.tensor([3, 1, 3, 2, 1], device=device)
    _close(torch.unique(t), [1, 2, 3])
    u, counts = t.unique(return_counts=True)
    _close(counts, [2, 1, 2])


@row("torch.bincount", "reductions")
def _(torch, device):
    _close(torch.bincount(torch.tensor([0, 2, 2, 3], device=device)), [1, 0, 2, 1])


@row("torch.count_nonzero", "reductions")
def _(torch, device):
    _check(torch.count_nonzero(torch.tensor([0, 1, 2, 0], device=device)).item() == 2, "count")


# ----------------------------------------------------------------------------------------------------------
# comparisons and logical

def _cmp_row(name, op, ref):
    def snippet(torch, device):
        a, b = _data(2, 3), _data(2, 3, seed=1)
        b[0, 0] = a[0, 0]
        x, y = _t(torch, device, a), _t(torch, device, b)
        r = getattr(torch, name)(x, y)
        _check(r.dtype == torch.bool, f"dtype {r.dtype}")
        _close(r, ref(a, b))
        _close(op(x, y), ref(a, b))
        _close(op(x, 0.0), ref(a, 0.0))
    row(f"torch.{name}", "comparison")(snippet)


_cmp_row("eq", lambda x, y: x == y, np.equal)
_cmp_row("ne", lambda x, y: x != y, np.not_equal)
_cmp_row("gt", lambda x, y: x > y, np.greater)
_cmp_row("ge", lambda x, y: x >= y, np.greater_equal)
_cmp_row("lt", lambda x, y: x < y, np.less)
_cmp_row("le", lambda x, y: x <= y, np.less_equal)


@row("torch.Tensor.__eq__", "comparison", note="accuracy: (pred == y).float().mean().item()")
def _(torch, device):
    logits = _t(torch, device, _data(6, 3))
    y = torch.tensor([0, 1, 2, 0, 1, 2], device=device)
    acc = (logits.argmax(dim=1) == y).float().mean().item()
    _check(isinstance(acc, float), f"item() gave {type(acc)}")
    _check(abs(acc - np.mean(_data(6, 3).argmax(1) == [0, 1, 2, 0, 1, 2])) < 1e-6, f"accuracy {acc}")
    correct = (logits.argmax(1) == y).sum().item()
    _check(isinstance(correct, int), f"sum of bools .item() gave {type(correct)}")


@row("torch.isnan", "comparison")
def _(torch, device):
    t = torch.tensor([1.0, float("nan"), float("inf")], device=device)
    _close(torch.isnan(t), [0, 1, 0])
    _check(bool(t.isnan().any()), "any nan")


@row("torch.isinf", "comparison")
def _(torch, device):
    _close(torch.isinf(torch.tensor([1.0, float("-inf"), float("nan")], device=device)), [0, 1, 0])


@row("torch.isfinite", "comparison")
def _(torch, device):
    _close(torch.isfinite(torch.tensor([1.0, float("inf"), float("nan")], device=device)), [1, 0, 0])


@row("torch.logical_and", "comparison")
def _(torch, device):
    a = torch.tensor([True, True, False], device=device)
    b = torch.tensor([True, False, False], device=device)
    _close(torch.logical_and(a, b), [1, 0, 0])
    _close(torch.logical_or(a, b), [1, 1, 0])
    _close(torch.logical_not(a), [0, 0, 1])


@row("torch.allclose", "comparison")
def _(torch, device):
    a = torch.ones(3, device=device)
    _check(torch.allclose(a, a + 1e-7), "allclose of nearly equal")
    _check(not torch.allclose(a, a * 2), "allclose of different")


@row("torch.equal", "comparison")
def _(torch, device):
    a = torch.arange(4, device=device)
    _check(torch.equal(a, torch.arange(4, device=device)), "equal of equal")
    _check(not torch.equal(a, a + 1), "equal of different")


@row("torch.nan_to_num", "comparison")
def _(torch, device):
    t = torch.tensor([1.0, float("nan"), float("inf")], device=device)
    _close(torch.nan_to_num(t, nan=0.0, posinf=9.0), [1, 0, 9])


# ----------------------------------------------------------------------------------------------------------
# linear algebra

@row("torch.matmul", "linalg")
def _(torch, device):
    a, b = _data(3, 4), _data(4, 2, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    m = torch.matmul(x, y)
    _close(m, a @ b)
    _backward(m, x, y, grads=[np.ones((3, 2)) @ b.T, a.T @ np.ones((3, 2))])


@row("torch.matmul", "linalg", note="batched (B, T, C) @ (C, D) and (B, T, C) @ (B, C, T)")
def _(torch, device):
    a, b, w = _data(2, 3, 4), _data(2, 4, 3, seed=1), _data(4, 5, seed=2)
    x, y, W = _leaf(torch, device, a), _leaf(torch, device, b), _leaf(torch, device, w)
    p = x @ W
    _close(p, a @ w)
    att = x @ y
    _close(att, a @ b)
    _backward(p.sum() + att.sum(), x, y, W)


@row("torch.Tensor.__matmul__", "linalg", note="k @ q.transpose(-2, -1) * C**-0.5")
def _(torch, device):
    a, b = _data(2, 3, 4), _data(2, 3, 4, seed=1)
    q, k = _leaf(torch, device, a), _leaf(torch, device, b)
    wei = q @ k.transpose(-2, -1) * 4 ** -0.5
    _close(wei, a @ b.transpose(0, 2, 1) * 0.5)
    _backward(wei, q, k)


@row("torch.mm", "linalg")
def _(torch, device):
    a, b = _data(2, 3), _data(3, 4, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    m = torch.mm(x, y)
    _close(m, a @ b)
    _backward(m, x, y)


@row("torch.bmm", "linalg")
def _(torch, device):
    a, b = _data(2, 3, 4), _data(2, 4, 2, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    m = torch.bmm(x, y)
    _close(m, a @ b)
    _backward(m, x, y)


@row("torch.einsum", "linalg")
def _(torch, device):
    a, b = _data(2, 3, 4), _data(2, 4, 5, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    m = torch.einsum("bij,bjk->bik", x, y)
    _close(m, a @ b)
    _close(torch.einsum("bij->bj", x), a.sum(1))
    _backward(m, x, y)


@row("torch.outer", "linalg")
def _(torch, device):
    a, b = _data(3), _data(4, seed=1)
    _close(torch.outer(_t(torch, device, a), _t(torch, device, b)), np.outer(a, b))


@row("torch.dot", "linalg")
def _(torch, device):
    a, b = _data(5), _data(5, seed=1)
    x, y = _leaf(torch, device, a), _leaf(torch, device, b)
    d = torch.dot(x, y)
    _close(d, a @ b)
    _backward(d, x, y, grads=[b, a])


@row("torch.addmm", "linalg")
def _(torch, device):
    c, a, b = _data(2, 4), _data(2, 3, seed=1), _data(3, 4, seed=2)
    _close(torch.addmm(_t(torch, device, c), _t(torch, device, a), _t(torch, device, b)), c + a @ b)


@row("torch.baddbmm", "linalg")
def _(torch, device):
    c, a, b = _data(2, 3, 3), _data(2, 3, 4, seed=1), _data(2, 4, 3, seed=2)
    out = torch.baddbmm(_t(torch, device, c), _t(torch, device, a), _t(torch, device, b), alpha=0.5)
    _close(out, c + 0.5 * (a @ b))


@row("torch.linalg.norm", "linalg")
def _(torch, device):
    a = _data(3, 4)
    _close(torch.linalg.norm(_t(torch, device, a)), np.linalg.norm(a))
    _close(torch.linalg.norm(_t(torch, device, a), dim=1), np.linalg.norm(a, axis=1))


@row("torch.linalg.solve", "linalg")
def _(torch, device):
    a = _data(4, 4, seed=1) + 3 * np.eye(4, dtype=np.float32)
    b = _data(4, 2, seed=2)
    A = _leaf(torch, device, a)
    x = torch.linalg.solve(A, _t(torch, device, b))
    _close(x, np.linalg.solve(a.astype(np.float64), b))
    _backward(x, A)


@row("torch.linalg.inv", "linalg")
def _(torch, device):
    a = _data(3, 3, seed=1) + 2 * np.eye(3, dtype=np.float32)
    A = _leaf(torch, device, a)
    y = torch.linalg.inv(A)
    _close(y, np.linalg.inv(a.astype(np.float64)))
    _backward(y, A)


@row("torch.linalg.det", "linalg")
def _(torch, device):
    a = _data(3, 3, seed=3)
    A = _leaf(torch, device, a)
    d = torch.linalg.det(A)
    _close(d, np.linalg.det(a.astype(np.float64)))
    _backward(d, A, grads=[np.linalg.det(a.astype(np.float64)) * np.linalg.inv(a.astype(np.float64)).T])


@row("torch.linalg.cholesky", "linalg")
def _(torch, device):
    m = _data(4, 4, seed=4)
    spd = (m @ m.T + 4 * np.eye(4)).astype(np.float32)
    L = torch.linalg.cholesky(_t(torch, device, spd))
    _close(L, np.linalg.cholesky(spd.astype(np.float64)))


@row("torch.linalg.qr", "linalg")
def _(torch, device):
    a = _data(5, 3, seed=5)
    q, r = torch.linalg.qr(_t(torch, device, a))
    nq, nr = np.linalg.qr(a.astype(np.float64))
    _close(q, nq)
    _close(r, nr)


@row("torch.linalg.eigh", "linalg")
def _(torch, device):
    m = _data(4, 4, seed=6)
    s = (m + m.T).astype(np.float32)
    w, v = torch.linalg.eigh(_t(torch, device, s))
    _close(w, np.linalg.eigvalsh(s.astype(np.float64)))
    _close(v @ torch.diag_embed(w) @ v.mT, s)


@row("torch.linalg.svd", "linalg")
def _(torch, device):
    a = _data(5, 3, seed=7)
    u, s, vh = torch.linalg.svd(_t(torch, device, a), full_matrices=False)
    _close(s, np.linalg.svd(a.astype(np.float64), compute_uv=False))
    _close((u * s.unsqueeze(0)) @ vh, a)


@row("torch.searchsorted", "math")
def _(torch, device):
    seq = _t(torch, device, [1.0, 3.0, 5.0, 7.0])
    _close(torch.searchsorted(seq, _t(torch, device, [0.0, 3.0, 6.0, 9.0])), [0, 1, 3, 4])
    _close(torch.bucketize(_t(torch, device, [3.0, 6.0]), seq, right=True), [2, 3])


@row("torch.quantile", "reductions")
def _(torch, device):
    a = _data(3, 8, seed=8)
    x = _leaf(torch, device, a)
    q = torch.quantile(x, _t(torch, device, [0.25, 0.5]), dim=1)
    _close(q, np.quantile(a.astype(np.float64), [0.25, 0.5], axis=1))
    _backward(q, x)


@row("torch.lgamma", "math")
def _(torch, device):
    a = np.array([0.5, 1.5, 4.0, 10.0], dtype=np.float32)
    x = _leaf(torch, device, a)
    _close(torch.lgamma(x), [math.lgamma(v) for v in a.tolist()])
    _backward(torch.lgamma(x), x)


@row("torch.nn.utils.rnn.pack_padded_sequence", "nn.layers")
def _(torch, device):
    x = _leaf(torch, device, _data(5, 3, 2, seed=9))
    lstm = torch.nn.LSTM(2, 4).to(device)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, [5, 2, 3], enforce_sorted=False)
    out, (h, c) = lstm(packed)
    padded, lengths = torch.nn.utils.rnn.pad_packed_sequence(out)
    _shape(padded, 5, 3, 4)
    _close(lengths, [5, 2, 3])
    _backward(h, x)


@row("torch.distributions.MultivariateNormal", "utilities")
def _(torch, device):
    cov = np.array([[2.0, 0.5], [0.5, 1.0]], dtype=np.float32)
    m = torch.distributions.MultivariateNormal(_t(torch, device, [0.0, 1.0]), covariance_matrix=_t(torch, device, cov))
    v = np.array([0.3, -0.4])
    d = v - np.array([0.0, 1.0])
    ref = -0.5 * (2 * math.log(2 * math.pi) + math.log(np.linalg.det(cov)) + d @ np.linalg.solve(cov, d))
    _close(m.log_prob(_t(torch, device, v.astype(np.float32))), ref)
    _shape(m.sample((3,)), 3, 2)


@row("torch.distributions.TransformedDistribution", "utilities", note="TanhTransform")
def _(torch, device):
    loc = _leaf(torch, device, [0.2, -0.3])
    d = torch.distributions.TransformedDistribution(torch.distributions.Normal(loc, _t(torch, device, [1.0, 0.5])),
                                                    [torch.distributions.transforms.TanhTransform()])
    y = np.array([0.5, -0.9])
    u = np.arctanh(y)
    ref = -0.5 * ((u - [0.2, -0.3]) / [1.0, 0.5]) ** 2 - np.log([1.0, 0.5]) - 0.5 * math.log(2 * math.pi) \
        - np.log(1 - y ** 2)
    lp = d.log_prob(_t(torch, device, y.astype(np.float32)))
    _close(lp, ref)
    _backward(lp, loc, grads=[(u - [0.2, -0.3]) / np.array([1.0, 0.5]) ** 2])
    _check(bool((d.rsample((4,)).abs() < 1).all()), "a tanh-squashed sample outside (-1, 1)")


@row("torch.distributions.MixtureSameFamily", "utilities")
def _(torch, device):
    w, mu, sd = np.array([0.2, 0.3, 0.5]), np.array([-1.0, 0.0, 2.0]), np.array([0.5, 1.0, 2.0])
    D = torch.distributions
    m = D.MixtureSameFamily(D.Categorical(probs=_t(torch, device, w)),
                            D.Normal(_t(torch, device, mu), _t(torch, device, sd)))
    x = np.array([0.1, -1.0, 3.0])
    dens = (w * np.exp(-0.5 * ((x[:, None] - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))).sum(1)
    _close(m.log_prob(_t(torch, device, x)), np.log(dens))
    _shape(m.sample((5,)), 5)


@row("torch.distributions.StudentT", "utilities")
def _(torch, device):
    d = torch.distributions.StudentT(_t(torch, device, [3.0]), _t(torch, device, [0.5]), _t(torch, device, [2.0]))
    y = (1.2 - 0.5) / 2.0
    ref = (math.lgamma(2.0) - math.lgamma(1.5) - 0.5 * math.log(3 * math.pi) - math.log(2.0)
           - 2.0 * math.log1p(y * y / 3))
    _close(d.log_prob(_t(torch, device, [1.2])), [ref])
    _shape(d.rsample((4,)), 4, 1)


@row("torch.distributions.Binomial", "utilities")
def _(torch, device):
    d = torch.distributions.Binomial(_t(torch, device, [5.0, 9.0]), probs=_t(torch, device, [0.2, 0.9]))
    ref = [math.log(math.comb(5, 2) * 0.2 ** 2 * 0.8 ** 3), math.log(math.comb(9, 7) * 0.9 ** 7 * 0.1 ** 2)]
    _close(d.log_prob(_t(torch, device, [2.0, 7.0])), ref)
    s = _np(d.sample((50,)))
    _check(((s >= 0) & (s <= [5, 9]) & (s == np.round(s))).all(), "a Binomial sample outside its support")


@row("torch.linalg.matrix_exp", "linalg")
def _(torch, device):
    _close(torch.linalg.matrix_exp(_t(torch, device, [[0.0, 1.0], [-1.0, 0.0]])),
           [[math.cos(1), math.sin(1)], [-math.sin(1), math.cos(1)]])


@row("torch.special.gammainc", "math")
def _(torch, device):
    x = np.array([0.3, 1.0, 4.0])
    _close(torch.special.gammainc(_t(torch, device, [1.0, 1.0, 1.0]), _t(torch, device, x)), -np.expm1(-x))


@row("torch.asinh", "math")
def _(torch, device):
    x = _leaf(torch, device, [0.5, -2.0, 3.0])
    y = torch.asinh(x)
    _close(y, np.arcsinh([0.5, -2.0, 3.0]))
    _backward(y, x, grads=[1 / np.sqrt(np.array([0.5, -2.0, 3.0]) ** 2 + 1)])


@row("torch.hann_window", "creation")
def _(torch, device):
    _close(torch.hann_window(8, device=device), np.hanning(9)[:8])


@row("torch.profiler.profile", "utilities")
def _(torch, device):
    P = torch.profiler
    lin = torch.nn.Linear(4, 3).to(device)
    with P.profile(activities=[P.ProfilerActivity.CPU]) as prof:
        with P.record_function("forward"):
            lin(_t(torch, device, _data(2, 4)))
    keys = [e.key for e in prof.key_averages()]
    _check("forward" in keys, f"no record_function row in {keys[:5]}")
    _check("Self CPU" in prof.key_averages().table(), "no table")


@row("torch.nn.LazyConv2d", "nn.layers")
def _(torch, device):
    m = torch.nn.LazyConv2d(4, 3, padding=1)
    y = m(_t(torch, device, _data(2, 5, 6, 6)))
    _shape(y, 2, 4, 6, 6)
    _shape(m.weight, 4, 5, 3, 3)


@row("torch.nn.ZeroPad3d", "nn.layers")
def _(torch, device):
    x = _data(1, 2, 2, 3, 4)
    _close(torch.nn.ZeroPad3d((1, 0, 0, 1, 1, 0))(_t(torch, device, x)),
           np.pad(x, [(0, 0), (0, 0), (1, 0), (0, 1), (1, 0)]))


@row("torch.nn.DataParallel", "nn.module")
def _(torch, device):
    net = torch.nn.Linear(3, 2)
    dp = torch.nn.DataParallel(net)
    _check(list(dp.state_dict())[0] == "module.weight", f"keys {list(dp.state_dict())}")
    _shape(dp(_t(torch, device, _data(4, 3))), 4, 2)


@row("torch.nn.Module.get_extra_state", "nn.module")
def _(torch, device):
    class Counted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.n = 0

        def get_extra_state(self):
            return {"n": self.n}

        def set_extra_state(self, state):
            self.n = state["n"]
    a, b = Counted(), Counted()
    a.n = 7
    b.load_state_dict(a.state_dict())
    _check(b.n == 7 and "_extra_state" in a.state_dict(), "extra state not carried")


@row("torch.utils.data.DistributedSampler", "utils.data")
def _(torch, device):
    s = torch.utils.data.DistributedSampler(list(range(10)), num_replicas=4, rank=1, shuffle=False)
    _check(list(s) == [1, 5, 9], f"{list(s)}")


@row("torch.testing.assert_close", "utilities")
def _(torch, device):
    torch.testing.assert_close(_t(torch, device, [1.0, 2.0]), _t(torch, device, [1.0, 2.0 + 1e-7]))
    try:
        torch.testing.assert_close(_t(torch, device, [1.0]), _t(torch, device, [1.5]))
    except AssertionError as e:
        _check("not close" in str(e), str(e))
    else:
        raise CheckFailed("assert_close passed on different values")


@row("torch.func.vmap", "autograd", "per-sample gradients with grad and functional_call")
def _(torch, device):
    model = torch.nn.Linear(3, 2).to(device)
    x, y = _t(torch, device, _data(4, 3, seed=11)), _t(torch, device, [0, 1, 1, 0])
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(model, p, (xi.unsqueeze(0),)),
                                                 yi.unsqueeze(0))
    g = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    _shape(g["weight"], 4, 2, 3)
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(x[:1]), y[:1]).backward()
    _close(g["weight"][0], _np(model.weight.grad))


@row("torch.autograd.gradcheck", "autograd")
def _(torch, device):
    x = torch.tensor(_data(4, seed=12).tolist(), dtype=torch.float64, requires_grad=True)
    _check(torch.autograd.gradcheck(torch.sin, (x,)), "gradcheck returned False")


@row("torch.cuda.Event", "dtype-device", "timing with elapsed_time", devices=("cuda",))
def _(torch, device):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    x = _t(torch, device, _data(32, 32, seed=13))
    start.record()
    y = x @ x
    end.record()
    torch.cuda.synchronize()
    _check(start.elapsed_time(end) >= 0, "negative elapsed time")
    _shape(y, 32, 32)


@row("torch.nn.Conv3d", "nn.layers")
def _(torch, device):
    m = torch.nn.Conv3d(2, 3, 3, padding=1).to(device)
    x = _leaf(torch, device, _data(1, 2, 4, 5, 5, seed=14))
    y = m(x)
    _shape(y, 1, 3, 4, 5, 5)
    _backward(y, x)


@row("torch.nn.functional.grid_sample", "nn.functional")
def _(torch, device):
    x = _leaf(torch, device, _data(1, 1, 4, 4, seed=15))
    theta = _t(torch, device, [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    grid = torch.nn.functional.affine_grid(theta, (1, 1, 4, 4), align_corners=False)
    y = torch.nn.functional.grid_sample(x, grid, align_corners=False)
    _close(y, _data(1, 1, 4, 4, seed=15))                  # the identity transform reads every pixel back
    _backward(y, x)


@row("torch.nn.CTCLoss", "nn.losses")
def _(torch, device):
    lp = _leaf(torch, device, _data(6, 2, 4, seed=16))
    loss = torch.nn.CTCLoss()(lp.log_softmax(2), _t(torch, device, [[1, 2], [3, 0]]), [6, 5], [2, 1])
    _check(math.isfinite(loss.item()), f"loss {loss.item()}")
    _backward(loss, lp)


@row("torch.nn.utils.parametrizations.weight_norm", "nn.module")
def _(torch, device):
    m = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 4)).to(device)
    _check(sorted(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                      "parametrizations.weight.original1"], str(sorted(m.state_dict())))
    y = m(_t(torch, device, _data(2, 3, seed=17)))
    y.sum().backward()
    _check(m.parametrizations.weight.original0.grad is not None, "no gradient for g")


@row("torch.optim.Rprop", "optim")
def _(torch, device):
    w = _leaf(torch, device, _data(3, seed=18))
    opt = torch.optim.Rprop([w], lr=0.1)
    before = (w.detach() ** 2).sum().item()
    for _ in range(5):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
    _check((w.detach() ** 2).sum().item() < before, "Rprop did not decrease the loss")


@row("torch.optim.swa_utils.AveragedModel", "optim")
def _(torch, device):
    m = torch.nn.Linear(2, 2).to(device)
    swa = torch.optim.swa_utils.AveragedModel(m)
    w0 = _np(m.weight)
    with torch.no_grad():
        m.weight.add_(1.0)
    swa.update_parameters(m)
    with torch.no_grad():
        m.weight.add_(1.0)
    swa.update_parameters(m)
    _close(swa.module.weight, w0 + 1.5)


# ----------------------------------------------------------------------------------------------------------
# dtypes and devices

@row("torch.device", "dtype-device")
def _(torch, device):
    d = torch.device(device)
    _check(d.type == device, f"type {d.type}")
    x = torch.zeros(2, device=d)
    _check(x.device.type == device, f"tensor on {x.device}")


@row("torch.cuda.is_available", "dtype-device")
def _(torch, device):
    ok = torch.cuda.is_available()
    _check(isinstance(ok, bool), f"returned {type(ok)}")
    dev = torch.device("cuda" if ok else "cpu")
    _check(dev.type in ("cuda", "cpu"), "device from availability")


@row("torch.cuda.device_count", "dtype-device", devices=("cuda",))
def _(torch, device):
    _check(torch.cuda.device_count() >= 1, f"device_count() = {torch.cuda.device_count()}")


@row("torch.cuda.synchronize", "dtype-device", devices=("cuda",))
def _(torch, device):
    x = torch.randn(8, device=device) * 2
    torch.cuda.synchronize()
    _shape(x, 8)


@row("torch.cuda.memory_allocated", "dtype-device", devices=("cuda",))
def _(torch, device):
    before = torch.cuda.memory_allocated()
    x = torch.zeros(1024, device=device)
    _check(torch.cuda.memory_allocated() >= before + 4096, "allocation not counted")
    del x


@row("torch.Tensor.to", "dtype-device", note="to(device), to(torch.device), model inputs")
def _(torch, device):
    x = torch.randn(2, 3)
    y = x.to(device)
    _on(y, device)
    _close(y, _np(x))
    _on(x.to(torch.device(device)), device)
    _check(y.to(device) is y, "to() the same device copies")


@row("torch.Tensor.to", "dtype-device", note="to(dtype), to(device, dtype)")
def _(torch, device):
    x = torch.tensor([1.5, 2.5], device=device)
    _check(x.to(torch.float16).dtype == torch.float16, "to(float16)")
    i = x.to(device, torch.int64)
    _check(i.dtype == torch.int64, f"dtype {i.dtype}")
    _close(i, [1, 2])
    _check(x.to(device=device, dtype=torch.float64).dtype == torch.float64, "to(device=, dtype=)")


@row("torch.Tensor.cuda", "dtype-device", devices=("cuda",))
def _(torch, device):
    x = torch.arange(4).float()
    y = x.cuda()
    _check(y.is_cuda, "not on cuda")
    _close(y * 2, [0, 2, 4, 6])


@row("torch.Tensor.cpu", "dtype-device", devices=("cuda",))
def _(torch, device):
    y = torch.ones(3, device=device) * 3
    c = y.cpu()
    _check(not c.is_cuda and c.device.type == "cpu", f"on {c.device}")
    _close(c, [3, 3, 3])


def _cast_row(method, dtype_name, values, ref):
    def snippet(torch, device):
        x = torch.tensor(values, device=device)
        y = getattr(x, method)()
        _check(y.dtype == getattr(torch, dtype_name), f"dtype {y.dtype}")
        _close(y, ref, tol=1e-2)
    row(f"torch.Tensor.{method}", "dtype-device")(snippet)


_cast_row("float", "float32", [1, 2, 3], [1, 2, 3])
_cast_row("double", "float64", [1.5, 2.0], [1.5, 2.0])
_cast_row("long", "int64", [1.7, -2.7], [1, -2])
_cast_row("int", "int32", [1.7, 2.0], [1, 2])
_cast_row("half", "float16", [1.5, 2.25], [1.5, 2.25])
_cast_row("bfloat16", "bfloat16", [1.5, 2.0], [1.5, 2.0])
_cast_row("bool", "bool", [0.0, 2.0], [0, 1])


@row("torch.float16", "dtype-device", note="half-precision arithmetic and matmul")
def _(torch, device):
    a, b = _data(4, 8), _data(8, 3, seed=1)
    x, y = _t(torch, device, a).half(), _t(torch, device, b).half()
    m = (x @ y) * 2 + 1
    _check(m.dtype == torch.float16, f"dtype {m.dtype}")
    _close(m.float(), (a @ b) * 2 + 1, tol=2e-2)


@row("torch.Tensor.__add__", "dtype-device", note="type promotion: int64 + float, int32 + int64")
def _(torch, device):
    i = torch.arange(3, device=device)
    f = i + 0.5
    _check(f.dtype == torch.float32, f"int64 + 0.5 gives {f.dtype}")
    _check((i + torch.ones(3, device=device)).dtype == torch.float32, "int64 + float32 tensor")
    _check((i.int() + i).dtype == torch.int64, "int32 + int64")
    _check((i * 2).dtype == torch.int64, "int64 * 2")


@row("torch.get_default_dtype", "dtype-device")
def _(torch, device):
    _check(torch.get_default_dtype() == torch.float32, f"{torch.get_default_dtype()}")
    torch.set_default_dtype(torch.float64)
    try:
        _check(torch.tensor([1.0], device=device).dtype == torch.float64, "set_default_dtype ignored")
    finally:
        torch.set_default_dtype(torch.float32)


@row("torch.finfo", "dtype-device")
def _(torch, device):
    _check(abs(torch.finfo(torch.float32).eps - 1.1920929e-07) < 1e-12, "eps")
    _check(torch.finfo(torch.float16).max == 65504.0, "float16 max")


@row("torch.iinfo", "dtype-device")
def _(torch, device):
    _check(torch.iinfo(torch.int64).max == 2 ** 63 - 1, "int64 max")


@row("torch.Tensor.is_floating_point", "dtype-device")
def _(torch, device):
    _check(torch.zeros(1, device=device).is_floating_point(), "float")
    _check(not torch.zeros(1, dtype=torch.int64, device=device).is_floating_point(), "int")


# ----------------------------------------------------------------------------------------------------------
# Tensor methods and properties

@row("torch.Tensor.item", "tensor")
def _(torch, device):
    x = torch.tensor([[2.5]], device=device)
    v = x.item()
    _check(isinstance(v, float) and v == 2.5, f"item() = {v!r}")
    _check(torch.tensor(3, device=device).item() == 3, "int item")


@row("torch.Tensor.tolist", "tensor")
def _(torch, device):
    _check(torch.tensor([[1, 2], [3, 4]], device=device).tolist() == [[1, 2], [3, 4]], "tolist")


@row("torch.Tensor.numpy", "tensor")
def _(torch, device):
    x = torch.arange(6, device=device).view(2, 3)
    a = x.cpu().numpy()
    _check(isinstance(a, np.ndarray) and a.shape == (2, 3), "not an array")
    w = torch.ones(3, device=device, requires_grad=True) * 2
    _check(np.allclose(w.detach().cpu().numpy(), 2), "detach().cpu().numpy()")


@row("torch.Tensor.__format__", "tensor", note='f"{loss:.4f}" and f"{loss.item():.4f}"')
def _(torch, device):
    loss = torch.tensor(1.23456, device=device)
    _check(f"{loss:.4f}" == "1.2346", f"got {loss:.4f}")
    _check(f"{loss.item():.3f}" == "1.235", "item format")


@row("torch.Tensor.__repr__", "tensor", note="print(x)")
def _(torch, device):
    s = str(torch.tensor([1.0, 2.0], device=device))
    _check(s.startswith("tensor([1., 2.]"), f"str gives {s!r}")
    _check(repr(torch.tensor(3))[:9] == "tensor(3)", "0-d repr")


@row("torch.Tensor.__len__", "tensor", note="len(x), for row in x")
def _(torch, device):
    x = torch.arange(6, device=device).view(3, 2)
    _check(len(x) == 3, f"len {len(x)}")
    rows = [r for r in x]
    _check(len(rows) == 3 and rows[1].tolist() == [2, 3], "iteration")


@row("torch.Tensor.__float__", "tensor", note="float(t), int(t), bool(t)")
def _(torch, device):
    t = torch.tensor(2.5, device=device)
    _check(float(t) == 2.5 and int(t) == 2, "float()/int()")
    _check(bool(t > 1), "bool()")
    if t > 1:
        pass


@row("torch.Tensor.shape", "tensor", note="shape, size(), dim(), ndim, numel()")
def _(torch, device):
    x = torch.zeros(2, 3, 4, device=device)
    B, T, C = x.shape
    _check((B, T, C) == (2, 3, 4), "unpack shape")
    _check(x.size() == (2, 3, 4) and x.size(-1) == 4 and x.shape[1] == 3, "size()")
    _check(x.dim() == 3 and x.ndim == 3 and x.numel() == 24, "dim/ndim/numel")


@row("torch.Tensor.dtype", "tensor", note="dtype, device, is_cuda")
def _(torch, device):
    x = torch.zeros(2, device=device)
    _check(x.dtype == torch.float32, f"dtype {x.dtype}")
    _check(x.device.type == device and x.is_cuda == (device == "cuda"), "device")


@row("torch.Tensor.clone", "tensor")
def _(torch, device):
    a = _data(3)
    x = _leaf(torch, device, a)
    c = x.clone()
    _close(c, a)
    _backward(c * 3, x, grads=[np.full(3, 3.0)])


@row("torch.Tensor.copy_", "tensor")
def _(torch, device):
    dst = torch.zeros(2, 3, device=device)
    dst.copy_(torch.arange(6).float().view(2, 3))
    _close(dst, np.arange(6).reshape(2, 3))


@row("torch.Tensor.fill_", "tensor")
def _(torch, device):
    x = torch.empty(3, device=device)
    x.fill_(4.0)
    _close(x, [4, 4, 4])


@row("torch.Tensor.zero_", "tensor")
def _(torch, device):
    x = torch.ones(3, device=device)
    x.zero_()
    _close(x, [0, 0, 0])


@row("torch.Tensor.add_", "tensor", note="add_(t, alpha=), mul_, sub_, div_")
def _(torch, device):
    x = torch.ones(3, device=device)
    x.add_(torch.ones(3, device=device), alpha=2).mul_(2).sub_(1).div_(5)
    _close(x, [1, 1, 1])


@row("torch.Tensor.clamp_", "tensor")
def _(torch, device):
    x = torch.tensor([-2.0, 0.5, 3.0], device=device)
    x.clamp_(-1, 1)
    _close(x, [-1, 0.5, 1])


@row("torch.Tensor.masked_fill_", "tensor")
def _(torch, device):
    x = torch.zeros(4, device=device)
    x.masked_fill_(torch.tensor([True, False, True, False], device=device), 2.0)
    _close(x, [2, 0, 2, 0])


@row("torch.Tensor.data", "tensor", note="p.data += -lr * p.grad (makemore)")
def _(torch, device):
    p = torch.ones(3, device=device, requires_grad=True)
    (p * p).sum().backward()
    p.data += -0.1 * p.grad
    _close(p, [0.8, 0.8, 0.8])
    _check(p.requires_grad and p.is_leaf, "p lost requires_grad")


@row("torch.Tensor.type_as", "tensor")
def _(torch, device):
    x = torch.tensor([1, 2], device=device)
    _check(x.type_as(torch.zeros(1, device=device)).dtype == torch.float32, "type_as")


# ----------------------------------------------------------------------------------------------------------
# autograd

@row("torch.Tensor.backward", "autograd")
def _(torch, device):
    a = _data(3)
    x = _leaf(torch, device, a)
    loss = (x * x).sum()
    loss.backward()
    _close(x.grad, 2 * a)


@row("torch.Tensor.backward", "autograd", note="gradient= for a non-scalar output")
def _(torch, device):
    x = _leaf(torch, device, _data(3))
    y = x * 2
    y.backward(torch.ones_like(y))
    _close(x.grad, [2, 2, 2])


@row("torch.Tensor.backward", "autograd", note="retain_graph=True, gradients accumulate")
def _(torch, device):
    x = _leaf(torch, device, [1.0, 2.0])
    loss = (x ** 2).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    _close(x.grad, [4, 8])


@row("torch.Tensor.grad", "autograd", note="p.grad = None, grad accumulates across steps")
def _(torch, device):
    x = _leaf(torch, device, [1.0, 2.0])
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    _close(x.grad, [6, 6])
    x.grad = None
    (x * 1).sum().backward()
    _close(x.grad, [1, 1])


@row("torch.Tensor.requires_grad_", "autograd")
def _(torch, device):
    x = torch.zeros(3, device=device).requires_grad_()
    _check(x.requires_grad and x.is_leaf, "requires_grad_")
    (x + 1).sum().backward()
    _close(x.grad, [1, 1, 1])


@row("torch.Tensor.detach", "autograd")
def _(torch, device):
    x = _leaf(torch, device, [1.0, 2.0])
    d = x.detach()
    _check(not d.requires_grad and d.grad_fn is None, "detach keeps the graph")
    _check((x * 2).grad_fn is not None, "no grad_fn on an op result")


@row("torch.Tensor.retain_grad", "autograd")
def _(torch, device):
    x = _leaf(torch, device, [1.0, 2.0])
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    _close(h.grad, [4, 8])


@row("torch.no_grad", "autograd")
def _(torch, device):
    x = _leaf(torch, device, [1.0])
    with torch.no_grad():
        y = x * 2
    _check(not y.requires_grad, "no_grad ignored")

    @torch.no_grad()
    def f(t):
        return t * 3
    _check(not f(x).requires_grad, "no_grad decorator ignored")
    _check((x * 2).requires_grad, "grad mode not restored")


@row("torch.enable_grad", "autograd")
def _(torch, device):
    x = _leaf(torch, device, [1.0])
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
    _check(y.requires_grad, "enable_grad ignored")


@row("torch.set_grad_enabled", "autograd")
def _(torch, device):
    x = _leaf(torch, device, [1.0])
    with torch.set_grad_enabled(False):
        _check(not torch.is_grad_enabled() and not (x * 2).requires_grad, "set_grad_enabled(False)")
    _check(torch.is_grad_enabled(), "not restored")


@row("torch.inference_mode", "autograd")
def _(torch, device):
    x = _leaf(torch, device, [1.0])
    with torch.inference_mode():
        y = x * 2
    _check(not y.requires_grad, "inference_mode ignored")


@row("torch.autograd.grad", "autograd")
def _(torch, device):
    x = _leaf(torch, device, [1.0, 3.0])
    (g,) = torch.autograd.grad((x ** 2).sum(), [x])
    _close(g, [2, 6])
    _check(x.grad is None, "autograd.grad wrote .grad")


@row("torch.autograd.Function", "autograd", note="custom forward/backward with ctx")
def _(torch, device):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            ctx.save_for_backward(inp)
            return inp * inp

        @staticmethod
        def backward(ctx, grad_output):
            (inp,) = ctx.saved_tensors
            return 2 * inp * grad_output

    x = _leaf(torch, device, [1.0, -2.0])
    y = Square.apply(x)
    _close(y, [1, 4])
    _backward(y, x, grads=[[2, -4]])


# ----------------------------------------------------------------------------------------------------------
# utilities: save/load, is_tensor, numel, compile, autocast

@row("torch.save", "utilities", note="torch.save(model.state_dict()) / load_state_dict(torch.load())")
def _(torch, device):
    m = torch.nn.Linear(3, 2).to(device)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.pt")
        torch.save(m.state_dict(), path)
        m2 = torch.nn.Linear(3, 2).to(device)
        m2.load_state_dict(torch.load(path, map_location=device))
    _close(m2.weight, _np(m.weight), tol=0)


@row("torch.save", "utilities", note="checkpoint dict with model, optimizer state and the epoch")
def _(torch, device):
    m = torch.nn.Linear(3, 2).to(device)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    m(torch.randn(4, 3, device=device)).sum().backward()
    opt.step()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ckpt.pt")
        torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(), "iter_num": 10}, path)
        ck = torch.load(path, map_location=device)
    _check(ck["iter_num"] == 10, "iter_num")
    m.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])


@row("torch.is_tensor", "utilities")
def _(torch, device):
    _check(torch.is_tensor(torch.zeros(1, device=device)) and not torch.is_tensor([1]), "is_tensor")


@row("torch.numel", "utilities")
def _(torch, device):
    _check(torch.numel(torch.zeros(2, 3, device=device)) == 6, "numel")


@row("torch.compile", "utilities")
def _(torch, device):
    m = torch.nn.Linear(3, 2).to(device)
    cm = torch.compile(m)
    _shape(cm(torch.randn(4, 3, device=device)), 4, 2)


@row("torch.autocast", "utilities")
def _(torch, device):
    m = torch.nn.Linear(4, 2).to(device)
    dtype = torch.bfloat16
    with torch.autocast(device_type=device, dtype=dtype):
        y = m(torch.randn(3, 4, device=device))
    _shape(y, 3, 2)
    y.float().sum().backward()
    _check(m.weight.grad is not None, "no grad")


@row("torch.set_float32_matmul_precision", "utilities")
def _(torch, device):
    torch.set_float32_matmul_precision("high")
    a = _data(2, 3)
    _close(_t(torch, device, a) @ _t(torch, device, a.T), a @ a.T, tol=1e-2)


# ----------------------------------------------------------------------------------------------------------
# nn layers

def _layer_backward(torch, m, x, out):
    out.sum().backward()
    for n, p in m.named_parameters():
        _check(p.grad is not None, f"no gradient for {n}")
        _check(tuple(p.grad.shape) == tuple(p.shape), f"{n}.grad shape")
    if x is not None and x.requires_grad:
        _check(x.grad is not None and tuple(x.grad.shape) == tuple(x.shape), "no gradient for the input")


@row("torch.nn.Linear", "nn.layers")
def _(torch, device):
    m = torch.nn.Linear(4, 3).to(device)
    _shape(m.weight, 3, 4)
    a = _data(5, 4)
    x = _leaf(torch, device, a)
    y = m(x)
    _close(y, a @ _np(m.weight).T + _np(m.bias))
    _layer_backward(torch, m, x, y)
    _check(torch.nn.Linear(4, 3, bias=False).bias is None, "bias=False")


@row("torch.nn.Linear", "nn.layers", note="3-D input (B, T, C)")
def _(torch, device):
    m = torch.nn.Linear(4, 6).to(device)
    x = _leaf(torch, device, _data(2, 3, 4))
    y = m(x)
    _shape(y, 2, 3, 6)
    _layer_backward(torch, m, x, y)


@row("torch.nn.Embedding", "nn.layers")
def _(torch, device):
    m = torch.nn.Embedding(10, 4).to(device)
    idx = torch.tensor([[1, 2, 1], [0, 9, 3]], device=device)
    e = m(idx)
    _shape(e, 2, 3, 4)
    _close(e[0, 0], _np(m.weight)[1])
    _layer_backward(torch, m, None, e)
    _close(m.weight.grad[1], np.full(4, 2.0))


@row("torch.nn.Conv2d", "nn.layers")
def _(torch, device):
    m = torch.nn.Conv2d(1, 2, kernel_size=3, padding=1).to(device)
    x = _leaf(torch, device, _data(2, 1, 5, 5))
    y = m(x)
    _shape(y, 2, 2, 5, 5)
    w, b = _np(m.weight), _np(m.bias)
    xp = np.pad(_data(2, 1, 5, 5), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = b[1] + sum(w[1, 0, i, j] * xp[0, 0, 2 + i, 2 + j] for i in range(3) for j in range(3))
    _close(y[0, 1, 2, 2], ref)
    _layer_backward(torch, m, x, y)


@row("torch.nn.Conv1d", "nn.layers")
def _(torch, device):
    m = torch.nn.Conv1d(3, 4, kernel_size=3).to(device)
    x = _leaf(torch, device, _data(2, 3, 8))
    y = m(x)
    _shape(y, 2, 4, 6)
    _layer_backward(torch, m, x, y)


@row("torch.nn.ConvTranspose2d", "nn.layers")
def _(torch, device):
    m = torch.nn.ConvTranspose2d(2, 1, kernel_size=2, stride=2).to(device)
    x = _leaf(torch, device, _data(1, 2, 3, 3))
    y = m(x)
    _shape(y, 1, 1, 6, 6)
    _layer_backward(torch, m, x, y)


@row("torch.nn.MaxPool2d", "nn.layers")
def _(torch, device):
    a = _data(1, 2, 4, 4)
    x = _leaf(torch, device, a)
    y = torch.nn.MaxPool2d(2)(x)
    _close(y, a.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
    _backward(y, x)


@row("torch.nn.AvgPool2d", "nn.layers")
def _(torch, device):
    a = _data(1, 1, 4, 4)
    x = _leaf(torch, device, a)
    y = torch.nn.AvgPool2d(kernel_size=2, stride=2)(x)
    _close(y, a.reshape(1, 1, 2, 2, 2, 2).mean(axis=(3, 5)))
    _backward(y, x, grads=[np.full((1, 1, 4, 4), 0.25)])


@row("torch.nn.AdaptiveAvgPool2d", "nn.layers")
def _(torch, device):
    a = _data(2, 3, 4, 4)
    x = _leaf(torch, device, a)
    y = torch.nn.AdaptiveAvgPool2d((1, 1))(x)
    _close(y, a.mean(axis=(2, 3), keepdims=True))
    _backward(y, x)


@row("torch.nn.BatchNorm1d", "nn.layers")
def _(torch, device):
    m = torch.nn.BatchNorm1d(3).to(device)
    a = _data(8, 3)
    x = _leaf(torch, device, a)
    y = m(x)
    _close(y, (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5), tol=1e-3)
    _close(m.running_mean, 0.1 * a.mean(0))
    _layer_backward(torch, m, x, y * _t(torch, device, a))
    m.eval()
    _shape(m(x.detach()), 8, 3)


@row("torch.nn.BatchNorm2d", "nn.layers")
def _(torch, device):
    m = torch.nn.BatchNorm2d(2).to(device)
    a = _data(2, 2, 3, 3)
    x = _leaf(torch, device, a)
    y = m(x)
    mu, var = a.mean(axis=(0, 2, 3), keepdims=True), a.var(axis=(0, 2, 3), keepdims=True)
    _close(y, (a - mu) / np.sqrt(var + 1e-5), tol=1e-3)
    _layer_backward(torch, m, x, y * _t(torch, device, a))


@row("torch.nn.LayerNorm", "nn.layers")
def _(torch, device):
    m = torch.nn.LayerNorm(4).to(device)
    a = _data(2, 3, 4)
    x = _leaf(torch, device, a)
    y = m(x)
    _close(y, (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5), tol=1e-3)
    _layer_backward(torch, m, x, y * _t(torch, device, a))


@row("torch.nn.GroupNorm", "nn.layers")
def _(torch, device):
    m = torch.nn.GroupNorm(2, 4).to(device)
    x = _leaf(torch, device, _data(2, 4, 3))
    y = m(x)
    _shape(y, 2, 4, 3)
    _layer_backward(torch, m, x, y * _t(torch, device, _data(2, 4, 3, seed=5)))


@row("torch.nn.Dropout", "nn.layers")
def _(torch, device):
    m = torch.nn.Dropout(p=0.5)
    x = _leaf(torch, device, np.ones((8, 8), dtype=np.float32))
    y = m(x)
    v = _np(y)
    _check(set(np.unique(v)) <= {0.0, 2.0} and 0 < (v == 0).sum() < 64, "not dropout with scaling")
    _backward(y, x)
    m.eval()
    _close(m(x), np.ones((8, 8)))


@row("torch.nn.Flatten", "nn.layers")
def _(torch, device):
    x = _leaf(torch, device, _data(2, 3, 4))
    y = torch.nn.Flatten()(x)
    _shape(y, 2, 12)
    _backward(y, x)


@row("torch.nn.Unflatten", "nn.layers")
def _(torch, device):
    _shape(torch.nn.Unflatten(1, (3, 4))(torch.zeros(2, 12, device=device)), 2, 3, 4)


@row("torch.nn.Identity", "nn.layers")
def _(torch, device):
    a = _data(2, 3)
    _close(torch.nn.Identity()(_t(torch, device, a)), a)


@row("torch.nn.RNN", "nn.layers")
def _(torch, device):
    m = torch.nn.RNN(input_size=3, hidden_size=4, batch_first=True).to(device)
    x = _leaf(torch, device, _data(2, 5, 3))
    out, h = m(x)
    _shape(out, 2, 5, 4)
    _shape(h, 1, 2, 4)
    _layer_backward(torch, m, x, out)


@row("torch.nn.LSTM", "nn.layers")
def _(torch, device):
    m = torch.nn.LSTM(input_size=3, hidden_size=4, num_layers=1, batch_first=True).to(device)
    x = _leaf(torch, device, _data(2, 5, 3))
    out, (h, c) = m(x)
    _shape(out, 2, 5, 4)
    _shape(c, 1, 2, 4)
    _layer_backward(torch, m, x, out)


@row("torch.nn.GRU", "nn.layers")
def _(torch, device):
    m = torch.nn.GRU(3, 4).to(device)
    x = _leaf(torch, device, _data(5, 2, 3))
    out, h = m(x)
    _shape(out, 5, 2, 4)
    _layer_backward(torch, m, x, out)


@row("torch.nn.MultiheadAttention", "nn.layers")
def _(torch, device):
    m = torch.nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True).to(device)
    x = _leaf(torch, device, _data(2, 3, 8))
    out, w = m(x, x, x)
    _shape(out, 2, 3, 8)
    _shape(w, 2, 3, 3)
    _layer_backward(torch, m, x, out)


@row("torch.nn.TransformerEncoderLayer", "nn.layers")
def _(torch, device):
    m = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                         batch_first=True).to(device)
    x = _leaf(torch, device, _data(2, 3, 8))
    y = m(x)
    _shape(y, 2, 3, 8)
    _layer_backward(torch, m, x, y * _t(torch, device, _data(2, 3, 8, seed=4)))


# ----------------------------------------------------------------------------------------------------------
# nn activations (modules)

def _act_row(name, ref, kwargs=None, lo=-2.0, hi=2.0, tol=1e-4):
    def snippet(torch, device):
        a = _data(3, 4, lo=lo, hi=hi, seed=2)
        x = _leaf(torch, device, a)
        y = getattr(torch.nn, name)(**(kwargs or {}))(x)
        _close(y, ref(a.astype(np.float64)), tol=tol)
        _backward(y * _t(torch, device, a), x)
    row(f"torch.nn.{name}", "nn.activations")(snippet)


def _gelu(a):
    return 0.5 * a * (1 + _erf(a / np.sqrt(2)))


_act_row("ReLU", lambda a: np.maximum(a, 0))
_act_row("LeakyReLU", lambda a: np.where(a > 0, a, 0.2 * a), {"negative_slope": 0.2})
_act_row("GELU", _gelu, tol=1e-3)
_act_row("SiLU", lambda a: a * _sig(a))
_act_row("ELU", lambda a: np.where(a > 0, a, np.expm1(a)))
_act_row("Tanh", np.tanh)
_act_row("Sigmoid", _sig)
_act_row("Softplus", lambda a: np.log1p(np.exp(a)))
_act_row("Softmax", _softmax, {"dim": -1})
_act_row("LogSoftmax", lambda a: np.log(_softmax(a)), {"dim": 1})


# ----------------------------------------------------------------------------------------------------------
# nn losses

def _ce_ref(a, y):
    lp = np.log(_softmax(a.astype(np.float64)))
    return -lp[np.arange(len(y)), y].mean()


@row("torch.nn.CrossEntropyLoss", "nn.losses")
def _(torch, device):
    a, y = _data(4, 5, lo=-2, hi=2), np.array([1, 0, 4, 2])
    x = _leaf(torch, device, a)
    loss = torch.nn.CrossEntropyLoss()(x, _t(torch, device, y))
    _close(loss, _ce_ref(a, y))
    g = _softmax(a.astype(np.float64))
    g[np.arange(4), y] -= 1
    _backward(loss, x, grads=[g / 4])


@row("torch.nn.CrossEntropyLoss", "nn.losses", note="label_smoothing, reduction='sum'")
def _(torch, device):
    a, y = _data(4, 5), np.array([1, 0, 4, 2])
    x = _leaf(torch, device, a)
    loss = torch.nn.CrossEntropyLoss(label_smoothing=0.1, reduction="sum")(x, _t(torch, device, y))
    lp = np.log(_softmax(a.astype(np.float64)))
    ref = -(0.9 * lp[np.arange(4), y] + 0.1 * lp.mean(1)).sum()
    _close(loss, ref)
    _backward(loss, x)


@row("torch.nn.MSELoss", "nn.losses")
def _(torch, device):
    a, b = _data(4, 2), _data(4, 2, seed=1)
    x = _leaf(torch, device, a)
    loss = torch.nn.MSELoss()(x, _t(torch, device, b))
    _close(loss, ((a - b) ** 2).mean())
    _backward(loss, x, grads=[2 * (a - b) / 8])


@row("torch.nn.L1Loss", "nn.losses")
def _(torch, device):
    a, b = _data(4, 2), _data(4, 2, seed=1)
    x = _leaf(torch, device, a)
    loss = torch.nn.L1Loss()(x, _t(torch, device, b))
    _close(loss, np.abs(a - b).mean())
    _backward(loss, x)


@row("torch.nn.NLLLoss", "nn.losses")
def _(torch, device):
    a, y = _data(4, 5), np.array([1, 0, 4, 2])
    x = _leaf(torch, device, a)
    loss = torch.nn.NLLLoss()(torch.log_softmax(x, dim=1), _t(torch, device, y))
    _close(loss, _ce_ref(a, y))
    _backward(loss, x)


@row("torch.nn.BCELoss", "nn.losses")
def _(torch, device):
    a, t = _data(6, lo=0.1, hi=0.9), np.array([0, 1, 1, 0, 1, 0], dtype=np.float32)
    x = _leaf(torch, device, a)
    loss = torch.nn.BCELoss()(x, _t(torch, device, t))
    _close(loss, -(t * np.log(a) + (1 - t) * np.log(1 - a)).mean())
    _backward(loss, x)


@row("torch.nn.BCEWithLogitsLoss", "nn.losses")
def _(torch, device):
    a, t = _data(6, lo=-3, hi=3), np.array([0, 1, 1, 0, 1, 0], dtype=np.float32)
    x = _leaf(torch, device, a)
    loss = torch.nn.BCEWithLogitsLoss()(x, _t(torch, device, t))
    p = _sig(a.astype(np.float64))
    _close(loss, -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean())
    _backward(loss, x, grads=[(p - t) / 6])


@row("torch.nn.SmoothL1Loss", "nn.losses")
def _(torch, device):
    a, b = _data(5, lo=-2, hi=2), _data(5, seed=1)
    x = _leaf(torch, device, a)
    loss = torch.nn.SmoothL1Loss()(x, _t(torch, device, b))
    d = np.abs(a - b)
    _close(loss, np.where(d < 1, 0.5 * d * d, d - 0.5).mean())
    _backward(loss, x)


@row("torch.nn.KLDivLoss", "nn.losses")
def _(torch, device):
    a, b = _data(3, 4), _data(3, 4, seed=1)
    x = _leaf(torch, device, a)
    target = _softmax(b.astype(np.float64))
    loss = torch.nn.KLDivLoss(reduction="batchmean")(torch.log_softmax(x, dim=1), _t(torch, device, target))
    _close(loss, (target * (np.log(target) - np.log(_softmax(a.astype(np.float64))))).sum() / 3)
    _backward(loss, x)


# ----------------------------------------------------------------------------------------------------------
# nn.Module, containers, parameters

def _mlp(torch):
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


@row("torch.nn.Module", "nn.module", note="subclass with __init__/forward, model(x), loss.backward()")
def _(torch, device):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 8)
            self.fc2 = torch.nn.Linear(8, 2)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    net = Net().to(device)
    out = net(torch.randn(5, 4, device=device))
    _shape(out, 5, 2)
    out.sum().backward()
    _check(all(p.grad is not None for p in net.parameters()), "a parameter has no grad")
    _check(len(list(net.parameters())) == 4, "parameters()")


@row("torch.nn.Sequential", "nn.module")
def _(torch, device):
    m = _mlp(torch).to(device)
    y = m(torch.randn(2, 4, device=device))
    _shape(y, 2, 3)
    _check(isinstance(m[0], torch.nn.Linear) and len(m) == 3, "indexing / len")
    y.sum().backward()
    _check(m[2].weight.grad is not None, "no grad")


@row("torch.nn.ModuleList", "nn.module")
def _(torch, device):
    blocks = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(2)]).to(device)
    x = torch.randn(2, 3, device=device)
    for b in blocks:
        x = b(x)
    _shape(x, 2, 3)
    _check(len(list(blocks.parameters())) == 4, "parameters of a ModuleList")


@row("torch.nn.ModuleDict", "nn.module")
def _(torch, device):
    d = torch.nn.ModuleDict(dict(wte=torch.nn.Embedding(5, 3), ln_f=torch.nn.LayerNorm(3))).to(device)
    y = d.ln_f(d["wte"](torch.tensor([1, 2], device=device)))
    _shape(y, 2, 3)


@row("torch.nn.Parameter", "nn.module")
def _(torch, device):
    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.g = torch.nn.Parameter(torch.ones(3))

        def forward(self, x):
            return x * self.g

    m = Scale().to(device)
    _check(m.g.requires_grad and len(list(m.parameters())) == 1, "Parameter not registered")
    m(torch.full((3,), 2.0, device=device)).sum().backward()
    _close(m.g.grad, [2, 2, 2])


@row("torch.nn.Module.named_parameters", "nn.module", note="also parameter count idiom")
def _(torch, device):
    m = _mlp(torch).to(device)
    names = [n for n, _ in m.named_parameters()]
    _check(names == ["0.weight", "0.bias", "2.weight", "2.bias"], f"names {names}")
    _check(sum(p.numel() for p in m.parameters()) == 4 * 8 + 8 + 8 * 3 + 3, "parameter count")


@row("torch.nn.Module.state_dict", "nn.module", note="state_dict / load_state_dict")
def _(torch, device):
    m, m2 = _mlp(torch).to(device), _mlp(torch).to(device)
    sd = m.state_dict()
    _check(list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"], f"keys {list(sd)}")
    m2.load_state_dict(sd)
    x = torch.randn(2, 4, device=device)
    _close(m2(x), _np(m(x)), tol=1e-6)


@row("torch.nn.Module.train", "nn.module", note="train()/eval() switch dropout")
def _(torch, device):
    m = torch.nn.Sequential(torch.nn.Dropout(0.5)).to(device)
    m.eval()
    _check(not m.training and not m[0].training, "eval()")
    _close(m(torch.ones(16, device=device)), np.ones(16))
    m.train()
    _check(m[0].training, "train()")


@row("torch.nn.Module.zero_grad", "nn.module")
def _(torch, device):
    m = _mlp(torch).to(device)
    m(torch.randn(2, 4, device=device)).sum().backward()
    m.zero_grad()
    _check(all(p.grad is None or not _np(p.grad).any() for p in m.parameters()), "grads not cleared")


@row("torch.nn.Module.apply", "nn.module", note="weight init with nn.init in _init_weights")
def _(torch, device):
    def init_weights(mod):
        if isinstance(mod, torch.nn.Linear):
            torch.nn.init.normal_(mod.weight, mean=0.0, std=0.02)
            torch.nn.init.zeros_(mod.bias)

    m = _mlp(torch)
    m.apply(init_weights)
    m.to(device)
    _check(not _np(m[0].bias).any() and _np(m[0].weight).std() < 0.05, "init not applied")


@row("torch.nn.Module.register_buffer", "nn.module")
def _(torch, device):
    class Attn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("tril", torch.tril(torch.ones(4, 4)))

        def forward(self, x):
            return x.masked_fill(self.tril[:3, :3] == 0, 0.0)

    m = Attn().to(device)
    _on(m.tril, device)
    _check("tril" in m.state_dict(), "buffer not in state_dict")
    _close(m(torch.ones(3, 3, device=device)), np.tril(np.ones((3, 3))))


@row("torch.nn.Module.modules", "nn.module", note="modules() / children() / named_modules()")
def _(torch, device):
    m = _mlp(torch)
    _check(len(list(m.children())) == 3 and len(list(m.modules())) == 4, "children/modules")
    _check([n for n, _ in m.named_modules()] == ["", "0", "1", "2"], "named_modules")


@row("torch.nn.utils.clip_grad_norm_", "nn.module")
def _(torch, device):
    m = torch.nn.Linear(4, 4).to(device)
    (m(torch.randn(3, 4, device=device)) * 100).sum().backward()
    total = torch.nn.utils.clip_grad_norm_(m.parameters(), max_norm=1.0)
    _check(float(total) > 1.0, "total norm")
    after = math.sqrt(sum(float((p.grad ** 2).sum()) for p in m.parameters()))
    _check(abs(after - 1.0) < 1e-3, f"norm after clipping {after:.4f}")


# ----------------------------------------------------------------------------------------------------------
# nn.functional

def _fact_row(name, ref, kwargs=None, lo=-2.0, hi=2.0, tol=1e-4):
    def snippet(torch, device):
        a = _data(3, 4, lo=lo, hi=hi, seed=2)
        x = _leaf(torch, device, a)
        y = getattr(torch.nn.functional, name)(x, **(kwargs or {}))
        _close(y, ref(a.astype(np.float64)), tol=tol)
        _backward(y * _t(torch, device, a), x)
    row(f"torch.nn.functional.{name}", "nn.functional")(snippet)


_fact_row("relu", lambda a: np.maximum(a, 0))
_fact_row("gelu", _gelu, tol=1e-3)
_fact_row("silu", lambda a: a * _sig(a))
_fact_row("leaky_relu", lambda a: np.where(a > 0, a, 0.01 * a))
_fact_row("elu", lambda a: np.where(a > 0, a, np.expm1(a)))
_fact_row("softplus", lambda a: np.log1p(np.exp(a)))
_fact_row("softmax", _softmax, {"dim": -1})
_fact_row("log_softmax", lambda a: np.log(_softmax(a)), {"dim": -1})
_fact_row("normalize", lambda a: a / np.linalg.norm(a, axis=1, keepdims=True), {"dim": 1})


@row("torch.nn.functional.cross_entropy", "nn.functional")
def _(torch, device):
    a, y = _data(6, 5), np.array([1, 0, 4, 2, 2, 3])
    x = _leaf(torch, device, a)
    loss = torch.nn.functional.cross_entropy(x, _t(torch, device, y))
    _close(loss, _ce_ref(a, y))
    _backward(loss, x)


@row("torch.nn.functional.cross_entropy", "nn.functional",
     note="logits.view(-1, V), targets.view(-1), ignore_index=-1 (nanoGPT)")
def _(torch, device):
    a, y = _data(2, 3, 5), np.array([[1, 0, -1], [4, -1, 2]])
    x = _leaf(torch, device, a)
    loss = torch.nn.functional.cross_entropy(x.view(-1, 5), _t(torch, device, y).view(-1), ignore_index=-1)
    keep = y.ravel() != -1
    _close(loss, _ce_ref(a.reshape(-1, 5)[keep], y.ravel()[keep]))
    _backward(loss, x)


@row("torch.nn.functional.mse_loss", "nn.functional")
def _(torch, device):
    a, b = _data(3, 2), _data(3, 2, seed=1)
    x = _leaf(torch, device, a)
    loss = torch.nn.functional.mse_loss(x, _t(torch, device, b))
    _close(loss, ((a - b) ** 2).mean())
    _backward(loss, x)


@row("torch.nn.functional.l1_loss", "nn.functional")
def _(torch, device):
    a, b = _data(3, 2), _data(3, 2, seed=1)
    x = _leaf(torch, device, a)
    loss = torch.nn.functional.l1_loss(x, _t(torch, device, b))
    _close(loss, np.abs(a - b).mean())
    _backward(loss, x)


@row("torch.nn.functional.nll_loss", "nn.functional")
def _(torch, device):
    a, y = _data(4, 5), np.array([1, 0, 4, 2])
    x = _leaf(torch, device, a)
    loss = torch.nn.functional.nll_loss(torch.nn.functional.log_softmax(x, dim=1), _t(torch, device, y))
    _close(loss, _ce_ref(a, y))
    _backward(loss, x)


@row("torch.nn.functional.binary_cross_entropy", "nn.functional")
def _(torch, device):
    a, t = _data(4, lo=0.1, hi=0.9), np.array([0, 1, 1, 0], dtype=np.float32)
    x = _leaf(torch, device, a)
    loss = torch.nn.functional.binary_cross_entropy(x, _t(torch, device, t))
    _close(loss, -(t * np.log(a) + (1 - t) * np.log(1 - a)).mean())
    _backward(loss, x)


@row("torch.nn.functional.binary_cross_entropy_with_logits", "nn.functional")
def _(torch, device):
    a, t = _data(4, lo=-3, hi=3), np.array([0, 1, 1, 0], dtype=np.float32)
    x = _leaf(torch, device, a)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(x, _t(torch, device, t))
    p = _sig(a.astype(np.float64))
    _close(loss, -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean())
    _backward(loss, x)


@row("torch.nn.functional.dropout", "nn.functional")
def _(torch, device):
    x = _leaf(torch, device, np.ones((8, 8), dtype=np.float32))
    y = torch.nn.functional.dropout(x, p=0.25, training=True)
    v = _np(y)
    _check(set(np.round(np.unique(v), 4)) <= {0.0, 1.3333}, "not scaled dropout")
    _backward(y, x)
    _close(torch.nn.functional.dropout(x, p=0.25, training=False), np.ones((8, 8)))


@row("torch.nn.functional.linear", "nn.functional")
def _(torch, device):
    a, w, b = _data(3, 4), _data(2, 4, seed=1), _data(2, seed=2)
    x, W = _leaf(torch, device, a), _leaf(torch, device, w)
    y = torch.nn.functional.linear(x, W, _t(torch, device, b))
    _close(y, a @ w.T + b)
    _backward(y, x, W)


@row("torch.nn.functional.one_hot", "nn.functional")
def _(torch, device):
    oh = torch.nn.functional.one_hot(torch.tensor([2, 0, 1], device=device), num_classes=4)
    _check(oh.dtype == torch.int64, f"dtype {oh.dtype}")
    _close(oh, np.eye(4)[[2, 0, 1]])
    _close(torch.nn.functional.one_hot(torch.tensor([1, 3], device=device)).float(), np.eye(4)[[1, 3]])


@row("torch.nn.functional.pad", "nn.functional")
def _(torch, device):
    a = _data(2, 3)
    x = _leaf(torch, device, a)
    p = torch.nn.functional.pad(x, (1, 2))
    _close(p, np.pad(a, ((0, 0), (1, 2))))
    _close(torch.nn.functional.pad(x, (0, 0, 1, 0), value=-1.0), np.pad(a, ((1, 0), (0, 0)), constant_values=-1))
    _backward(p, x)


@row("torch.nn.functional.conv2d", "nn.functional")
def _(torch, device):
    a, w = _data(1, 1, 4, 4), _data(2, 1, 3, 3, seed=1)
    x, W = _leaf(torch, device, a), _leaf(torch, device, w)
    y = torch.nn.functional.conv2d(x, W)
    ref = np.array([[[[(a[0, 0, i:i + 3, j:j + 3] * w[o, 0]).sum() for j in range(2)] for i in range(2)]
                     for o in range(2)]])
    _close(y, ref)
    _backward(y, x, W)


@row("torch.nn.functional.max_pool2d", "nn.functional")
def _(torch, device):
    a = _data(1, 1, 4, 4)
    x = _leaf(torch, device, a)
    y = torch.nn.functional.max_pool2d(x, 2)
    _close(y, a.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5)))
    _backward(y, x)


@row("torch.nn.functional.avg_pool2d", "nn.functional")
def _(torch, device):
    a = _data(1, 1, 4, 4)
    _close(torch.nn.functional.avg_pool2d(_t(torch, device, a), 2), a.reshape(1, 1, 2, 2, 2, 2).mean(axis=(3, 5)))


@row("torch.nn.functional.layer_norm", "nn.functional")
def _(torch, device):
    a = _data(2, 4)
    x = _leaf(torch, device, a)
    w = _leaf(torch, device, np.ones(4, dtype=np.float32))
    y = torch.nn.functional.layer_norm(x, (4,), weight=w, bias=None, eps=1e-5)
    _close(y, (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5), tol=1e-3)
    _backward(y * _t(torch, device, a), x, w)


@row("torch.nn.functional.embedding", "nn.functional")
def _(torch, device):
    w = _data(5, 3)
    W = _leaf(torch, device, w)
    e = torch.nn.functional.embedding(torch.tensor([4, 0, 4], device=device), W)
    _close(e, w[[4, 0, 4]])
    _backward(e, W)


@row("torch.nn.functional.scaled_dot_product_attention", "nn.functional", note="is_causal=True")
def _(torch, device):
    q, k, v = _data(1, 2, 3, 4), _data(1, 2, 3, 4, seed=1), _data(1, 2, 3, 4, seed=2)
    Q = _leaf(torch, device, q)
    y = torch.nn.functional.scaled_dot_product_attention(Q, _t(torch, device, k), _t(torch, device, v),
                                                         is_causal=True)
    s = q @ k.transpose(0, 1, 3, 2) / 2.0
    s = np.where(np.tril(np.ones((3, 3))) == 0, -np.inf, s)
    _close(y, _softmax(s) @ v)
    _backward(y, Q)


@row("torch.nn.functional.interpolate", "nn.functional")
def _(torch, device):
    a = _data(1, 1, 2, 2)
    y = torch.nn.functional.interpolate(_t(torch, device, a), scale_factor=2, mode="nearest")
    _close(y, a.repeat(2, axis=2).repeat(2, axis=3))


# ----------------------------------------------------------------------------------------------------------
# nn.init

def _init_row(name, check, args=(), kwargs=None):
    def snippet(torch, device):
        w = torch.empty(64, 32, device=device)
        out = getattr(torch.nn.init, name)(w, *args, **(kwargs or {}))
        _check(out is w or out is None, "did not return the tensor")
        check(_np(w))
        m = torch.nn.Linear(8, 8).to(device)
        getattr(torch.nn.init, name)(m.weight, *args, **(kwargs or {}))
        _check(m.weight.requires_grad and m.weight.grad is None, "init changed the parameter's autograd state")
    row(f"torch.nn.init.{name}", "nn.init")(snippet)


def _within(lo, hi, what="std"):
    def check(v):
        s = v.std() if what == "std" else np.abs(v).max()
        _check(lo < s < hi, f"{what} {s:.4f} not in ({lo}, {hi})")
    return check


_XAV = math.sqrt(2.0 / (64 + 32))
_KAI = math.sqrt(2.0 / 32)
_init_row("xavier_uniform_", _within(0.8 * _XAV, 1.2 * _XAV))
_init_row("xavier_normal_", _within(0.8 * _XAV, 1.2 * _XAV))
_init_row("kaiming_uniform_", _within(0.8 * _KAI, 1.2 * _KAI), kwargs={"nonlinearity": "relu"})
_init_row("kaiming_normal_", _within(0.8 * _KAI, 1.2 * _KAI), kwargs={"mode": "fan_in", "nonlinearity": "relu"})
_init_row("normal_", _within(0.015, 0.025), kwargs={"mean": 0.0, "std": 0.02})
_init_row("trunc_normal_", _within(0.015, 0.025), kwargs={"std": 0.02})
_init_row("uniform_", _within(0.09, 0.1001, what="max"), args=(-0.1, 0.1))
_init_row("zeros_", lambda v: _check(not v.any(), "not zeros"))
_init_row("ones_", lambda v: _check((v == 1).all(), "not ones"))
_init_row("constant_", lambda v: _check((v == 0.5).all(), "not constant"), args=(0.5,))
_init_row("orthogonal_", lambda v: _check(np.allclose(v.T @ v, np.eye(32), atol=1e-4), "not orthogonal"))


# ----------------------------------------------------------------------------------------------------------
# optim

def _fit(torch, device, make_opt, steps=5):
    """A few steps of least squares on a tiny linear model: the loss must go down."""
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 1).to(device)
    x = _t(torch, device, _data(16, 3))
    y = _t(torch, device, _data(16, 3) @ np.array([[1.0], [-2.0], [0.5]], dtype=np.float32))
    opt = make_opt(m.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    _check(losses[-1] < losses[0], f"loss did not decrease: {losses[0]:.4f} -> {losses[-1]:.4f}")
    return m, opt


@row("torch.optim.SGD", "optim")
def _(torch, device):
    _fit(torch, device, lambda p: torch.optim.SGD(p, lr=0.1))


@row("torch.optim.SGD", "optim", note="momentum, weight_decay, nesterov")
def _(torch, device):
    _fit(torch, device, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4, nesterov=True))


@row("torch.optim.Adam", "optim")
def _(torch, device):
    _fit(torch, device, lambda p: torch.optim.Adam(p, lr=0.05))


@row("torch.optim.AdamW", "optim", note="betas, weight_decay")
def _(torch, device):
    _fit(torch, device, lambda p: torch.optim.AdamW(p, lr=0.05, betas=(0.9, 0.95), weight_decay=0.1))


@row("torch.optim.RMSprop", "optim")
def _(torch, device):
    _fit(torch, device, lambda p: torch.optim.RMSprop(p, lr=0.01))


@row("torch.optim.Adagrad", "optim")
def _(torch, device):
    _fit(torch, device, lambda p: torch.optim.Adagrad(p, lr=0.1))


@row("torch.optim.AdamW", "optim", note="per-parameter groups, lr set by hand in param_groups")
def _(torch, device):
    m = torch.nn.Linear(3, 2).to(device)
    opt = torch.optim.AdamW([{"params": [m.weight], "weight_decay": 0.1},
                             {"params": [m.bias], "weight_decay": 0.0}], lr=1e-3)
    _check(len(opt.param_groups) == 2, "groups")
    for g in opt.param_groups:
        g["lr"] = 0.5
    m(torch.randn(4, 3, device=device)).sum().backward()
    opt.step()
    _check(all(g["lr"] == 0.5 for g in opt.param_groups), "lr")


@row("torch.optim.Optimizer.state_dict", "optim")
def _(torch, device):
    m, opt = _fit(torch, device, lambda p: torch.optim.Adam(p, lr=0.05), steps=2)
    sd = opt.state_dict()
    _check("state" in sd and "param_groups" in sd, f"keys {list(sd)}")
    opt2 = torch.optim.Adam(m.parameters(), lr=0.05)
    opt2.load_state_dict(sd)
    _check(len(opt2.state_dict()["state"]) == 2, "state not loaded")


@row("torch.optim.Optimizer.zero_grad", "optim", note="set_to_none default and set_to_none=False")
def _(torch, device):
    m = torch.nn.Linear(3, 1).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    m(torch.randn(2, 3, device=device)).sum().backward()
    opt.zero_grad(set_to_none=False)
    _check(m.weight.grad is not None and not _np(m.weight.grad).any(), "set_to_none=False")
    opt.zero_grad()
    _check(m.weight.grad is None, "zero_grad() leaves grads (set_to_none=True is PyTorch's default)")


# ----------------------------------------------------------------------------------------------------------
# lr_scheduler

def _lrs(torch, device, make_sched, steps, metric=None):
    m = torch.nn.Linear(2, 1).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    sched = make_sched(opt)
    lrs = []
    for _ in range(steps):
        m(torch.ones(1, 2, device=device)).sum().backward()
        opt.step()
        opt.zero_grad()
        sched.step(metric) if metric is not None else sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    return lrs, sched


@row("torch.optim.lr_scheduler.StepLR", "lr_scheduler")
def _(torch, device):
    lrs, s = _lrs(torch, device, lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5), 4)
    _check(np.allclose(lrs, [0.1, 0.05, 0.05, 0.025]), f"lrs {lrs}")
    _check(np.allclose(s.get_last_lr(), [0.025]), "get_last_lr")


@row("torch.optim.lr_scheduler.MultiStepLR", "lr_scheduler")
def _(torch, device):
    lrs, _ = _lrs(torch, device, lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[1, 3], gamma=0.1), 3)
    _check(np.allclose(lrs, [0.01, 0.01, 0.001]), f"lrs {lrs}")


@row("torch.optim.lr_scheduler.ExponentialLR", "lr_scheduler")
def _(torch, device):
    lrs, _ = _lrs(torch, device, lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.5), 2)
    _check(np.allclose(lrs, [0.05, 0.025]), f"lrs {lrs}")


@row("torch.optim.lr_scheduler.CosineAnnealingLR", "lr_scheduler")
def _(torch, device):
    lrs, _ = _lrs(torch, device, lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4), 4)
    ref = [0.05 * (1 + math.cos(math.pi * t / 4)) for t in range(1, 5)]
    _check(np.allclose(lrs, ref, atol=1e-6), f"lrs {lrs}")


@row("torch.optim.lr_scheduler.LambdaLR", "lr_scheduler")
def _(torch, device):
    lrs, _ = _lrs(torch, device, lambda o: torch.optim.lr_scheduler.LambdaLR(o, lr_lambda=lambda e: 1 / (e + 1)), 3)
    _check(np.allclose(lrs, [0.05, 0.1 / 3, 0.025]), f"lrs {lrs}")


@row("torch.optim.lr_scheduler.LinearLR", "lr_scheduler", note="warmup")
def _(torch, device):
    lrs, _ = _lrs(torch, device, lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=2), 3)
    _check(np.allclose(lrs, [0.075, 0.1, 0.1]), f"lrs {lrs}")


@row("torch.optim.lr_scheduler.OneCycleLR", "lr_scheduler")
def _(torch, device):
    lrs, _ = _lrs(torch, device, lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10), 5)
    _check(lrs[0] > 0.04 and max(lrs) > 0.5, f"lrs {lrs}")


@row("torch.optim.lr_scheduler.ReduceLROnPlateau", "lr_scheduler")
def _(torch, device):
    lrs, _ = _lrs(torch, device, lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, factor=0.5),
                  4, metric=1.0)
    _check(lrs[0] == 0.1 and lrs[-1] < 0.1, f"lrs {lrs}")


# ----------------------------------------------------------------------------------------------------------
# utils.data

@row("torch.utils.data.TensorDataset", "utils.data")
def _(torch, device):
    X, Y = torch.randn(10, 3), torch.arange(10)
    ds = torch.utils.data.TensorDataset(X, Y)
    _check(len(ds) == 10, "len")
    x, y = ds[3]
    _shape(x, 3)
    _check(y.item() == 3, "item")


@row("torch.utils.data.DataLoader", "utils.data", note="batch_size, shuffle, drop_last over a TensorDataset")
def _(torch, device):
    ds = torch.utils.data.TensorDataset(torch.randn(10, 3), torch.arange(10))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True, drop_last=True)
    _check(len(loader) == 2, f"len {len(loader)}")
    seen = []
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        _shape(xb, 4, 3)
        seen += yb.tolist()
    _check(len(set(seen)) == 8, "batches")


@row("torch.utils.data.Dataset", "utils.data", note="map-style subclass returning (tensor, int)")
def _(torch, device):
    class Squares(torch.utils.data.Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return torch.tensor([float(i), float(i * i)]), i % 2

    batches = list(torch.utils.data.DataLoader(Squares(), batch_size=3))
    _check(len(batches) == 3, f"{len(batches)} batches")
    xb, yb = batches[0]
    _shape(xb, 3, 2)
    _check(yb.tolist() == [0, 1, 0], f"labels collated to {yb}")
    _check(yb.dtype == torch.int64, f"label dtype {yb.dtype}")


@row("torch.utils.data.DataLoader", "utils.data", note="dataset yielding numpy arrays, num_workers=0")
def _(torch, device):
    class Arr(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return np.full(3, i, dtype=np.float32), np.int64(i)

    xb, yb = next(iter(torch.utils.data.DataLoader(Arr(), batch_size=4, num_workers=0)))
    _check(torch.is_tensor(xb) and xb.dtype == torch.float32, "numpy batch not collated to a tensor")
    _shape(xb, 4, 3)


@row("torch.utils.data.random_split", "utils.data")
def _(torch, device):
    ds = torch.utils.data.TensorDataset(torch.arange(10).float())
    a, b = torch.utils.data.random_split(ds, [8, 2], generator=torch.Generator().manual_seed(42))
    _check(len(a) == 8 and len(b) == 2, "split sizes")


@row("torch.utils.data.Subset", "utils.data")
def _(torch, device):
    ds = torch.utils.data.TensorDataset(torch.arange(10).float())
    s = torch.utils.data.Subset(ds, [1, 3])
    _check(len(s) == 2 and s[1][0].item() == 3.0, "subset")


@row("torch.utils.data.RandomSampler", "utils.data")
def _(torch, device):
    ds = torch.utils.data.TensorDataset(torch.arange(6).float())
    idx = list(torch.utils.data.RandomSampler(ds))
    _check(sorted(idx) == list(range(6)), f"indices {idx}")


@row("torch.utils.data.default_collate", "utils.data")
def _(torch, device):
    b = torch.utils.data.default_collate([(torch.ones(2), 1), (torch.zeros(2), 0)])
    _shape(b[0], 2, 2)
    _check(b[1].tolist() == [1, 0], "labels")


# ----------------------------------------------------------------------------------------------------------
# running the rows

def resolve(name):
    """The rawdev object for a PyTorch name (torch.X.Y -> rawdev.X.Y); raises AttributeError if absent."""
    import importlib
    parts = name.split(".")
    assert parts[0] == "torch", name
    obj = importlib.import_module("rawdev")
    path = "rawdev"
    for p in parts[1:]:
        if not hasattr(obj, p):
            try:   # a submodule not imported by its package's __init__
                obj = importlib.import_module(f"{path}.{p}")
            except ImportError:
                raise AttributeError(f"{path} has no attribute {p!r}") from None
        else:
            obj = getattr(obj, p)
        path = f"{path}.{p}"
    return obj


def _first_line(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0]}" if msg else type(e).__name__


def _run_snippet(r, device):
    import rawdev
    t0 = time.perf_counter()
    try:
        r.fn(rawdev, device)
        return {"ok": True, "error": None, "seconds": round(time.perf_counter() - t0, 3)}
    except BaseException as e:  # a snippet's failure is data
        where = traceback.extract_tb(e.__traceback__)
        frame = next((f for f in reversed(where) if f.filename == __file__), None)
        return {"ok": False, "error": _first_line(e), "seconds": round(time.perf_counter() - t0, 3),
                "line": frame.lineno if frame else None}


def _serve(conn, rows, driver):
    import warnings
    warnings.simplefilter("ignore")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)   # a snippet's prints must not reach the table on stdout
    if driver:
        import rawdev
        rawdev.use_driver(driver)
    while True:
        msg = conn.recv()
        if msg is None:
            return
        i, device = msg
        conn.send(_run_snippet(rows[i], device))


class _Worker:
    def __init__(self, rows, driver):
        self.rows, self.driver, self.proc = rows, driver, None

    def _start(self):
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, self.rows, self.driver), daemon=True)
        self.proc.start()
        child.close()

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.conn.close()
            self.proc = None

    def run(self, i, device, timeout):
        if self.proc is None:
            self._start()
        self.conn.send((i, device))
        try:
            if self.conn.poll(timeout):
                res = self.conn.recv()
            else:
                res = {"ok": False, "error": f"slow: no result after {timeout:g} s", "seconds": timeout}
        except (EOFError, OSError):
            res = {"ok": False, "error": f"crashed: the worker process died (exit code {self.proc.exitcode})",
                   "seconds": None}
        if not res["ok"]:
            self.stop()   # a fresh worker (and a powered-on simulator) for the next row
        return res


def run_rows(rows, devices=("cpu", "cuda"), driver="sim", timeout=20.0, progress=None):
    """Fill each row's .result: {'exists', 'exists_error', 'cpu', 'cuda'} (None where not applicable)."""
    worker = _Worker(rows, driver if "cuda" in devices else None)
    try:
        for i, r in enumerate(rows):
            res = {"name": r.name, "note": r.note, "category": r.category}
            try:
                resolve(r.name)
                res["exists"], res["exists_error"] = True, None
            except Exception as e:
                res["exists"], res["exists_error"] = False, _first_line(e)
            for dev in ("cpu", "cuda"):
                if dev not in devices or dev not in r.devices:
                    res[dev] = None
                elif not res["exists"]:
                    res[dev] = {"ok": False, "error": res["exists_error"], "seconds": 0.0}
                else:
                    res[dev] = worker.run(i, dev, timeout if r.timeout is None else r.timeout)
            r.result = res
            if progress:
                progress(i, r)
    finally:
        worker.stop()
    return rows


# ----------------------------------------------------------------------------------------------------------
# reporting

def _esc(s):
    return s.replace("|", "\\|")


def _cell(res, width=110):
    if res is None:
        return "–"
    if res["ok"]:
        return "✓"
    err = res["error"].replace("`", "'")
    if len(err) > width:
        err = err[:width - 1] + "…"
    return f"✗ {_esc(err)}"


def counts(rows):
    """{category: {'rows', 'exists', 'cpu', 'cpu_of', 'cuda', 'cuda_of'}} plus 'total'."""
    out = collections.OrderedDict()
    for cat in CATEGORIES + ["total"]:
        sel = [r for r in rows if cat in ("total", r.category)]
        if not sel:
            continue
        c = {"rows": len(sel), "exists": sum(r.result["exists"] for r in sel)}
        for dev in ("cpu", "cuda"):
            ran = [r.result[dev] for r in sel if r.result.get(dev) is not None]
            c[dev], c[dev + "_of"] = sum(x["ok"] for x in ran), len(ran)
        out[cat] = c
    return out


def _reason_key(err, own_name_missing=False):
    if own_name_missing:
        return "the API is missing from rawdev (AttributeError)"
    if err.startswith("slow:"):
        return "slow (over the time limit)"
    if err.startswith("AttributeError:"):
        return err[:140]   # a name the snippet needs besides its own: keep which one
    err = re.sub(r"'[^']*'", "'…'", err)
    err = re.sub(r"(?<![\w.-])\d+(\.\d+)?(?![\w-])", "N", err)
    return err[:140]


def failure_reasons(rows):
    """[(reason, rows failing for it, example keys)], most common first; a row counts once per reason."""
    seen = collections.OrderedDict()
    for r in rows:
        keys = collections.OrderedDict()
        for dev in ("cpu", "cuda"):
            res = r.result.get(dev)
            if res is not None and not res["ok"]:
                keys.setdefault(_reason_key(res["error"], not r.result["exists"]), []).append(dev)
        for k, devs in keys.items():
            seen.setdefault(k, []).append(f"{r.key} ({'/'.join(devs)})")
    return sorted(((k, len(v), v) for k, v in seen.items()), key=lambda t: -t[1])


def markdown(rows, header_lines=(), top=15):
    c = counts(rows)
    lines = ["# PyTorch everyday API: what rawdev runs", ""]
    lines += list(header_lines)
    lines += ["", "Each row runs a small snippet that calls the API the way PyTorch programs do and checks its result "
              "(values against numpy; a backward pass and the gradient where the op is differentiable). "
              "**exists**: the name resolves in rawdev; **cpu** / **cuda**: the snippet runs on that device "
              "without an exception (cuda on the simulated GPU); ✗ gives the first line of the exception; "
              "– means the row is cuda-only. Generated by `tools/api_coverage.py`; do not edit by hand.", "",
              "| category | rows | exists | cpu | cuda |", "|---|---:|---:|---:|---:|"]
    for cat, v in c.items():
        name = "**total**" if cat == "total" else cat
        cpu, cuda = f"{v['cpu']}/{v['cpu_of']}", f"{v['cuda']}/{v['cuda_of']}"
        lines.append(f"| {name} | {v['rows']} | {v['exists']} | {cpu} | {cuda} |")
    reasons = failure_reasons(rows)
    if reasons:
        lines += ["", f"## The {min(top, len(reasons))} most common failure reasons", "",
                  "| failures | reason | e.g. |", "|---:|---|---|"]
        for k, n, ex in reasons[:top]:
            lines.append(f"| {n} | {_esc(k)} | {_esc(', '.join(ex[:2]))} |")
    for cat in CATEGORIES:
        sel = [r for r in rows if r.category == cat]
        if not sel:
            continue
        lines += ["", f"## {cat}", "", "| API | exists | cpu | cuda |", "|---|---|---|---|"]
        for r in sel:
            name = f"`{r.name}`" + (f" — {r.note}" if r.note else "")
            ex = "✓" if r.result["exists"] else "✗"
            lines.append(f"| {_esc(name)} | {ex} | {_cell(r.result['cpu'])} | {_cell(r.result['cuda'])} |")
    return "\n".join(lines) + "\n"


def _machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return (f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def _where():
    import rawdev
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.relpath(os.path.dirname(rawdev.__file__), root)


def _commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the Markdown table here instead of stdout")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    ap.add_argument("--only", help="comma-separated PyTorch names (or categories) to run")
    ap.add_argument("--devices", default="cpu,cuda", help="cpu,cuda (default), cpu or cuda")
    ap.add_argument("--driver", default="sim", choices=["sim", "cuda", "auto"], help="driver for the cuda column")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds a snippet may take (default 20)")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)

    rows = ROWS
    if args.only:
        want = {w.strip() for w in args.only.split(",") if w.strip()}
        rows = [r for r in ROWS if r.name in want or r.category in want]
        if not rows:
            ap.error(f"no row matches {args.only!r}")
    devices = tuple(d.strip() for d in args.devices.split(",") if d.strip())

    def progress(i, r):
        if not args.quiet:
            cells = " ".join(f"{d}:{'-' if r.result[d] is None else 'ok' if r.result[d]['ok'] else 'FAIL'}"
                             for d in ("cpu", "cuda"))
            print(f"[{i + 1}/{len(rows)}] {r.key}: exists:{'ok' if r.result['exists'] else 'NO'} {cells}",
                  file=sys.stderr, flush=True)

    t0 = time.time()
    run_rows(rows, devices=devices, driver=args.driver, timeout=args.timeout, progress=progress)
    took = time.time() - t0
    cmd = "python tools/api_coverage.py" + ("".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:])))
    header = [f"- command: `{cmd}`",
              f"- date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}, took {took:.0f} s",
              f"- machine: {_machine()}",
              f"- rawdev commit: {_commit()} (package at `{_where()}`); cuda column on the `{args.driver}` driver",
              f"- rows: {len(rows)}"]
    md = markdown(rows, header)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(md)
    elif args.json != "-":
        sys.stdout.write(md)
    if args.json:
        data = {"command": cmd, "took_s": round(took, 1), "counts": counts(rows),
                "failure_reasons": [{"reason": k, "count": n, "rows": ex} for k, n, ex in failure_reasons(rows)],
                "rows": [r.result for r in rows]}
        text = json.dumps(data, indent=1, ensure_ascii=False)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
