"""The pooling forms of rawdev/ops/pooling_composed.py (F.max_unpool1d/2d, F.lp_pool1d/2d and their modules)
against float64 NumPy references (PyTorch's formulas written out), on the cpu (float64) and the simulated GPU
(float32), with gradients by central differences."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn

from _composed_checks import DEVICES, TOL, check, num, on
from _refs import rng


def test_max_unpool_and_lp_pool(driver):
    r = rng()
    x = r.standard_normal((2, 3, 5, 6))
    for dev in DEVICES:
        t = on(x, dev, grad=True)
        y, idx = F.max_pool2d(t, 2, return_indices=True)
        up = F.max_unpool2d(y, idx, 2, output_size=(5, 6))
        ref = np.zeros_like(x)
        win = x[:, :, :4, :6].reshape(2, 3, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 2, 3, 4)
        arg = win.argmax(-1)
        for n, c, i, j in np.ndindex(2, 3, 2, 3):
            di, dj = divmod(arg[n, c, i, j], 2)
            ref[n, c, 2 * i + di, 2 * j + dj] = x[n, c, 2 * i + di, 2 * j + dj]
        np.testing.assert_allclose(num(up), ref, rtol=TOL[dev])
        up.sum().backward()
        np.testing.assert_array_equal(num(t.grad), (ref != 0).astype(np.float64))
        y1, i1 = F.max_pool1d(on(x[0, :, 0], dev), 2, return_indices=True)
        assert tuple(nn.MaxUnpool1d(2)(y1, i1).shape) == (3, 6)
        pos = np.abs(x) + 0.1

        def lp_ref(a, p=3.0):
            s = (a[:, :, :4, :6] ** p).reshape(2, 3, 2, 2, 3, 2).sum((3, 5))
            return s ** (1 / p)
        check(dev, lambda tt: F.lp_pool2d(tt, 3.0, 2), lp_ref, pos)
        check(dev, nn.LPPool1d(2, 3, 2), lambda a: np.sqrt(np.stack([(a[..., i:i + 3] ** 2).sum(-1)
                                                                     for i in (0, 2)], -1)), pos[0, :, 0, :5])
    with pytest.raises(RuntimeError, match="Found an invalid max index"):
        F.max_unpool2d(rawdev.ones(1, 1, 1, 1), rawdev.tensor([[[[9]]]]), 2)
