"""elementwise.ptx: activations forward/backward, arithmetic, fill/copy, f16/bf16 casts."""
import math

import numpy as np
import pytest

from test_kernels_util import Gpu, cdiv, elem_relerr, relerr

rng = np.random.default_rng(7)
SIZES = [1, 1000, 4099]
erf = np.vectorize(math.erf)
S2PI = math.sqrt(2 / math.pi)


def launch_cfg(n):
    return min(cdiv(n, 256), 7), 256   # few blocks: the grid-stride loop runs several times


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(S2PI * (x + 0.044715 * x ** 3)))


def gelu_tanh_grad(x):
    t = np.tanh(S2PI * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * S2PI * (1 + 3 * 0.044715 * x * x)


def gelu_erf(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_erf_grad(x):
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


SLOPE = 0.1
# name: (reference on float64 input, extra scalar args)
FWD = {
    "relu_fwd": (lambda x: np.maximum(x, 0), []),
    "leaky_relu_fwd": (lambda x: np.where(x > 0, x, SLOPE * x), [SLOPE]),
    "gelu_tanh_fwd": (gelu_tanh, []),
    "gelu_erf_fwd": (gelu_erf, []),
    "tanh_fwd": (np.tanh, []),
    "sigmoid_fwd": (sigmoid, []),
}
# name: (saved = f(x), dx reference from (dy, x), extra args)
BWD = {
    "relu_bwd": (lambda x: x, lambda dy, x: dy * (x > 0), []),
    "leaky_relu_bwd": (lambda x: x, lambda dy, x: dy * np.where(x > 0, 1, SLOPE), [SLOPE]),
    "gelu_tanh_bwd": (lambda x: x, lambda dy, x: dy * gelu_tanh_grad(x), []),
    "gelu_erf_bwd": (lambda x: x, lambda dy, x: dy * gelu_erf_grad(x), []),
    "tanh_bwd": (np.tanh, lambda dy, x: dy * (1 - np.tanh(x) ** 2), []),
    "sigmoid_bwd": (sigmoid, lambda dy, x: dy * sigmoid(x) * (1 - sigmoid(x)), []),
}


def inputs(n):
    x = rng.standard_normal(n) * 3
    x[: min(n, 4)] = [8.5, -9.0, 0.3, -0.02][: min(n, 4)]
    return x.astype(np.float32)


@pytest.mark.parametrize("name", sorted(FWD))
@pytest.mark.parametrize("n", SIZES)
def test_activation_fwd(dev, name, n):
    g = Gpu(dev)
    f, extra = FWD[name]
    x = inputs(n)
    y = g.poisoned(n)
    g.run(name, *launch_cfg(n), [y, g.put(x), *extra, n])
    assert elem_relerr(g.get(y, n), f(x.astype(np.float64))) < 1e-5


@pytest.mark.parametrize("name", sorted(BWD))
@pytest.mark.parametrize("n", SIZES)
def test_activation_bwd(dev, name, n):
    g = Gpu(dev)
    saved_fn, ref, extra = BWD[name]
    x = inputs(n)
    saved = saved_fn(x.astype(np.float64)).astype(np.float32)
    dy = rng.standard_normal(n).astype(np.float32)
    dx = g.poisoned(n)
    g.run(name, *launch_cfg(n), [dx, g.put(dy), g.put(saved), *extra, n])
    if name in ("tanh_bwd", "sigmoid_bwd"):   # the kernel sees the float32-rounded saved output
        s = saved.astype(np.float64)
        want = dy * (1 - s * s) if name == "tanh_bwd" else dy * s * (1 - s)
    else:
        want = ref(dy.astype(np.float64), x.astype(np.float64))
    got = g.get(dx, n)
    # gelu' crosses zero (x ~ -0.75), where float32 cancellation makes per-element relative error
    # meaningless: compare in norm, and per element against the size of the terms.
    assert relerr(got, want) < 1e-5
    assert np.abs(got - want).max() <= 1e-5 * np.abs(dy).max()


@pytest.mark.parametrize("n", SIZES)
def test_arithmetic(dev, n):
    g = Gpu(dev)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    bx, by = g.put(x), g.put(y)
    X, Y = x.astype(np.float64), y.astype(np.float64)
    cfg = launch_cfg(n)
    for name, args, ref in [("add", [bx, by], X + Y), ("mul", [bx, by], X * Y), ("scale", [bx, -1.5], -1.5 * X),
                            ("copy", [bx], X)]:
        z = g.poisoned(n)
        g.run(name, *cfg, [z, *args, n])
        assert elem_relerr(g.get(z, n), ref) < 1e-6, name
    z = g.put(y)
    g.run("axpy", *cfg, [z, bx, 0.25, n])
    assert elem_relerr(g.get(z, n), 0.25 * X + Y, floor=1e-4) < 1e-6
    g.run("fill", *cfg, [z, 3.25, n])
    assert (g.get(z, n) == 3.25).all()
    g.run("add", *cfg, [bx, bx, by, n])          # in place (z aliases x)
    assert elem_relerr(g.get(bx, n), X + Y) < 1e-6


def bf16_rne(x):
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


@pytest.mark.parametrize("n", SIZES)
def test_casts(dev, n):
    g = Gpu(dev)
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e6, 65520.0, 3.0e38, 1e-8, 1 + 2 ** -8, 1 + 3 * 2 ** -8],
                       np.float32)
    x[: min(n, len(special))] = special[: min(n, len(special))]
    bx, cfg = g.put(x), launch_cfg(n)
    h = g.poisoned(n, np.uint16)
    g.run("cast_f32_f16", *cfg, [h, bx, n])
    hv = g.get(h, n, np.uint16)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    assert np.array_equal(hv.view(np.float16), want, equal_nan=True)
    back = g.poisoned(n)
    g.run("cast_f16_f32", *cfg, [back, h, n])
    assert np.array_equal(g.get(back, n), want.astype(np.float32), equal_nan=True)
    b = g.poisoned(n, np.uint16)
    g.run("cast_f32_bf16", *cfg, [b, bx, n])
    bv = g.get(b, n, np.uint16)
    assert np.array_equal(bv, bf16_rne(x))
    g.run("cast_bf16_f32", *cfg, [back, b, n])
    assert np.array_equal(g.get(back, n), (bv.astype(np.uint32) << 16).view(np.float32), equal_nan=True)
