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
    for f in ("median", "mode"):
        want = getattr(rawdev.tensor(a), f)(1)
        got = _no_host_copies(lambda f=f: getattr(rawdev.tensor(a).cuda(), f)(1))
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
