"""Threshold/Hardshrink/Softshrink/RReLU/Softmax2d/LocalResponseNorm/ChannelShuffle/Bilinear/MaxUnpool/LPPool and
the margin, Poisson and Gaussian losses against float64 NumPy references (PyTorch's formulas written out), on the
cpu (float64) and the simulated GPU (float32), with gradients by central differences."""
# ruff: noqa: B023  (each lambda is called inside the loop iteration that makes it)
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn

from _refs import numeric_grad, rng


def on(a, dev, grad=False):
    dt = rawdev.float64 if dev == "cpu" else rawdev.float32
    t = rawdev.tensor(np.asarray(a), dtype=dt, device=dev)
    return t.requires_grad_(True) if grad else t


def num(t):
    return t.detach().cpu().numpy().astype(np.float64)


TOL = {"cpu": 1e-7, "cuda": 2e-4}
DEVICES = ("cpu", "cuda")


def check(dev, fn_ours, fn_ref, *arrays, grad_of=(0,)):
    """fn_ours(tensors) against fn_ref(arrays) in value, and d/d arrays[i] of sum(out · G) for i in grad_of."""
    ts = [on(a, dev, grad=i in grad_of) for i, a in enumerate(arrays)]
    y = fn_ours(*ts)
    ref = fn_ref(*arrays)
    np.testing.assert_allclose(num(y), ref, rtol=TOL[dev], atol=TOL[dev])
    g = rng().standard_normal(ref.shape)
    (y * on(g, dev)).sum().backward()
    for i in grad_of:
        def f(a, i=i):
            args = list(arrays)
            args[i] = a
            return fn_ref(*args)
        np.testing.assert_allclose(num(ts[i].grad), numeric_grad(f, arrays[i], g), rtol=TOL[dev] * 10,
                                   atol=TOL[dev] * 10)


def test_shrink_threshold_rrelu(driver):
    r = rng()
    x = r.standard_normal((3, 7))
    x[np.abs(np.abs(x) - 0.5) < 1e-3] = 0.9            # away from the kinks, for the central differences
    x[np.abs(x - 0.1) < 1e-3] = 0.9
    for dev in DEVICES:
        check(dev, lambda t: F.threshold(t, 0.1, 20.0), lambda a: np.where(a > 0.1, a, 20.0), x)
        check(dev, F.hardshrink, lambda a: np.where(np.abs(a) > 0.5, a, 0.0), x)
        check(dev, F.softshrink, lambda a: np.where(a > 0.5, a - 0.5, np.where(a < -0.5, a + 0.5, 0.0)), x)
        check(dev, F.rrelu, lambda a: np.where(a >= 0, a, a * (1 / 8 + 1 / 3) / 2), x)
        m = nn.RReLU(0.1, 0.3).train()
        t = on(x, dev)
        y = num(m(t))
        slope = y[x < 0] / x[x < 0]
        assert (slope >= 0.1 - 1e-6).all() and (slope <= 0.3 + 1e-6).all() and slope.std() > 0.01
        assert (y[x >= 0] == num(t)[x >= 0]).all()
        y2 = nn.Threshold(0.1, 20.0, inplace=True)(t)
        assert y2 is t and num(t).max() == 20.0
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(rawdev.zeros(2), -1.0)


def test_softmax2d_lrn_channel_shuffle(driver):
    r = rng()
    x = r.standard_normal((2, 5, 3, 4))

    def lrn_ref(a, size=3, alpha=1e-2, beta=0.75, k=2.0):
        sq = np.pad(a * a, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
        div = sum(sq[:, j:j + a.shape[1]] for j in range(size)) / size
        return a / (k + alpha * div) ** beta

    for dev in DEVICES:
        check(dev, nn.Softmax2d(), lambda a: np.exp(a - a.max(1, keepdims=True)) /
              np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True), x)
        check(dev, nn.LocalResponseNorm(3, 1e-2, 0.75, 2.0), lrn_ref, x)
        check(dev, lambda t: F.local_response_norm(t, 4, 0.5), lambda a: lrn_ref(a, 4, 0.5, 0.75, 1.0), x)
        perm = np.arange(6).reshape(3, 2).T.reshape(-1)
        x6 = r.standard_normal((2, 6, 3))
        check(dev, nn.ChannelShuffle(3), lambda a: a[:, perm], x6)
    with pytest.raises(ValueError, match="divisible by groups"):
        F.channel_shuffle(rawdev.zeros(1, 5, 2), 2)


def test_bilinear_layer(driver):
    r = rng()
    x1, x2 = r.standard_normal((2, 3, 4)), r.standard_normal((2, 3, 5))
    w, b = r.standard_normal((6, 4, 5)), r.standard_normal(6)

    def ref(a1, a2, ww, bb):
        return np.einsum("...i,oij,...j->...o", a1, ww, a2) + bb

    for dev in DEVICES:
        check(dev, F.bilinear, ref, x1, x2, w, b, grad_of=(0, 1, 2, 3))
    m = nn.Bilinear(4, 5, 6)
    assert tuple(m.weight.shape) == (6, 4, 5) and tuple(m.bias.shape) == (6,)
    assert float(m.weight.abs().max()) <= 0.5 and set(m.state_dict()) == {"weight", "bias"}
    assert nn.Bilinear(4, 5, 6, bias=False).bias is None


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


def test_reprs_match_pytorch():
    assert repr(nn.Bilinear(3, 4, 5)) == "Bilinear(in1_features=3, in2_features=4, out_features=5, bias=True)"
    assert repr(nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert repr(nn.LPPool2d(2, 3)) == "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"
    assert repr(nn.Threshold(0.1, 20)) == "Threshold(threshold=0.1, value=20)"
    assert repr(nn.Softshrink()) == "Softshrink(0.5)"
    assert repr(nn.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    assert math.isclose(nn.RReLU().upper, 1 / 3)
