"""Elementwise ops composed from declared ones (rawdev/ops/pointwise_composed.py): square, fmax/fmin,
ldexp/frexp, ... (and diag, tested beside square), against NumPy on the cpu and the simulated GPU, with
gradients. The rest of the file's ops: test_ops_breadth.py."""

import numpy as np
import pytest
import rawdev

from _device_arrays import FLOAT, TOL, num, on
from _refs import rng

RNG = np.random.default_rng(5)


def test_square_and_diag_values_and_gradients(driver):
    x = RNG.standard_normal((4, 5))
    v = RNG.standard_normal(4)
    for dev in ("cpu", "cuda"):
        dt = rawdev.float32 if dev == "cuda" else rawdev.float64
        tol = 1e-5 if dev == "cuda" else 1e-12
        tx = rawdev.tensor(x, dtype=dt, device=dev, requires_grad=True)
        tx_t = tx.t()              # a non-contiguous input
        np.testing.assert_allclose(rawdev.square(tx_t).detach().cpu().numpy(), x.T ** 2, rtol=tol)
        rawdev.square(tx_t).sum().backward()
        np.testing.assert_allclose(tx.grad.cpu().numpy(), 2 * x, rtol=tol)
        for k in (-2, 0, 1):
            np.testing.assert_allclose(rawdev.diag(tx.detach(), k).cpu().numpy(), np.diag(x, k), rtol=tol)
            tv = rawdev.tensor(v, dtype=dt, device=dev, requires_grad=True)
            m = rawdev.diag(tv, k)
            np.testing.assert_allclose(m.detach().cpu().numpy(), np.diag(v, k), rtol=tol)
            g = RNG.standard_normal(tuple(m.shape))
            (m * rawdev.tensor(g, dtype=dt, device=dev)).sum().backward()
            np.testing.assert_allclose(tv.grad.cpu().numpy(), np.diag(g, k), rtol=tol)
    with pytest.raises(RuntimeError, match="Supports 1D or 2D tensors"):
        rawdev.diag(rawdev.ones(2, 2, 2))


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
