"""The reductions composed from declared ops (rawdev/ops/reduce_composed.py): prod, var/std (+ var_mean/std_mean),
norm, logsumexp, amax/amin, all/any, count_nonzero, nansum/nanmean, median/mode, and the axis= alias. Values against
float64 numpy references written here, on random shapes with size-0/1 dims, dim tuples, negative dims, keepdim and
non-contiguous (transposed) inputs; gradients by finite differences on the cpu in float64; the cuda path (simulator)
against the cpu with poisoned outputs, values and gradients within 1e-4."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(11)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def _t(a, dev="cpu", grad=False, transpose=False):
    """A tensor with a's values; transpose=True makes it a non-contiguous view (last two dims) of them."""
    a = np.asarray(a)
    if transpose and a.ndim >= 2:
        t = rawdev.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).to(dev).transpose(-1, -2)
        assert not t.is_contiguous() or min(a.shape[-2:]) <= 1
    else:
        t = rawdev.tensor(a).to(dev)
    return t.requires_grad_() if grad else t


def _np(t):
    return np.asarray(t.detach().cpu())


def _fd_grad(f, x, w, eps=1e-6):
    """d(sum(f(x) * w))/dx by central differences in float64."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = ((f(xp) * w).sum() - (f(xm) * w).sum()) / (2 * eps)
    return g


def _rel(a, b):
    """Relative error; NaNs must sit at the same places (var over one element is NaN, as PyTorch's)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    nan = np.isnan(b)
    assert (np.isnan(a) == nan).all()
    a, b = a[~nan], b[~nan]
    if a.size == 0:
        return 0.0
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


# ---------------------------------------------------------------- independent float64 references
def _ref_dims(a, dim):
    if dim is None or dim == ():
        return tuple(range(a.ndim))
    return tuple(d % a.ndim for d in ((dim,) if isinstance(dim, int) else dim))


def ref_prod(a, dim, keepdim):
    out = np.ones([1 if i in _ref_dims(a, dim) else s for i, s in enumerate(a.shape)])
    for idx in np.ndindex(a.shape):
        o = tuple(0 if i in _ref_dims(a, dim) else j for i, j in enumerate(idx))
        out[o] *= a[idx]
    return out if keepdim else out.reshape([s for i, s in enumerate(a.shape) if i not in _ref_dims(a, dim)])


def ref_var(a, dim, keepdim, correction=1):
    dims = _ref_dims(a, dim)
    n = int(np.prod([a.shape[d] for d in dims]))
    mu = a.sum(axis=dims, keepdims=True) / n
    s = ((a - mu) ** 2).sum(axis=dims, keepdims=keepdim)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s / max(n - correction, 0)


def ref_lse(a, dim, keepdim):
    dims = _ref_dims(a, dim)
    m = a.max(axis=dims, keepdims=True)
    r = np.log(np.exp(a - m).sum(axis=dims, keepdims=True)) + m
    return r if keepdim else r.squeeze(dims)


def ref_norm(a, p, dim, keepdim):
    dims = _ref_dims(a, dim)
    if p == np.inf:
        return np.abs(a).max(axis=dims, keepdims=keepdim)
    if p == -np.inf:
        return np.abs(a).min(axis=dims, keepdims=keepdim)
    if p == 0:
        return (a != 0).sum(axis=dims, keepdims=keepdim).astype(np.float64)
    return (np.abs(a) ** p).sum(axis=dims, keepdims=keepdim) ** (1.0 / p)


# name -> (rawdev call, reference, keeps gradients finite where the input is a generic random array)
CASES = {
    "prod": (lambda x, d, k: rawdev.prod(x, d, keepdim=k), ref_prod),
    "var": (lambda x, d, k: rawdev.var(x, d, keepdim=k), lambda a, d, k: ref_var(a, d, k)),
    "var_c0": (lambda x, d, k: x.var(d, keepdim=k, correction=0), lambda a, d, k: ref_var(a, d, k, 0)),
    "var_unbiased_false": (lambda x, d, k: rawdev.var(x, d, False, k), lambda a, d, k: ref_var(a, d, k, 0)),
    "std": (lambda x, d, k: rawdev.std(x, d, keepdim=k), lambda a, d, k: np.sqrt(ref_var(a, d, k))),
    "var_mean.mean": (lambda x, d, k: rawdev.var_mean(x, d, keepdim=k)[1],
                      lambda a, d, k: a.mean(axis=_ref_dims(a, d), keepdims=k)),
    "std_mean.std": (lambda x, d, k: rawdev.std_mean(x, d, keepdim=k, correction=2)[0],
                     lambda a, d, k: np.sqrt(ref_var(a, d, k, 2))),
    "logsumexp": (lambda x, d, k: rawdev.logsumexp(x, () if d is None else d, keepdim=k), ref_lse),
    "amax": (lambda x, d, k: rawdev.amax(x, d, keepdim=k),
             lambda a, d, k: a.max(axis=_ref_dims(a, d), keepdims=k)),
    "amin": (lambda x, d, k: x.amin(d, keepdim=k), lambda a, d, k: a.min(axis=_ref_dims(a, d), keepdims=k)),
    "norm2": (lambda x, d, k: rawdev.norm(x, dim=d, keepdim=k), lambda a, d, k: ref_norm(a, 2, d, k)),
    "norm1": (lambda x, d, k: x.norm(1, d, k), lambda a, d, k: ref_norm(a, 1, d, k)),
    "norm3": (lambda x, d, k: x.norm(3, d, k), lambda a, d, k: ref_norm(a, 3, d, k)),
    "norm_inf": (lambda x, d, k: x.norm(float("inf"), d, k), lambda a, d, k: ref_norm(a, np.inf, d, k)),
    "norm_ninf": (lambda x, d, k: x.norm(-float("inf"), d, k), lambda a, d, k: ref_norm(a, -np.inf, d, k)),
    "nansum": (lambda x, d, k: rawdev.nansum(x, d, keepdim=k), lambda a, d, k: a.sum(axis=_ref_dims(a, d),
                                                                                        keepdims=k)),
    "nanmean": (lambda x, d, k: rawdev.nanmean(x, d, keepdim=k),
                lambda a, d, k: a.sum(axis=_ref_dims(a, d), keepdims=k) / np.prod(
                    [a.shape[i] for i in _ref_dims(a, d)])),
}

# (shape, dim) pairs: int / negative / tuple / None dims, size-1 dims, a row longer than a block (> 256)
LAYOUTS = [((5, 7), 1), ((5, 7), -2), ((3, 4, 6), (0, 2)), ((3, 4, 6), (-1, 1)), ((4, 5), None),
           ((1, 9), 0), ((6, 1), -1), ((2, 3, 5), (0, 1, 2)), ((3, 300), 1)]
NO_TUPLE = {"prod"}          # PyTorch's prod takes one int dim (or none)


LINEAR = {"nansum", "nanmean", "var_mean.mean"}     # sums of signed values: the same op on |a| bounds their error


def _close(name, got, a, dim, keepdim, tol):
    """got against the float64 reference relatively, or — a linear op whose sum cancels (20 values of size 1 summing
    to 0.02) — each output within tol of the same op over |a|."""
    ref = CASES[name][1]
    want = ref(a, dim, keepdim)
    if _rel(got, want) < tol:
        return True
    return name in LINEAR and (np.abs(np.asarray(got, np.float64) - want) <= tol * ref(np.abs(a), dim, keepdim)).all()


def _layouts(name):
    return [(s, d) for s, d in LAYOUTS if not (name in NO_TUPLE and isinstance(d, tuple))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_against_float64_cpu(name):
    f, ref = CASES[name]
    for shape, dim in _layouts(name):
        for keepdim in (False, True) if not (name == "prod" and dim is None) else (False,):
            a = RNG.standard_normal(shape) * (0.3 if name == "prod" else 1.0) + (1.0 if name == "prod" else 0.0)
            got = f(_t(a, transpose=True), dim, keepdim)
            want = ref(a, dim, keepdim)
            assert tuple(got.shape) == np.shape(want), (name, shape, dim, keepdim)
            assert _close(name, _np(got), a, dim, keepdim, 1e-12), (name, shape, dim, keepdim)
            # float32 against float64
            got32 = f(_t(a.astype(np.float32)), dim, keepdim)
            assert got32.dtype is rawdev.float32
            assert _close(name, _np(got32), a, dim, keepdim, 1e-5), (name, shape, dim, keepdim)


GRAD_SKIP = {"amax", "amin", "norm_inf", "norm_ninf"}     # ties: tested separately


@pytest.mark.parametrize("name", sorted(set(CASES) - GRAD_SKIP))
def test_gradients_by_finite_differences(name):
    f, ref = CASES[name]
    for shape, dim in [((4, 5), 1), ((3, 2, 4), (0, 2)), ((3, 4), None), ((1, 5), -2)]:
        if name in NO_TUPLE and isinstance(dim, tuple):
            continue
        a = RNG.standard_normal(shape) + (1.5 if name == "prod" else 0.0)
        x = _t(a, grad=True, transpose=True)
        y = f(x, dim, False)
        w = RNG.standard_normal(tuple(y.shape))
        (y * rawdev.tensor(w)).sum().backward()
        fd = _fd_grad(lambda b, dim=dim: ref(b, dim, False), a, w)
        assert _rel(_np(x.grad), fd) < 1e-6, (name, shape, dim)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_matches_cpu_values_and_grads(name, driver, poison):
    f, _ = CASES[name]
    for shape, dim in _layouts(name):
        a = (RNG.standard_normal(shape) * (0.3 if name == "prod" else 1.0) + (1.0 if name == "prod" else 0.0))
        a = a.astype(np.float32)
        outs = {}
        for dev in ("cpu", "cuda"):
            x = _t(a, dev, grad=True, transpose=True)
            y = f(x, dim, False)
            assert y.device.type == dev
            w = rawdev.tensor(np.linspace(-1, 1, max(y.numel(), 1))[:y.numel()].reshape(tuple(y.shape)),
                              dtype=rawdev.float32).to(dev)
            (y * w).sum().backward()
            outs[dev] = (_np(y), _np(x.grad))
        gap = np.abs(outs["cuda"][0].astype(np.float64) - outs["cpu"][0])     # two float32 sums in different orders
        assert _rel(outs["cuda"][0], outs["cpu"][0]) < 1e-4 or (
            name in LINEAR and (gap <= 1e-4 * CASES[name][1](np.abs(a.astype(np.float64)), dim, False)).all()), \
            (name, shape, dim)
        assert _rel(outs["cuda"][1], outs["cpu"][1]) < 1e-4, (name, shape, dim)


def test_prod_with_zeros_gradient_is_product_of_the_others():
    a = np.array([[2.0, 0.0, 3.0, 5.0], [0.0, 0.0, 4.0, 1.0], [1.5, 2.0, -1.0, 3.0]])
    x = _t(a, grad=True)
    rawdev.prod(x, 1).sum().backward()
    want = np.array([[0.0, 30.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [-6.0, -4.5, 9.0, -3.0]])
    np.testing.assert_allclose(_np(x.grad), want)
    assert rawdev.prod(rawdev.tensor([1, 2, 3])).dtype is rawdev.int64
    assert rawdev.prod(rawdev.tensor([1, 2, 3])).item() == 6
    assert _np(rawdev.prod(rawdev.zeros(3, 0), 1)).tolist() == [1.0, 1.0, 1.0]


def test_size_zero_reductions_follow_pytorch():
    z = rawdev.zeros(0, 3)
    assert _np(rawdev.logsumexp(z, 0)).tolist() == [-np.inf] * 3
    assert bool(rawdev.all(z)) is True and bool(rawdev.any(z)) is False
    assert _np(rawdev.count_nonzero(z, 0)).tolist() == [0, 0, 0]
    assert np.isnan(_np(rawdev.var(rawdev.ones(1)))).all()
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero size"):
        rawdev.amax(z, 0)
    assert tuple(rawdev.amax(z, 1).shape) == (0,)


def test_amax_amin_share_the_gradient_among_ties(driver):
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [5.0, 1.0, 0.0]], np.float32)
    for dev in ("cpu", "cuda"):
        x = _t(a, dev, grad=True)
        rawdev.amax(x, 1).sum().backward()
        np.testing.assert_allclose(_np(x.grad), [[0, .5, .5], [1 / 3] * 3, [1, 0, 0]], rtol=1e-6)
        x = _t(a, dev, grad=True)
        x.amin().backward()
        np.testing.assert_allclose(_np(x.grad), [[0, 0, 0], [0, 0, 0], [0, 0, 1]])
        x = _t(a, dev, grad=True)
        rawdev.amax(x, (0, 1), keepdim=True).sum().backward()
        np.testing.assert_allclose(_np(x.grad), [[0, 0, 0], [0, 0, 0], [1, 0, 0]])


def test_std_and_norm_gradient_is_zero_at_zero(driver):
    for dev in ("cpu", "cuda"):
        x = rawdev.ones(2, 3, device=dev, requires_grad=True)
        (rawdev.std(x, 1).sum() + rawdev.norm(x - 1.0)).backward()
        np.testing.assert_array_equal(_np(x.grad), np.zeros((2, 3)))


def test_logsumexp_is_stable_and_handles_infinities():
    a = np.array([[1000.0, 1000.0], [-np.inf, 0.0], [-np.inf, -np.inf], [np.inf, 1.0]])
    got = _np(rawdev.logsumexp(_t(a), 1))
    np.testing.assert_allclose(got[:2], [1000.0 + np.log(2.0), 0.0])
    assert got[2] == -np.inf and got[3] == np.inf
    assert rawdev.logsumexp(rawdev.tensor([1, 2]), 0).dtype is rawdev.float32


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "uint8", "bool"])
def test_all_any_count_nonzero_every_dtype(dt, driver):
    a = RNG.integers(0, 2, (4, 5, 3))
    a[0] = 1
    for dev in ("cpu", "cuda"):
        x = rawdev.tensor(a).to(getattr(rawdev, dt)).to(dev)
        for dims in ((1,), (0, 2), (-1,), None):
            d = dims if dims is None or len(dims) > 1 else dims[0]
            nd = _ref_dims(a, dims)
            for k in (False, True):
                got_all, got_any = rawdev.all(x, d, keepdim=k), x.any(d, k)
                assert got_all.dtype is rawdev.bool and got_any.dtype is rawdev.bool
                np.testing.assert_array_equal(_np(got_all), (a != 0).all(axis=nd, keepdims=k))
                np.testing.assert_array_equal(_np(got_any), (a != 0).any(axis=nd, keepdims=k))
            c = rawdev.count_nonzero(x, d)
            assert c.dtype is rawdev.int64
            np.testing.assert_array_equal(_np(c), (a != 0).sum(axis=nd))
    nan = rawdev.tensor([0.0, float("nan")])
    assert bool(rawdev.all(nan)) is False and bool(rawdev.any(nan)) is True    # NaN is non-zero


