"""Joining and splitting (rawdev/ops/join.py), walked from one table: each op against an exact numpy reference
on the cpu and on the simulator (poisoned outputs) at random shapes with size-0/1 axes and non-contiguous
inputs; gradients by finite differences (cpu, float64) and cuda-vs-cpu gradients; PyTorch's error wording."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

from test_autograd import gradcheck

RNG = np.random.default_rng(11)


@pytest.fixture
def poisoned(dev):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def arr(shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 3).astype(dtype)


def place(a, device, noncontig):
    """a as a rawdev tensor on device; noncontig: the same values through a transposed view."""
    if noncontig and a.ndim >= 2:
        t = rawdev.from_numpy(np.ascontiguousarray(np.swapaxes(a, 0, -1))).to(device)
        return t.transpose(0, -1)
    return rawdev.from_numpy(np.ascontiguousarray(a)).to(device)


def _split_ref(a, s, d):
    if isinstance(s, list):
        return np.split(a, np.cumsum(s)[:-1], d)
    return np.split(a, range(s, a.shape[d], s), d)


# name -> (rawdev fn, numpy reference, list of input shapes); each fn returns a tensor or a tuple of tensors
CASES = {
    "cat0": (lambda a, b: rawdev.cat([a, b], 0), lambda a, b: np.concatenate([a, b], 0), [(3, 4), (0, 4)]),
    "cat1": (lambda a, b, c: rawdev.cat((a, b, c), dim=1), lambda a, b, c: np.concatenate([a, b, c], 1),
             [(2, 1, 3), (2, 5, 3), (2, 0, 3)]),
    "cat_neg": (lambda a, b: rawdev.concat([a, b], -1), lambda a, b: np.concatenate([a, b], -1), [(4, 3), (4, 1)]),
    "concatenate": (lambda a, b: rawdev.concatenate([a, b], axis=0), lambda a, b: np.concatenate([a, b]),
                    [(1, 5), (3, 5)]),
    "stack": (lambda a, b: rawdev.stack([a, b], 1), lambda a, b: np.stack([a, b], 1), [(3, 4), (3, 4)]),
    "stack_last": (lambda a, b: rawdev.stack([a, b], -1), lambda a, b: np.stack([a, b], -1), [(2, 0), (2, 0)]),
    "hstack": (lambda a, b: rawdev.hstack([a, b]), lambda a, b: np.hstack([a, b]), [(3, 2), (3, 4)]),
    "hstack1d": (lambda a, b: rawdev.hstack([a, b]), lambda a, b: np.hstack([a, b]), [(3,), (4,)]),
    "vstack": (lambda a, b: rawdev.vstack([a, b]), lambda a, b: np.vstack([a, b]), [(5,), (5,)]),
    "dstack": (lambda a, b: rawdev.dstack([a, b]), lambda a, b: np.dstack([a, b]), [(2, 3), (2, 3)]),
    "split_int": (lambda a: rawdev.split(a, 2, 1), lambda a: _split_ref(a, 2, 1), [(3, 5)]),
    "split_list": (lambda a: a.split([1, 0, 3], 0), lambda a: _split_ref(a, [1, 0, 3], 0), [(4, 2)]),
    "chunk": (lambda a: a.chunk(3, 1), lambda a: np.array_split(a, [3, 6], 1), [(2, 7)]),
    "tensor_split_n": (lambda a: rawdev.tensor_split(a, 3, 1), lambda a: np.array_split(a, 3, 1), [(2, 7)]),
    "tensor_split_idx": (lambda a: a.tensor_split([1, 4], 0), lambda a: np.split(a, [1, 4], 0), [(6, 2)]),
    "unbind": (lambda a: a.unbind(1), lambda a: [a[:, i] for i in range(a.shape[1])], [(3, 4)]),
    "repeat": (lambda a: a.repeat(2, 1, 3), lambda a: np.tile(a, (2, 1, 3)), [(3, 2)]),
    "repeat_same": (lambda a: a.repeat(1, 1), lambda a: a.copy(), [(3, 2)]),
    "tile": (lambda a: rawdev.tile(a, (2,)), lambda a: np.tile(a, (1, 2)), [(3, 2)]),
    "repeat_interleave": (lambda a: a.repeat_interleave(3, dim=0), lambda a: np.repeat(a, 3, 0), [(2, 3)]),
    "repeat_interleave_flat": (lambda a: rawdev.repeat_interleave(a, 2), lambda a: np.repeat(a, 2), [(2, 3)]),
    "repeat_interleave_t": (lambda a: a.repeat_interleave(rawdev.tensor([2, 0, 1]), dim=1),
                            lambda a: np.repeat(a, [2, 0, 1], 1), [(2, 3)]),
    "roll": (lambda a: rawdev.roll(a, 2, 1), lambda a: np.roll(a, 2, 1), [(3, 5)]),
    "roll_multi": (lambda a: a.roll((1, -2), (0, 1)), lambda a: np.roll(a, (1, -2), (0, 1)), [(3, 5)]),
    "roll_flat": (lambda a: a.roll(4), lambda a: np.roll(a, 4), [(3, 5)]),
    "flip": (lambda a: rawdev.flip(a, (0, 2)), lambda a: np.flip(a, (0, 2)), [(2, 3, 4)]),
    "flip_neg": (lambda a: a.flip(-1), lambda a: np.flip(a, -1), [(3, 1, 5)]),
    "fliplr": (lambda a: rawdev.fliplr(a), np.fliplr, [(3, 4)]),
    "flipud": (lambda a: a.flipud(), np.flipud, [(3, 4)]),
}
DIFFERENTIABLE = [n for n in CASES if n not in ("unbind",)]


def outputs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def check_values(name, device, noncontig):
    fn, ref, shapes = CASES[name]
    arrays = [arr(s) for s in shapes]
    got = outputs(fn(*[place(a, device, noncontig) for a in arrays]))
    want = outputs(ref(*arrays))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.device.type == rawdev.device(device).type
        assert tuple(g.shape) == w.shape, name
        assert np.array_equal(g.cpu().numpy(), w), name


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_cpu(name, noncontig):
    check_values(name, "cpu", noncontig)


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_cuda(name, noncontig, poisoned):
    check_values(name, "cuda", noncontig)


@pytest.mark.parametrize("seed", range(6))
def test_cat_random_shapes(seed, poisoned):
    """cat/stack/flip/repeat at random ranks and sizes (0, 1 and more), through transposed views, both devices."""
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 5))
    d = int(rng.integers(0, nd))
    base = [int(rng.choice([0, 1, 2, 3, 5])) for _ in range(nd)]
    parts = []
    for _ in range(int(rng.integers(1, 4))):
        s = list(base)
        s[d] = int(rng.choice([0, 1, 4]))
        parts.append(arr(s))
    want = np.concatenate(parts, d)
    dims = tuple(sorted(set(int(x) for x in rng.integers(0, nd, 2))))
    reps = tuple(int(x) for x in rng.integers(0, 3, nd))
    for device in ("cpu", "cuda"):
        ts = [place(p, device, bool(rng.integers(0, 2))) for p in parts]
        got = rawdev.cat(ts, d)
        assert np.array_equal(got.cpu().numpy(), want)
        assert np.array_equal(rawdev.stack([ts[0], ts[0]], d).cpu().numpy(), np.stack([parts[0]] * 2, d))
        assert np.array_equal(rawdev.flip(got, dims).cpu().numpy(), np.flip(want, dims))
        assert np.array_equal(got.repeat(*reps).cpu().numpy(), np.tile(want, reps))


def test_cat_mixed_dtypes_promote_and_legacy_empty(dev):
    for device in ("cpu", "cuda"):
        a = rawdev.tensor([[1, 2]], device=device)
        b = rawdev.tensor([[0.5, 1.5]], device=device)
        c = rawdev.cat([a, b])
        assert c.dtype is rawdev.float32 and c.tolist() == [[1.0, 2.0], [0.5, 1.5]]
        e = rawdev.tensor([], device=device)   # 1-D empty tensors are skipped, as PyTorch's legacy rule
        assert rawdev.cat([a, e], 1).tolist() == [[1, 2]]
        m = rawdev.tensor([True, False], device=device)
        assert rawdev.cat([m, m]).dtype is rawdev.bool
        h = rawdev.ones(2, dtype=rawdev.float16, device=device)
        assert rawdev.cat([h, h]).dtype is rawdev.float16


# ------------------------------------------------------------------ gradients
def _f64(shape):
    return rawdev.from_numpy(RNG.standard_normal(shape)).requires_grad_(True)


def _first(r):
    r = outputs(r)
    return r[1] if len(r) > 1 else r[0]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradcheck_cpu(name):
    fn, _, shapes = CASES[name]
    inputs = [_f64(s) for s in shapes]
    if _first(fn(*inputs)).numel() == 0:
        pytest.skip("no elements")
    live = [i for i, x in enumerate(inputs) if x.numel()]    # size-0 inputs ride along as constants

    def f(*xs):
        args = list(inputs)
        for i, x in zip(live, xs):
            args[i] = x
        return _first(fn(*args))
    gradcheck(f, *[inputs[i] for i in live])


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_cuda_gradients_match_cpu(name, dev):
    fn, _, shapes = CASES[name]
    arrays = [arr(s) for s in shapes]
    grads = {}
    for device in ("cpu", "cuda"):
        xs = [rawdev.from_numpy(a.copy()).to(device).requires_grad_(True) for a in arrays]
        out = _first(fn(*xs))
        if out.numel() == 0:
            pytest.skip("no elements")
        w = np.random.default_rng(3).standard_normal(tuple(out.shape)).astype(np.float32)
        out.backward(rawdev.from_numpy(w).to(device))
        grads[device] = [np.zeros(a.shape, np.float32) if x.grad is None else x.grad.cpu().numpy()
                         for x, a in zip(xs, arrays)]
    for gc, gg in zip(grads["cpu"], grads["cuda"]):
        assert gc.shape == gg.shape
        if gc.size:
            assert np.abs(gc - gg).max() <= 1e-4 * max(1.0, np.abs(gc).max())


def test_node_names():
    a = _f64((2, 3))
    assert type(rawdev.cat([a, a]).grad_fn).__name__ == "CatBackward0"
    assert type(rawdev.stack([a, a]).grad_fn).__name__ == "StackBackward0"
    assert type(a.flip(0).grad_fn).__name__ == "FlipBackward0"
    assert type(a.repeat(2, 2).grad_fn).__name__ == "RepeatBackward0"


# ------------------------------------------------------------------ errors users search for
def test_errors_match_pytorch():
    a, b = rawdev.zeros(2, 3), rawdev.zeros(2, 4)
    with pytest.raises(RuntimeError, match=r"^Sizes of tensors must match except in dimension 0\. Expected size 3 "
                                           r"but got size 4 for tensor number 1 in the list\.$"):
        rawdev.cat([a, b])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1. Expected size 2 but "
                                           "got size 3 for tensor number 1 in the list."):
        rawdev.cat([a, rawdev.zeros(3, 4)], 1)
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 and 1"):
        rawdev.cat([a, rawdev.zeros(3)])
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 0\) cannot be concatenated"):
        rawdev.cat([rawdev.tensor(1.0)])
    with pytest.raises(RuntimeError, match=r"expected a non-empty list of Tensors"):
        rawdev.cat([])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 "
                                           r"and \[2, 4\] at entry 1"):
        rawdev.stack([a, b])
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 2"):
        a.split([1, 2])
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        a.chunk(0)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        a.repeat(2)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        a.repeat_interleave(rawdev.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match="dims has duplicates"):
        a.flip((0, 0))
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        rawdev.fliplr(rawdev.zeros(3))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        rawdev.cat([a, a], 2)


def test_cat_devices_must_match(dev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        rawdev.cat([rawdev.zeros(2), rawdev.zeros(2, device="cuda")])
