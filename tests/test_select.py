"""The selection family: where, masked_fill, clamp/clip/clamp_min/clamp_max, maximum/minimum (and max(a, b)), nonzero,
argwhere, unravel_index (with unique_consecutive and h/v/dsplit beside them). Values against float64 (or exact)
numpy references written here, gradients by finite differences on the cpu in float64, the cuda path (simulator)
against the cpu on broadcast and non-contiguous inputs with poisoned outputs, every dtype for where/masked_fill, and
PyTorch's error wording."""

import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

from _device_arrays import num, on
from _refs import rng

RNG = np.random.default_rng(2024)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def _t(a, dev="cpu", grad=False, transpose=False):
    """A tensor with a's values; transpose=True makes it a non-contiguous view with the same values."""
    a = np.asarray(a)
    if transpose and a.ndim == 2:
        t = rawdev.tensor(np.ascontiguousarray(a.T)).to(dev).t()
    else:
        t = rawdev.tensor(a).to(dev)
    return t.requires_grad_() if grad else t


def _fd_grad(f, x, eps=1e-6):
    """d(sum(f(x) * w))/dx by central differences, float64, for a fixed random weight w."""
    w = RNG.standard_normal(np.shape(f(x)))
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = ((f(xp) * w).sum() - (f(xm) * w).sum()) / (2 * eps)
    return g, w


SHAPES = [((5, 7), (5, 7)), ((5, 7), (1, 7)), ((4, 1, 3), (5, 1)), ((0, 3), (1, 3)), ((1,), (6, 1))]


# ------------------------------------------------------------------------------------------------ values
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_where_matches_numpy_on_cpu_and_cuda(sa, sb, driver, poison):
    a, b = RNG.standard_normal(sa).astype(np.float32), RNG.standard_normal(sb).astype(np.float32)
    c = RNG.random(np.broadcast_shapes(sa, sb)) > 0.5
    ref = np.where(c, a.astype(np.float64), b)
    for dev in ("cpu", "cuda"):
        got = rawdev.where(_t(c, dev), _t(a, dev, transpose=True), _t(b, dev))
        assert tuple(got.shape) == ref.shape and got.dtype is rawdev.float32
        np.testing.assert_array_equal(got.cpu().numpy(), ref.astype(np.float32))


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                                "uint8", "bool"])
def test_where_and_masked_fill_every_dtype(dt, driver, poison):
    dtype = getattr(rawdev, dt)
    a = rawdev.tensor(RNG.integers(0, 2 if dt == "bool" else 100, (6, 5))).to(dtype)
    b = rawdev.tensor(RNG.integers(0, 2 if dt == "bool" else 100, (6, 5))).to(dtype)
    c = RNG.random((6, 5)) > 0.5
    value = True if dt == "bool" else 7
    ref_w = np.where(c, a.float().numpy(), b.float().numpy())
    ref_m = np.where(c, value, a.float().numpy())
    for dev in ("cpu", "cuda"):
        cc = rawdev.tensor(c).to(dev)
        w = rawdev.where(cc, a.to(dev), b.to(dev))
        m = a.to(dev).masked_fill(cc, value)
        assert w.dtype is dtype and m.dtype is dtype
        np.testing.assert_array_equal(w.cpu().float().numpy(), ref_w)
        np.testing.assert_array_equal(m.cpu().float().numpy(), ref_m)


def test_where_with_scalars_promotes_as_pytorch(driver):
    x = rawdev.tensor([[1, -2], [3, -4]])
    for dev in ("cpu", "cuda"):
        xi = x.to(dev)
        assert rawdev.where(xi > 0, xi, 0).dtype is rawdev.int64
        y = rawdev.where(xi > 0, xi, 0.5)
        assert y.dtype is rawdev.float32
        np.testing.assert_array_equal(y.cpu().numpy(), [[1, 0.5], [3, 0.5]])
        z = rawdev.where(xi > 0, 1.0, -1.0)
        assert z.dtype is rawdev.float32 and z.cpu().numpy().tolist() == [[1, -1], [1, -1]]
        assert xi.where(xi > 0, rawdev.zeros_like(xi)).cpu().numpy().tolist() == [[1, 0], [3, 0]]


def test_masked_fill_causal_mask_and_in_place(driver, poison):
    T = 6
    tril = rawdev.tril(rawdev.ones(T, T))
    for dev in ("cpu", "cuda"):
        s = rawdev.tensor(RNG.standard_normal((2, T, T)).astype(np.float32)).to(dev)
        out = s.masked_fill(tril.to(dev)[:T, :T] == 0, float("-inf"))
        ref = np.where(np.tril(np.ones((T, T))) == 0, -np.inf, s.cpu().numpy())
        np.testing.assert_array_equal(out.cpu().numpy(), ref)
        s2 = s.clone()
        assert s2.masked_fill_(tril.to(dev) == 0, 0.0) is s2
        np.testing.assert_array_equal(s2.cpu().numpy(), np.where(np.tril(np.ones((T, T))) == 0, 0, s.cpu().numpy()))
        before = s[0].cpu().numpy()[:, 0].copy()
        v = s[0].t()[0]                       # masked_fill_ on a strided view writes the base
        v.masked_fill_(v > 0, 9.0)
        np.testing.assert_array_equal(s[0].cpu().numpy()[:, 0], np.where(before > 0, 9.0, before))