def test_nansum_nanmean_skip_nan(driver):
    a = RNG.standard_normal((4, 6))
    a[RNG.random((4, 6)) < 0.3] = np.nan
    a[2] = np.nan
    for dev in ("cpu", "cuda"):
        x = _t(a.astype(np.float32), dev, grad=True)
        s, m = rawdev.nansum(x, 1), rawdev.nanmean(x, 1)
        np.testing.assert_allclose(_np(s), np.nansum(a, 1), rtol=1e-5, atol=1e-6)
        with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
            want = np.nanmean(a, 1)
        np.testing.assert_allclose(_np(m), want, rtol=1e-5, atol=1e-6)
        s.sum().backward()
        np.testing.assert_array_equal(_np(x.grad), (~np.isnan(a)).astype(np.float32))


def test_axis_alias():
    a = RNG.standard_normal((3, 4))
    x = _t(a)
    np.testing.assert_allclose(_np(rawdev.amax(x, axis=1)), a.max(1))
    np.testing.assert_allclose(_np(x.var(axis=0)), a.var(0, ddof=1))
    np.testing.assert_allclose(_np(rawdev.logsumexp(x, axis=(0, 1))), np.log(np.exp(a).sum()))
    assert _np(rawdev.argmax(x, axis=1)).tolist() == a.argmax(1).tolist()
    assert _np(x.argmin(axis=0)).tolist() == a.argmin(0).tolist()
    np.testing.assert_allclose(_np(rawdev.sum(x, axis=1)), a.sum(1))
    np.testing.assert_allclose(_np(x.mean(axis=0)), a.mean(0))
    assert _np(x.max(axis=1).values).tolist() == a.max(1).tolist()
    with pytest.raises(TypeError):
        rawdev.amax(x, 0, axis=1)


