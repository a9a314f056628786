"""Tensor.unfold, sum_to_size, fmax/fmin, ldexp/frexp, cov/corrcoef, histogram, unique_consecutive, argwhere,
unravel_index, h/v/dsplit, the *_scatter ops and the real-only complex queries, against NumPy, on the cpu and
the simulated GPU."""
import itertools

import numpy as np
import pytest
import rawdev
from numpy.lib.stride_tricks import sliding_window_view

from _refs import rng


def on(a, dev, dt=None, grad=False):
    t = rawdev.tensor(np.asarray(a), device=dev)
    if dt is not None:
        t = t.to(dtype=dt)
    return t.requires_grad_(True) if grad else t


def num(t):
    return t.detach().cpu().numpy()


FLOAT = {"cpu": rawdev.float64, "cuda": rawdev.float32}
TOL = {"cpu": 1e-12, "cuda": 2e-6}


@pytest.mark.parametrize("size,step", [(2, 1), (3, 2), (4, 4), (1, 3)])
def test_unfold_windows_and_gradient(size, step, driver):
    r = rng()
    x = r.standard_normal((3, 9, 2))
    ref = sliding_window_view(x, size, axis=1)[:, ::step]
    for dev in ("cpu", "cuda"):
        t = on(x, dev, FLOAT[dev], grad=True)
        u = t.unfold(1, size, step)
        assert u.data_ptr() == t.data_ptr() and tuple(u.shape) == ref.shape      # a view
        np.testing.assert_array_equal(num(u), ref.astype(num(u).dtype))
        g = r.standard_normal(ref.shape)
        (u * on(g, dev, FLOAT[dev])).sum().backward()
        want = np.zeros_like(x)
        for w, j in itertools.product(range(ref.shape[1]), range(size)):
            want[:, w * step + j] += g[:, w, :, j]
        np.testing.assert_allclose(num(t.grad), want, rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 3 but size is 4"):
        rawdev.zeros(3).unfold(0, 4, 1)


def test_elementwise_helpers(driver):
    r = rng()
    a, b = r.standard_normal(20), r.standard_normal(20)
    a[[1, 5]] = np.nan
    b[[5, 9]] = np.nan
    k = r.integers(-4, 5, 20)
    for dev in ("cpu", "cuda"):
        dt = FLOAT[dev]
        ta, tb = on(a, dev, dt), on(b, dev, dt)
        np.testing.assert_array_equal(num(rawdev.fmax(ta, tb)), np.fmax(num(ta), num(tb)))
        np.testing.assert_array_equal(num(rawdev.fmin(ta, tb)), np.fmin(num(ta), num(tb)))
        np.testing.assert_allclose(num(rawdev.ldexp(on(b, dev, dt), on(k, dev))), np.ldexp(b, k), rtol=TOL[dev])
        x = r.standard_normal(30) * 10.0 ** r.integers(-8, 8, 30)
        x[0] = 0
        m, e = rawdev.frexp(on(x, dev, dt))
        nm, ne = np.frexp(num(on(x, dev, dt)))
        np.testing.assert_array_equal(num(m), nm)
        np.testing.assert_array_equal(num(e), ne)
        assert e.dtype is rawdev.int32
        assert num(rawdev.ones(2, 3, device=dev).sum_to_size(2, 1)).tolist() == [[3.0], [3.0]]
    assert rawdev.ones(2, 3).sum_to_size(3).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        rawdev.ones(2, 3).sum_to_size(2)


def test_statistics(driver):
    r = rng()
    x = r.standard_normal((3, 12))
    fw = r.integers(1, 4, 12)
    aw = r.uniform(0.5, 2, 12)
    v = r.standard_normal(500)
    for dev in ("cpu", "cuda"):
        dt, tol = FLOAT[dev], TOL[dev] * 100
        np.testing.assert_allclose(num(rawdev.cov(on(x, dev, dt))), np.cov(x), rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.cov(on(x, dev, dt), correction=0)), np.cov(x, bias=True), rtol=tol,
                                   atol=tol)
        np.testing.assert_allclose(num(rawdev.cov(on(x, dev, dt), fweights=on(fw, dev), aweights=on(aw, dev, dt))),
                                   np.cov(x, fweights=fw, aweights=aw), rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.corrcoef(on(x, dev, dt))), np.corrcoef(x), rtol=tol, atol=tol)
        for bins, rng_ in ((10, None), (7, (-1.0, 2.0))):
            h, edges = rawdev.histogram(on(v, dev, dt), bins=bins, range=rng_)
            nh, ne = np.histogram(num(on(v, dev, dt)), bins=bins, range=rng_)
            np.testing.assert_allclose(num(edges), ne, rtol=1e-6, atol=1e-6)
            np.testing.assert_array_equal(num(h), nh)
        hw, _ = rawdev.histogram(on(v, dev, dt), bins=on([-3.0, -1.0, 0.0, 0.5, 3.0], dev, dt),
                                 weight=on(np.abs(v), dev, dt), density=True)
        nh, _ = np.histogram(v, bins=[-3.0, -1.0, 0.0, 0.5, 3.0], weights=np.abs(v), density=True)
        np.testing.assert_allclose(num(hw), nh, rtol=1e-5)


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


