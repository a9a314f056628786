"""Sorting on the device for rows of any length and every dtype (sort_long.ptx: sort keys, chunk sorts in
shared memory, merge passes), and the selections built on it (topk, kthvalue, median, mode): exact stable
indices against numpy, NaN as the greatest value, no copy to the host, gradients as on the cpu."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng()


@pytest.fixture
def poisoned(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def ref_order(a, descending):
    """Stable argsort along the last axis, NaN greatest (descending: NaN first), -0.0 equal to 0.0."""
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        key = np.where(nan, 0.0, a.astype(np.float64)) + 0.0
        if descending:
            return np.lexsort((-key, ~nan), axis=-1)
        return np.lexsort((key, nan), axis=-1)
    b = a.astype(np.int64)
    return np.argsort(-b if descending else b, axis=-1, kind="stable")


def _no_host_copies(fn):
    with rawdev.trace() as t:
        out = fn()
    assert not [c.fn for c in t.calls if "DtoH" in c.fn], [c.fn for c in t.calls if "DtoH" in c.fn]
    return out


@pytest.mark.parametrize("n", [1, 2047, 2048, 2049, 5000, 20000])
@pytest.mark.parametrize("descending", [False, True])
def test_long_rows_sort_stably_on_the_device(n, descending, poisoned):
    a = RNG.integers(-40, 40, (3, n)).astype(np.float32)          # many ties
    a[RNG.random(a.shape) < 0.03] = np.nan
    a[RNG.random(a.shape) < 0.03] = -0.0
    t = rawdev.tensor(a).cuda()
    vals, idx = _no_host_copies(lambda: rawdev.sort(t, -1, descending))
    want = ref_order(a, descending)
    np.testing.assert_array_equal(idx.cpu().numpy(), want)
    np.testing.assert_array_equal(vals.cpu().numpy(), np.take_along_axis(a, want, -1))


@pytest.mark.parametrize("dt", ["int64", "int32", "int16", "uint8", "bool", "float16", "bfloat16"])
def test_every_dtype_sorts_on_the_device(dt, poisoned):
    n = 3000
    a = RNG.integers(-100 if dt not in ("uint8", "bool") else 0, 100 if dt != "bool" else 2, (2, n))
    t = rawdev.tensor(a).to(getattr(rawdev, dt)).cuda()
    host = t.cpu().float().numpy() if dt in ("float16", "bfloat16") else t.cpu().numpy()
    for descending in (False, True):
        vals, idx = _no_host_copies(lambda d=descending: t.sort(-1, d))
        want = ref_order(host, descending)
        np.testing.assert_array_equal(idx.cpu().numpy(), want)
        assert vals.dtype is t.dtype
        got = vals.cpu().float().numpy() if dt in ("float16", "bfloat16") else vals.cpu().numpy()
        np.testing.assert_array_equal(got, np.take_along_axis(host, want, -1))


def test_other_dims_topk_kthvalue_and_gradients(driver):
    n = 4100
    a = RNG.standard_normal((n, 3)).astype(np.float32)           # sort along dim 0: a strided row
    for dev in ("cpu", "cuda"):
        x = rawdev.tensor(a, device=dev, requires_grad=True)
        vals, idx = x.sort(0, descending=True)
        np.testing.assert_array_equal(idx.cpu().numpy(), ref_order(a.T, True).T)
        g = RNG.standard_normal((n, 3)).astype(np.float32)
        (vals * rawdev.tensor(g, device=dev)).sum().backward()
        gx = np.zeros_like(a)
        np.put_along_axis(gx, ref_order(a.T, True).T, g, 0)
        np.testing.assert_allclose(x.grad.cpu().numpy(), gx, rtol=1e-6)
    t = rawdev.tensor(a).cuda()
    top = _no_host_copies(lambda: t.topk(5, 0))
    np.testing.assert_array_equal(top.indices.cpu().numpy(), ref_order(a.T, True)[:, :5].T)
    kth = _no_host_copies(lambda: t.kthvalue(7, 0))
    np.testing.assert_array_equal(kth.indices.cpu().numpy(), ref_order(a.T, False)[:, 6])
    np.testing.assert_array_equal(kth.values.cpu().numpy(), np.sort(a, 0)[6])


@pytest.mark.parametrize("n", [1, 6, 7, 3001])
def test_median_and_mode_on_the_device_match_the_cpu(n, driver):
    a = RNG.integers(0, 6, (4, n)).astype(np.float32)
    if n > 5:
        a[1, RNG.integers(0, n, 2)] = np.nan                      # NaN propagates in median
    # mode of rows holding NaN is left out: PyTorch's own order there is an artifact of comparing NaN
    clean = np.nan_to_num(a, nan=2.0)
    for f, data in (("median", a), ("mode", clean)):
        want = getattr(rawdev.tensor(data), f)(1)
        got = _no_host_copies(lambda f=f, data=data: getattr(rawdev.tensor(data).cuda(), f)(1))
        np.testing.assert_array_equal(got.values.cpu().numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())
    assert np.isnan(rawdev.tensor(a).cuda().median().item()) == np.isnan(a).any()
    b = np.sort(a[~np.isnan(a).any(1)].reshape(-1))
    if b.size:
        assert rawdev.tensor(b).cuda().median().item() == b[(b.size - 1) // 2]
    ints = RNG.integers(-3, 3, (3, n))
    for f in ("median", "mode"):
        want = getattr(rawdev.tensor(ints), f)(1)
        got = getattr(rawdev.tensor(ints).cuda(), f)(1)
        np.testing.assert_array_equal(got.values.cpu().numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())


def _running_pairs(a, is_max):
    """Reference cummax/cummin along the last axis, written from PyTorch's rule: a later element takes over when
    it is NaN, or when no NaN came before and it is >= (<=) the running value."""
    v = np.empty_like(a)
    ix = np.zeros(a.shape, np.int64)
    for r in np.ndindex(a.shape[:-1]):
        best, bi = a[r + (0,)], 0
        for j in range(a.shape[-1]):
            c = a[r + (j,)]
            if j == 0 or np.isnan(c) or (not np.isnan(best) and (c >= best if is_max else c <= best)):
                best, bi = c, j
            v[r + (j,)], ix[r + (j,)] = best, bi
    return v, ix


def test_cummax_cummin_on_the_device(driver):
    # PyTorch 2.13: cummax([1, 3, 3, 2, nan, 5, nan, 4]) indices [0, 1, 2, 2, 4, 4, 6, 6]
    x = rawdev.tensor([1.0, 3.0, 3.0, 2.0, float("nan"), 5.0, float("nan"), 4.0])
    for dev in ("cpu", "cuda"):
        assert x.to(dev).cummax(0).indices.tolist() == [0, 1, 2, 2, 4, 4, 6, 6]
        assert x.to(dev).cummin(0).indices.tolist() == [0, 0, 0, 0, 4, 4, 6, 6]
    a = RNG.integers(0, 5, (3, 777, 2)).astype(np.float32)
    a[0, RNG.integers(0, 777, 3), 0] = np.nan
    for is_max, f in ((True, "cummax"), (False, "cummin")):
        want_v, want_i = _running_pairs(np.moveaxis(a, 1, -1), is_max)
        for dev in ("cpu", "cuda"):
            t = rawdev.tensor(a, device=dev, requires_grad=True)
            got = _no_host_copies(lambda t=t, f=f: getattr(t, f)(1)) if dev == "cuda" else getattr(t, f)(1)
            np.testing.assert_array_equal(got.indices.cpu().numpy(), np.moveaxis(want_i, -1, 1))
            np.testing.assert_array_equal(got.values.detach().cpu().numpy(), np.moveaxis(want_v, -1, 1))
            got.values.sum().backward()
            grad = np.zeros(a.shape, np.float32)
            for o in range(3):
                for k in range(2):
                    np.add.at(grad[o, :, k], want_i[o, k], 1.0)
            np.testing.assert_array_equal(t.grad.cpu().numpy(), grad)
    ints = RNG.integers(-3, 3, (2, 300))
    for f in ("cummax", "cummin"):
        want = getattr(rawdev.tensor(ints), f)(1)
        got = getattr(rawdev.tensor(ints).cuda(), f)(1)
        np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.cpu().numpy(), want.values.numpy())


def _only_scalar_reads(fn):
    """fn() may read single numbers back (an output size, as PyTorch syncs for it), never the data."""
    with rawdev.trace() as t:
        out = fn()
    big = [(c.fn, c.nbytes) for c in t.calls if "DtoH" in c.fn and (c.nbytes or 0) > 8]
    assert not big, big
    return out


@pytest.mark.parametrize("n", [1, 13, 5000])
def test_unique_bincount_histc_on_the_device(n, poisoned):
    a = RNG.integers(0, 9, n)
    t = rawdev.tensor(a).cuda()
    u, inv, cnt = _only_scalar_reads(lambda: rawdev.unique(t.reshape(1, -1), return_inverse=True,
                                                           return_counts=True))
    wu, winv, wcnt = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.cpu().numpy(), wu)
    np.testing.assert_array_equal(inv.cpu().numpy(), winv.reshape(1, -1))
    np.testing.assert_array_equal(cnt.cpu().numpy(), wcnt)
    got = _only_scalar_reads(lambda: rawdev.bincount(t, minlength=12))
    assert got.dtype is rawdev.int64
    np.testing.assert_array_equal(got.cpu().numpy(), np.bincount(a, minlength=12))
    w = RNG.standard_normal(n).astype(np.float32)
    got = rawdev.bincount(t, weights=rawdev.tensor(w).cuda())
    # a float32 sum of ~n/9 signed terms: its rounding error scales with the sum of |w|, not with the (cancelling) sum
    err = np.abs(got.cpu().numpy() - np.bincount(a, w))
    assert (err <= 1e-6 + 2 * np.finfo(np.float32).eps * np.bincount(a, np.abs(w))).all(), err
    f = RNG.uniform(-2, 2, n).astype(np.float32)
    h = _only_scalar_reads(lambda: rawdev.histc(rawdev.tensor(f).cuda(), bins=7, min=-1, max=1))
    inside = f[(f >= -1) & (f <= 1)].astype(np.float64)
    want = np.bincount(np.minimum(np.floor((inside + 1) * 7 / 2).astype(int), 6), minlength=7)
    np.testing.assert_array_equal(h.cpu().numpy(), want)
    with pytest.raises(RuntimeError, match="non-negative"):
        rawdev.bincount(rawdev.tensor([-1, 2]).cuda())
