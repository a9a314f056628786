"""The likelihood losses of rawdev/ops/loss_likelihood.py (poisson_nll, gaussian_nll) and
triplet_margin_with_distance against float64 NumPy references (PyTorch's formulas written out), on the cpu
(float64) and the simulated GPU (float32), with gradients by central differences. ctc_loss: test_ctc_loss.py."""
# ruff: noqa: B023  (each lambda is called inside the loop iteration that makes it)
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn

from _composed_checks import DEVICES, check, on
from _refs import rng


def test_poisson_gaussian_triplet_losses(driver):
    r = rng()
    x = r.standard_normal((4, 5))
    counts = r.poisson(3, (4, 5)).astype(np.float64)
    var = r.uniform(0.2, 2, (4, 5))
    y = r.standard_normal((4, 5))

    def stirling(t):
        return np.where(t > 1, t * np.log(np.maximum(t, 1)) - t + 0.5 * np.log(2 * np.pi * np.maximum(t, 1)), 0)

    for dev in DEVICES:
        check(dev, lambda t: nn.PoissonNLLLoss(full=True)(t, on(counts, dev)),
              lambda a: (np.exp(a) - counts * a + stirling(counts)).mean(), x)
        check(dev, lambda t: F.poisson_nll_loss(t, on(counts, dev), log_input=False, reduction="sum"),
              lambda a: (a - counts * np.log(a + 1e-8)).sum(), np.abs(x) + 0.5)
        check(dev, lambda t, v: nn.GaussianNLLLoss(full=True)(t, on(y, dev), v),
              lambda a, v: (0.5 * (np.log(v) + (a - y) ** 2 / v) + 0.5 * np.log(2 * np.pi)).mean(), x, var,
              grad_of=(0, 1))
        small = var[:, 0] * 1e-3                           # one variance per sample, below eps: clamped in value
        check(dev, lambda t, v: F.gaussian_nll_loss(t, on(y, dev), v, eps=0.01, reduction="none"),
              lambda a, v: 0.5 * (np.log(np.full((4, 1), 0.01)) + (a - y) ** 2 / 0.01), x, small, grad_of=(0,))
        a, p_, n_ = r.standard_normal((3, 4)), r.standard_normal((3, 4)), r.standard_normal((3, 4))

        def dist(u, v):
            return np.linalg.norm(u - v + 1e-6, axis=-1)
        check(dev, lambda t: nn.TripletMarginWithDistanceLoss(swap=True)(t, on(p_, dev), on(n_, dev)),
              lambda u: np.maximum(dist(u, p_) - np.minimum(dist(u, n_), dist(p_, n_)) + 1.0, 0).mean(), a)
        l1 = nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: (u - v).abs().sum(-1), margin=2.0,
                                              reduction="sum")
        check(dev, lambda t: l1(t, on(p_, dev), on(n_, dev)),
              lambda u: np.maximum(np.abs(u - p_).sum(-1) - np.abs(u - n_).sum(-1) + 2.0, 0).sum(), a)
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(rawdev.zeros(2), rawdev.zeros(2), rawdev.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(rawdev.zeros(2, 3), rawdev.zeros(2, 3), rawdev.ones(3, 2))