def test_scatter_ops_and_gradients(driver):
    r = rng()
    base = r.standard_normal((4, 5))
    for dev in ("cpu", "cuda"):
        dt = FLOAT[dev]
        cases = [
            (lambda b, s: rawdev.select_scatter(b, s, 1, 2), (4,), lambda b, s: _set(b, (slice(None), 2), s)),
            (lambda b, s: rawdev.slice_scatter(b, s, 0, 1, 4, 2), (2, 5), lambda b, s: _set(b, (slice(1, 4, 2),), s)),
            (lambda b, s: rawdev.diagonal_scatter(b, s, 1), (4,), lambda b, s: _set_diag(b, s, 1)),
        ]
        for ours, sshape, ref in cases:
            src = r.standard_normal(sshape)
            tb, ts = on(base, dev, dt, grad=True), on(src, dev, dt, grad=True)
            y = ours(tb, ts)
            np.testing.assert_allclose(num(y), ref(base, src), rtol=TOL[dev])
            g = r.standard_normal(base.shape)
            (y * on(g, dev, dt)).sum().backward()
            mask = ref(np.zeros_like(base), np.ones(sshape)) == 1
            np.testing.assert_allclose(num(tb.grad), np.where(mask, 0, g), rtol=TOL[dev])
            np.testing.assert_allclose(num(ts.grad), _pick(g, ref, sshape), rtol=TOL[dev])


def _set(b, idx, s):
    out = b.copy()
    out[idx] = s
    return out


def _set_diag(b, s, k):
    out = b.copy()
    i = np.arange(len(s))
    out[i, i + k] = s
    return out


def _pick(g, ref, sshape):
    """The gradient of src: g read at the positions ref writes src to."""
    n = int(np.prod(sshape))
    ids = ref(np.full(g.shape, -1.0), np.arange(n, dtype=float).reshape(sshape))
    out = np.zeros(n)
    out[ids[ids >= 0].astype(int)] = g[ids >= 0]
    return out.reshape(sshape)


def test_real_only_complex_queries():
    x = rawdev.randn(3)
    assert x.real is x and x.conj() is x and rawdev.conj(x) is x and x.resolve_conj() is x
    assert not x.is_complex() and not rawdev.is_complex(x) and not x.is_conj()
    assert rawdev.positive(x) is x and x.sgn().tolist() == x.sign().tolist()
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        _ = x.imag
    with pytest.raises(RuntimeError, match="not supported"):
        rawdev.positive(rawdev.tensor([True]))


def test_put_apply_map_and_sparse_init(driver):
    r = rng()
    base = r.standard_normal((3, 4))
    idx = r.integers(-12, 12, 6)
    src = r.standard_normal(6)
    for dev in ("cpu", "cuda"):
        t = on(base, dev, FLOAT[dev]).t().contiguous().t()              # a non-contiguous target
        t.put_(on(idx, dev), on(src, dev, FLOAT[dev]), accumulate=True)
        want = base.copy().reshape(-1)
        np.add.at(want, np.where(idx < 0, idx + 12, idx), src)
        np.testing.assert_allclose(num(t), want.reshape(3, 4), rtol=TOL[dev] * 10, atol=TOL[dev])
        uniq = r.permutation(12)[:5]
        out = rawdev.put(on(base, dev, FLOAT[dev]), on(uniq, dev), on(src[:5], dev, FLOAT[dev]))
        want = base.copy().reshape(-1)
        want[uniq] = src[:5]
        np.testing.assert_allclose(num(out), want.reshape(3, 4), rtol=TOL[dev])
    assert rawdev.tensor([1.0, 2.0]).apply_(lambda v: v * 10).tolist() == [10.0, 20.0]
    assert rawdev.tensor([1.0, 2.0]).map_(rawdev.tensor([3.0, 4.0]), lambda a, b: a * b).tolist() == [3.0, 8.0]
    with pytest.raises(TypeError, match="only implemented on CPU tensors"):
        rawdev.zeros(2).cuda().apply_(abs)
    w = rawdev.nn.init.sparse_(rawdev.empty(10, 6), 0.35, std=0.5)
    assert ((w.numpy() == 0).sum(0) == 4).all() and w.numpy()[w.numpy() != 0].std() > 0.2