def test_var_argument_forms_and_errors():
    a = RNG.standard_normal((3, 5))
    x = _t(a)
    np.testing.assert_allclose(_np(rawdev.var(x, False)), a.var())
    np.testing.assert_allclose(_np(rawdev.var(x, unbiased=False)), a.var())
    np.testing.assert_allclose(_np(rawdev.std(x, 1, True, True)), a.std(1, ddof=1, keepdims=True))
    v, m = rawdev.var_mean(x, 0, correction=0)
    np.testing.assert_allclose(_np(v), a.var(0))
    np.testing.assert_allclose(_np(m), a.mean(0))
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        rawdev.var(rawdev.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        rawdev.var(x, (1, -1))


def _ref_lower_median(row):
    if np.isnan(row).any():
        return np.nan
    return np.sort(row)[(len(row) - 1) // 2]


@pytest.mark.parametrize("shape,dim", [((5, 7), 1), ((6, 4), 0), ((3, 4, 5), -2), ((1, 9), 1), ((4, 1), 1)])
def test_median_values_indices_and_gradient(shape, dim, driver):
    a = RNG.standard_normal(shape)
    want = np.apply_along_axis(_ref_lower_median, dim, a)
    for dev in ("cpu", "cuda"):
        x = _t(a.astype(np.float32), dev, grad=True, transpose=True)
        for k in (False, True):
            v, i = rawdev.median(x, dim, keepdim=k)
            np.testing.assert_allclose(_np(v), np.expand_dims(want, dim) if k else want, rtol=1e-6)
            picked = np.take_along_axis(a.astype(np.float32), _np(i) if k else np.expand_dims(_np(i), dim), dim)
            np.testing.assert_array_equal(picked.squeeze(dim) if not k else picked, _np(v))
        w = RNG.standard_normal(want.shape).astype(np.float32)
        v, i = rawdev.median(x, dim)
        (v * rawdev.tensor(w).to(dev)).sum().backward()
        g = np.zeros(shape, np.float32)
        np.put_along_axis(g, np.expand_dims(_np(i), dim), np.expand_dims(w, dim), dim)
        np.testing.assert_allclose(_np(x.grad), g)
    b = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0])
    assert rawdev.median(_t(b)).item() == 3.0
    assert np.isnan(rawdev.median(_t([1.0, np.nan, 2.0])).item())


def test_mode_most_frequent_smallest_value(driver):
    a = np.array([[1, 2, 2, 3, 2], [4, 4, 1, 1, 0], [7, 7, 7, 7, 7]])
    for dev in ("cpu", "cuda"):
        v, i = rawdev.mode(_t(a.astype(np.float32), dev))
        assert _np(v).tolist() == [2.0, 1.0, 7.0]
        assert [a[r, j] for r, j in enumerate(_np(i))] == [2, 1, 7]
