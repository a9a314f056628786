"""Scans and sorting: cumsum, cumprod, logcumsumexp, cummax/cummin, sort/argsort/msort, topk, kthvalue, unique,
bincount, histc. Values against float64 numpy references written here on random shapes (size-0/1 dims, negative
dims, rows longer than a block, non-contiguous inputs), gradients by finite differences on the cpu in float64,
and the cuda path (simulator, poisoned outputs) against the cpu. Ties: values are compared, indices only where
the values are distinct (or must be stable)."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(5)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def _t(a, dev="cpu", grad=False, transpose=False):
    a = np.asarray(a)
    if transpose and a.ndim >= 2:
        t = rawdev.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).to(dev).transpose(-1, -2)
    else:
        t = rawdev.tensor(a).to(dev)
    return t.requires_grad_() if grad else t


def _np(t):
    return np.asarray(t.detach().cpu())


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    if a.size == 0:
        return 0.0
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def _fd_grad(f, x, w, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = ((f(xp) * w).sum() - (f(xm) * w).sum()) / (2 * eps)
    return g


# ---------------------------------------------------------------- references (explicit loops along the dim)
def _along(a, dim, row_fn):
    a = np.moveaxis(a, dim, -1)
    out = np.empty(a.shape, np.float64)
    for idx in np.ndindex(a.shape[:-1]):
        out[idx] = row_fn(a[idx])
    return np.moveaxis(out, -1, dim)


def _running(op):
    def row(r):
        out, acc = np.empty(len(r)), None
        for i, v in enumerate(r):
            acc = v if acc is None else op(acc, v)
            out[i] = acc
        return out
    return row


SCANS = {
    "cumsum": (lambda x, d: rawdev.cumsum(x, d), _running(lambda a, b: a + b)),
    "cumprod": (lambda x, d: x.cumprod(d), _running(lambda a, b: a * b)),
    "logcumsumexp": (lambda x, d: rawdev.logcumsumexp(x, d), _running(lambda a, b: np.log(np.exp(a) + np.exp(b)))),
    "cummax": (lambda x, d: rawdev.cummax(x, d).values, _running(max)),
    "cummin": (lambda x, d: x.cummin(d)[0], _running(min)),
}
LAYOUTS = [((5, 7), 1), ((5, 7), 0), ((3, 4, 6), -2), ((1, 9), 1), ((6, 1), -1), ((0, 4), 1), ((2, 300), 1),
           ((2, 3, 5), 0)]


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scan_values_against_float64(name):
    f, row = SCANS[name]
    for shape, dim in LAYOUTS:
        a = RNG.standard_normal(shape) * (0.2 if name == "cumprod" else 1.0) + (1.0 if name == "cumprod" else 0.0)
        want = _along(a, dim, row)
        got = f(_t(a, transpose=True), dim)
        assert tuple(got.shape) == shape and got.dtype is rawdev.float64
        assert _rel(_np(got), want) < 1e-12, (name, shape, dim)
        assert _rel(_np(f(_t(a.astype(np.float32)), dim)), want) < 1e-5, (name, shape, dim)


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scan_gradients_by_finite_differences(name):
    f, row = SCANS[name]
    for shape, dim in [((4, 6), 1), ((3, 2, 5), 0), ((1, 5), -1)]:
        a = RNG.standard_normal(shape) + (1.5 if name == "cumprod" else 0.0)
        x = _t(a, grad=True, transpose=True)
        w = RNG.standard_normal(shape)
        (f(x, dim) * rawdev.tensor(w)).sum().backward()
        fd = _fd_grad(lambda b, dim=dim: _along(b, dim, row), a, w)
        assert _rel(_np(x.grad), fd) < 1e-6, (name, shape, dim)


def test_cumprod_gradient_with_zeros_and_integer_scans():
    a = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    x = _t(a, grad=True)
    x.cumprod(0).sum().backward()
    # d/dx_i sum_j prod_{k<=j} x_k: x0 -> 1 + x1 + ... = 1; x1 -> x0 + x0 x2 + ... = 2 + 6; the rest 0
    want = [1.0, 8.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(_np(x.grad), want)
    c = rawdev.cumsum(rawdev.tensor([1, 2, 3], dtype=rawdev.int32), 0)
    assert c.dtype is rawdev.int64 and _np(c).tolist() == [1, 3, 6]
    assert rawdev.cumsum(rawdev.tensor([1, 2]), 0, dtype=rawdev.float32).dtype is rawdev.float32
    assert _np(rawdev.cumsum(rawdev.tensor(3.0), 0)).tolist() == 3.0


def test_cummax_cummin_indices_take_the_later_tie_and_nan():
    v, i = rawdev.cummax(rawdev.tensor([1.0, 3.0, 3.0, 2.0, 3.0]), 0)
    assert _np(v).tolist() == [1, 3, 3, 3, 3] and _np(i).tolist() == [0, 1, 2, 2, 4]
    v, i = rawdev.cummin(rawdev.tensor([2.0, 1.0, 1.0, 3.0, 1.0]), 0)
    assert _np(i).tolist() == [0, 1, 2, 2, 4]
    v, i = rawdev.cummax(rawdev.tensor([1.0, float("nan"), 5.0]), 0)
    assert np.isnan(_np(v)[1:]).all() and _np(i).tolist() == [0, 1, 1]


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scan_cuda_matches_cpu(name, driver, poison):
    f, _ = SCANS[name]
    for shape, dim in LAYOUTS:
        a = (RNG.standard_normal(shape) * (0.2 if name == "cumprod" else 1.0)
             + (1.0 if name == "cumprod" else 0.0)).astype(np.float32)
        w = RNG.standard_normal(shape).astype(np.float32)
        outs = {}
        for dev in ("cpu", "cuda"):
            x = _t(a, dev, grad=True, transpose=True)
            y = f(x, dim)
            assert y.device.type == dev
            (y * _t(w, dev)).sum().backward()
            outs[dev] = _np(y), _np(x.grad)
        assert _rel(outs["cuda"][0], outs["cpu"][0]) < 1e-4, (name, shape, dim)
        assert _rel(outs["cuda"][1], outs["cpu"][1]) < 1e-4, (name, shape, dim)


# ---------------------------------------------------------------- sorting
SORT_LAYOUTS = [((5, 7), -1), ((6, 4), 0), ((3, 4, 5), 1), ((1, 9), 1), ((4, 1), 1), ((0, 3), 1), ((2, 700), 1)]


def _check_sorted(a, v, i, dim, descending):
    """v is a's values sorted along dim; i points at them; where values are distinct i is exact."""
    want = np.sort(a, axis=dim)
    if descending:
        want = np.flip(want, axis=dim)
    np.testing.assert_array_equal(v, want)
    np.testing.assert_array_equal(np.take_along_axis(a, i, dim), v)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort_values_and_indices(descending, driver, poison):
    for shape, dim in SORT_LAYOUTS:
        a = RNG.standard_normal(shape).astype(np.float32)
        if a.size > 4:
            a.reshape(-1)[:3] = a.reshape(-1)[3]    # ties
        for dev in ("cpu", "cuda"):
            x = _t(a, dev, transpose=True)
            v, i = rawdev.sort(x, dim, descending=descending)
            assert v.device.type == dev and i.dtype is rawdev.int64
            _check_sorted(a, _np(v), _np(i), dim, descending)
            np.testing.assert_array_equal(_np(x.argsort(dim, descending)), _np(i))


