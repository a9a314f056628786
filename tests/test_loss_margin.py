"""The margin losses of rawdev/ops/loss_margin.py (hinge_embedding, soft_margin, multilabel_soft_margin,
multi_margin, multilabel_margin) against float64 NumPy references (PyTorch's formulas written out), on the cpu
(float64) and the simulated GPU (float32), with gradients by central differences."""
# ruff: noqa: B023  (each lambda is called inside the loop iteration that makes it)
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn

from _composed_checks import DEVICES, check, on
from _refs import rng


def test_margin_losses(driver):
    r = rng()
    x = r.standard_normal((4, 5))
    sign = np.where(r.random((4, 5)) > 0.5, 1.0, -1.0)
    y01 = (r.random((4, 5)) > 0.5).astype(np.float64)
    cls = r.integers(0, 5, 4)
    w = np.arange(1.0, 6.0)
    labels = np.array([[3, 0, -1, 1, 2], [1, -1, 0, 0, 0], [4, 3, 2, 1, 0], [-1, 2, 2, 2, 2]])

    def mm_ref(a, p=1, margin=0.7, weight=None):
        out = []
        for n in range(a.shape[0]):
            z = np.maximum(0, margin - a[n, cls[n]] + a[n]) ** p
            if weight is not None:
                z = z * weight[cls[n]]
            z[cls[n]] = 0
            out.append(z.sum() / a.shape[1])
        return np.array(out)

    def mlm_ref(a):
        out = []
        for n in range(a.shape[0]):
            tg = []
            for v in labels[n]:
                if v == -1:
                    break
                tg.append(v)
            others = [i for i in range(a.shape[1]) if i not in tg]
            out.append(sum(max(0.0, 1 - (a[n, j] - a[n, i])) for j in tg for i in others) / a.shape[1])
        return np.array(out)

    def logsig(a):
        return -np.logaddexp(0, -a)

    for dev in DEVICES:
        check(dev, lambda t: F.hinge_embedding_loss(t, on(sign, dev), margin=0.5),
              lambda a: np.where(sign == 1, a, np.maximum(0, 0.5 - a)).mean(), x)
        check(dev, lambda t: nn.SoftMarginLoss(reduction="sum")(t, on(sign, dev)),
              lambda a: np.log1p(np.exp(-sign * a)).sum(), x)
        check(dev, lambda t: nn.MultiLabelSoftMarginLoss(weight=on(w, dev))(t, on(y01, dev)),
              lambda a: (-(y01 * logsig(a) + (1 - y01) * logsig(-a)) * w).mean(1).mean(), x)
        check(dev, lambda t: F.multi_margin_loss(t, rawdev.tensor(cls, device=dev), margin=0.7, reduction="none"),
              mm_ref, x)
        check(dev, lambda t: nn.MultiMarginLoss(p=2, weight=on(w, dev))(t, rawdev.tensor(cls, device=dev)),
              lambda a: mm_ref(a, 2, 1.0, w).mean(), x)
        check(dev, lambda t: F.multilabel_margin_loss(t, rawdev.tensor(labels, device=dev), reduction="none"),
              mlm_ref, x)
    with pytest.raises(IndexError, match="Target out of bounds"):
        F.multi_margin_loss(rawdev.zeros(2, 3), rawdev.tensor([0, 3]))
