"""cov and corrcoef (rawdev/ops/covariance.py) and histogram against NumPy, on the cpu and the simulated GPU."""
import numpy as np
import rawdev

from _device_arrays import FLOAT, TOL, num, on
from _refs import rng


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