def test_sort_stable_ties_and_nan_order():
    a = np.array([2.0, 1.0, 2.0, np.nan, 1.0, 2.0])
    v, i = rawdev.sort(_t(a), stable=True)
    assert _np(i).tolist() == [1, 4, 0, 2, 5, 3]
    v, i = rawdev.sort(_t(a), descending=True, stable=True)
    assert _np(i).tolist() == [3, 0, 2, 5, 1, 4]
    assert np.isnan(_np(v)[0])
    v, i = rawdev.sort(rawdev.tensor([3, 1, 2], dtype=rawdev.int32), descending=True)
    assert _np(v).tolist() == [3, 2, 1] and v.dtype is rawdev.int32
    np.testing.assert_array_equal(_np(rawdev.msort(_t([[3.0, 1.0], [1.0, 2.0]]))), [[1.0, 1.0], [3.0, 2.0]])


@pytest.mark.parametrize("largest", [True, False])
def test_topk_and_kthvalue(largest, driver, poison):
    for shape, dim in SORT_LAYOUTS[:5] + [((2, 700), 1)]:
        n = shape[dim]
        a = RNG.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)   # distinct values
        for dev in ("cpu", "cuda"):
            x = _t(a, dev, transpose=True)
            k = min(3, n)
            v, i = rawdev.topk(x, k, dim, largest=largest)
            want = np.sort(a, axis=dim)
            want = np.take(np.flip(want, dim) if largest else want, range(k), axis=dim)
            np.testing.assert_array_equal(_np(v), want)
            np.testing.assert_array_equal(np.take_along_axis(a, _np(i), dim), want)
            kk = (n + 1) // 2
            v, i = x.kthvalue(kk, dim, keepdim=True)
            kth = np.take(np.sort(a, axis=dim), [kk - 1], axis=dim)
            np.testing.assert_array_equal(_np(v), kth)
            np.testing.assert_array_equal(np.take_along_axis(a, _np(i), dim), kth)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        rawdev.topk(rawdev.ones(3), 4)