CLAMP_CASES = [(-0.5, 0.5), (0.0, None), (None, 0.25), (0.3, -0.3)]   # the last: min > max gives max everywhere


@pytest.mark.parametrize("lo,hi", CLAMP_CASES)
def test_clamp_scalars(lo, hi, driver, poison):
    x = RNG.standard_normal((9, 13)).astype(np.float32)
    x[0, 0] = np.nan
    ref = x.astype(np.float64)
    if lo is not None:
        ref = np.where(ref < lo, lo, ref)
    if hi is not None:
        ref = np.where(ref > hi, hi, ref)
    for dev in ("cpu", "cuda"):
        got = rawdev.clamp(_t(x, dev, transpose=True), lo, hi).cpu().numpy()
        np.testing.assert_array_equal(got, ref.astype(np.float32))
        assert np.isnan(got[0, 0])
        np.testing.assert_array_equal(rawdev.clip(_t(x, dev), lo, hi).cpu().numpy(), got)


def test_clamp_min_max_aliases_and_int_tensors(driver):
    x = rawdev.tensor([[-3, 5], [2, 9]])
    assert rawdev.clamp(x, 0, 4).dtype is rawdev.int64
    assert rawdev.clamp(x, 0, 4).tolist() == [[0, 4], [2, 4]]
    assert rawdev.clamp(x, 0.5).dtype is rawdev.float32
    assert x.clamp_min(0).tolist() == [[0, 5], [2, 9]] and x.clamp_max(3).tolist() == [[-3, 3], [2, 3]]
    y = rawdev.tensor([1.0, -2.0]).cuda()
    assert y.clamp_(min=0) is y and y.cpu().tolist() == [1.0, 0.0]


def test_clamp_with_tensor_bounds(driver, poison):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    lo = RNG.standard_normal((1, 6)).astype(np.float32) - 0.5
    hi = lo + 1.0
    ref = np.minimum(np.maximum(x, lo), hi)
    for dev in ("cpu", "cuda"):
        got = rawdev.clamp(_t(x, dev), _t(lo, dev), _t(hi, dev))
        np.testing.assert_array_equal(got.cpu().numpy(), ref)


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_maximum_minimum_and_elementwise_max(sa, sb, driver, poison):
    a, b = RNG.standard_normal(sa).astype(np.float32), RNG.standard_normal(sb).astype(np.float32)
    if a.size:
        a.reshape(-1)[0] = np.nan
    for dev in ("cpu", "cuda"):
        ta, tb = _t(a, dev, transpose=True), _t(b, dev)
        np.testing.assert_array_equal(rawdev.maximum(ta, tb).cpu().numpy(), np.maximum(a, b))
        np.testing.assert_array_equal(rawdev.minimum(ta, tb).cpu().numpy(), np.minimum(a, b))
        np.testing.assert_array_equal(rawdev.max(ta, tb).cpu().numpy(), np.maximum(a, b))
        np.testing.assert_array_equal(rawdev.min(ta, tb).cpu().numpy(), np.minimum(a, b))


def test_nonzero_and_one_argument_where(driver):
    c = RNG.random((4, 5)) > 0.6
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(c).to(dev)
        nz = rawdev.nonzero(t)
        assert nz.dtype is rawdev.int64 and nz.device == t.device
        np.testing.assert_array_equal(nz.cpu().numpy(), np.argwhere(c))
        for got, ref in zip(rawdev.where(t), np.nonzero(c)):
            np.testing.assert_array_equal(got.cpu().numpy(), ref)
        for got, ref in zip(t.nonzero(as_tuple=True), np.nonzero(c)):
            np.testing.assert_array_equal(got.cpu().numpy(), ref)


# --------------------------------------------------------------------------------------------- gradients
def test_where_gradients_finite_differences():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((1, 4))
    c = RNG.random((3, 4)) > 0.5
    ga_ref, w = _fd_grad(lambda z: np.where(c, z, b), a)
    ta, tb = _t(a, grad=True), _t(b, grad=True)
    (rawdev.where(_t(c), ta, tb) * _t(w)).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), ga_ref, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tb.grad.numpy(), (np.where(c, 0, w)).sum(0, keepdims=True), rtol=1e-12, atol=1e-14)
    assert rawdev.where(_t(c), ta, tb).grad_fn.name() == "WhereBackward0"


@pytest.mark.parametrize("fn,name", [
    (lambda t: rawdev.clamp(t, -0.4, 0.6), "ClampBackward1"),
    (lambda t: t.clamp(min=0.1), "ClampMinBackward0"),
    (lambda t: t.masked_fill(t > 0.5, 2.0), "MaskedFillBackward0"),
])
def test_unary_form_gradients_finite_differences(fn, name):
    x = RNG.standard_normal((5, 6))
    x = np.where(np.abs(x - 0.6) < 1e-3, 0.7, x)    # keep finite differences off the kinks
    ref, w = _fd_grad(lambda z: fn(_t(z)).numpy(), x)
    t = _t(x, grad=True)
    out = fn(t)
    assert out.grad_fn.name() == name
    (out * _t(w)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), ref, rtol=1e-6, atol=1e-8)


def test_maximum_gradient_splits_ties_and_cuda_matches_cpu(driver):
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    b = RNG.standard_normal((1, 5)).astype(np.float32)
    a[0] = b[0]                                     # ties: half each
    grads = {}
    for dev in ("cpu", "cuda"):
        ta, tb = _t(a, dev, grad=True), _t(b, dev, grad=True)
        w = _t(RNG.standard_normal((4, 5)).astype(np.float32) if dev == "cpu" else grads["w"], dev)
        grads["w"] = w.cpu().numpy()
        (rawdev.maximum(ta, tb) * w).sum().backward()
        grads[dev] = (ta.grad.cpu().numpy(), tb.grad.cpu().numpy())
    wv = grads["w"]
    win = np.where(a == b, 0.5, (a > b) * 1.0)
    np.testing.assert_allclose(grads["cpu"][0], wv * win, rtol=1e-6)
    np.testing.assert_allclose(grads["cpu"][1], (wv * (1 - win)).sum(0, keepdims=True), rtol=1e-5)
    for g_cpu, g_cuda in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(g_cuda, g_cpu, rtol=1e-4, atol=1e-6)


def test_cuda_gradients_match_cpu(driver):
    x = RNG.standard_normal((7, 9)).astype(np.float32)
    c = RNG.random((7, 9)) > 0.5
    out = {}
    for dev in ("cpu", "cuda"):
        t = _t(x, dev, grad=True)
        y = rawdev.where(_t(c, dev), t * 2, t.clamp(-0.5, 0.5)).masked_fill(t > 1.5, 0.0)
        (y * y).sum().backward()
        out[dev] = t.grad.cpu().numpy()
    np.testing.assert_allclose(out["cuda"], out["cpu"], rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------------------------------ errors
def test_errors_use_pytorch_wording():
    x = rawdev.ones(3)
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor "
                                           "with dtype Float"):
        rawdev.where(x, x, x)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask with dtype float"):
        x.masked_fill(x, 0)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        rawdev.clamp(x)
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        rawdev.maximum(x, 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.masked_fill(x > 0, rawdev.ones(2))


def test_indices_and_splits(driver):
    r = rng()
    runs = np.repeat(r.integers(0, 4, 12), r.integers(1, 4, 12))
    m = r.integers(0, 2, (3, 4, 5)) * r.integers(1, 9, (3, 4, 5))
    flat = r.integers(-60, 60, 10)
    for dev in ("cpu", "cuda"):
        out, inv, counts = rawdev.unique_consecutive(on(runs, dev), return_inverse=True, return_counts=True)
        keep = np.concatenate([[True], runs[1:] != runs[:-1]])
        assert num(out).tolist() == runs[keep].tolist()
        assert num(out)[num(inv)].tolist() == runs.tolist()
        assert num(counts).tolist() == np.diff(np.concatenate([np.nonzero(keep)[0], [runs.size]])).tolist()
        assert num(rawdev.argwhere(on(m, dev))).tolist() == np.argwhere(m).tolist()
        got = rawdev.unravel_index(on(flat, dev), (3, 4, 5))
        want = np.unravel_index(np.where(flat < 0, flat + 60, flat), (3, 4, 5))
        assert [num(g).tolist() for g in got] == [w.tolist() for w in want]
        ar = np.arange(24.0).reshape(2, 3, 4)
        t = on(ar, dev)
        for ours, theirs, k in ((rawdev.hsplit, np.hsplit, 3), (rawdev.vsplit, np.vsplit, 2),
                                (rawdev.dsplit, np.dsplit, 2)):
            assert [num(p).tolist() for p in ours(t, k)] == [p.tolist() for p in theirs(ar, k)]
        assert num(rawdev.ravel(t.transpose(0, 2))).tolist() == np.ravel(ar.transpose(2, 1, 0)).tolist()
        assert num(rawdev.narrow_copy(t, 2, 1, 2)).tolist() == ar[:, :, 1:3].tolist()