def test_selection_gradients_scatter_to_the_picked_elements(driver):
    a = RNG.permutation(40).reshape(5, 8).astype(np.float64)
    w = RNG.standard_normal((5, 8))
    grads = {}
    for dev, dt in (("cpu", np.float64), ("cuda", np.float32)):
        x = _t(a.astype(dt), dev, grad=True, transpose=True)
        wt = _t(w.astype(dt), dev)
        y = (rawdev.sort(x, 1)[0] * wt).sum() + (rawdev.topk(x, 3, 0)[0] * wt[:3]).sum() \
            + (x.kthvalue(2, 1)[0] * wt[:, 0]).sum() + (rawdev.cummax(x, 1)[0] * wt).sum()
        y.backward()
        grads[dev] = _np(x.grad)
    # finite differences on the cpu (distinct values: the selection is locally constant)
    def f(b):
        s = np.sort(b, 1)
        t = -np.sort(-b, 0)[:3]
        k = np.sort(b, 1)[:, 1]
        c = np.maximum.accumulate(b, 1)
        return (s * w).sum() + (t * w[:3]).sum() + (k * w[:, 0]).sum() + (c * w).sum()
    fd = _fd_grad(f, a, np.ones(()))
    assert _rel(grads["cpu"], fd) < 1e-6
    assert _rel(grads["cuda"], grads["cpu"]) < 1e-4


# ---------------------------------------------------------------- unique / bincount / histc
def test_unique_forms(driver):
    a = RNG.integers(0, 6, (4, 5))
    for dev in ("cpu", "cuda"):
        x = _t(a, dev)
        u, inv, cnt = rawdev.unique(x, return_inverse=True, return_counts=True)
        ref = sorted(set(a.reshape(-1).tolist()))
        assert _np(u).tolist() == ref and u.device.type == dev
        np.testing.assert_array_equal(np.array(ref)[_np(inv)], a)
        assert _np(cnt).tolist() == [int((a == r).sum()) for r in ref]
        assert _np(x.unique()).tolist() == ref
    rows = np.array([[1, 2], [0, 5], [1, 2]])
    u, inv = rawdev.unique(_t(rows), dim=0, return_inverse=True)
    assert _np(u).tolist() == [[0, 5], [1, 2]] and _np(inv).tolist() == [1, 0, 1]


def test_bincount_and_histc(driver):
    a = RNG.integers(0, 7, 50)
    w = RNG.standard_normal(50).astype(np.float32)
    for dev in ("cpu", "cuda"):
        c = rawdev.bincount(_t(a, dev))
        assert c.dtype is rawdev.int64 and _np(c).tolist() == [int((a == k).sum()) for k in range(a.max() + 1)]
        c = rawdev.bincount(_t(a, dev), _t(w, dev), minlength=10)
        assert c.dtype is rawdev.float32 and c.shape == (10,)
        np.testing.assert_allclose(_np(c), [w[a == k].sum() for k in range(10)], rtol=1e-5, atol=1e-6)
        h = rawdev.histc(_t(np.array([1.0, 2.0, 1.0, 3.0, -1.0, 4.0], np.float32), dev), bins=4, min=0, max=3)
        assert _np(h).tolist() == [0.0, 2.0, 1.0, 1.0] and h.dtype is rawdev.float32
        h = rawdev.histc(_t(np.array([1.0, 2.0, 1.0], np.float32), dev), bins=4)
        assert _np(h).tolist() == [2.0, 0.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        rawdev.bincount(rawdev.tensor([-1, 2]))
    assert _np(rawdev.bincount(rawdev.tensor([], dtype=rawdev.int64))).tolist() == []


def test_cumprod_kernel_path_without_grad_and_long_rows(driver, poison):
    """cumsum (always) and cumprod (no gradient needed) on cuda float32 run the one-block-per-row scan kernel:
    rows longer than its 256-thread chunk, several chunks, a carry across them."""
    for shape, dim in [((3, 700), 1), ((513, 2), 0), ((4, 257), -1), ((2, 1), 1)]:
        a = (1.0 + RNG.standard_normal(shape) * 0.01).astype(np.float32)
        with rawdev.no_grad():
            p = rawdev.cumprod(_t(a, "cuda", transpose=True), dim)
            s = rawdev.cumsum(_t(a, "cuda", transpose=True), dim)
        assert _rel(_np(p), np.cumprod(a.astype(np.float64), dim)) < 1e-5
        assert _rel(_np(s), np.cumsum(a.astype(np.float64), dim)) < 1e-5


def test_sort_kernel_at_its_row_limit_and_the_host_fallback_beyond(driver, poison):
    """Rows up to 2048 are sorted by the shared-memory bitonic kernel; a longer row takes the host order path.
    Both give the stable order (ties by index) and the same gradients."""
    from rawdev.ops.cuda_scan_sort import SORT_MAX
    for n in (SORT_MAX, SORT_MAX + 1):
        a = RNG.integers(0, 50, (1, n)).astype(np.float32)     # many ties
        for descending in (False, True):
            x = _t(a, "cuda", grad=True)
            v, i = rawdev.sort(x, 1, descending=descending)
            key = -a[0] if descending else a[0]
            want = np.argsort(key, kind="stable")
            assert _np(i)[0].tolist() == want.tolist()
            np.testing.assert_array_equal(_np(v)[0], a[0][want])
            w = np.arange(n, dtype=np.float32)[None]
            (v * _t(w, "cuda")).sum().backward()
            g = np.zeros(n, np.float32)
            g[want] = w[0]
            np.testing.assert_array_equal(_np(x.grad)[0], g)
