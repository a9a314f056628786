"""Conv3d, MaxPool3d, AvgPool3d, adaptive 3-D pooling and BatchNorm3d against float64 NumPy references
(sliding windows written out), on the cpu and the simulated GPU, with gradients."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from numpy.lib.stride_tricks import sliding_window_view
from rawdev import nn

from _refs import rng


def T(a, dev, grad=False):
    dt = rawdev.float64 if dev == "cpu" else rawdev.float32
    t = rawdev.tensor(np.asarray(a), dtype=dt, device=dev)
    return t.requires_grad_(True) if grad else t


TOL = {"cpu": 1e-10, "cuda": 2e-5}


def conv3d_ref(x, w, b, stride, pad, dil, groups):
    x = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in pad))
    n, c = x.shape[:2]
    co, cg, kd, kh, kw = w.shape
    ks = [(k - 1) * d + 1 for k, d in zip((kd, kh, kw), dil)]
    win = sliding_window_view(x, ks, axis=(2, 3, 4))[..., ::dil[0], ::dil[1], ::dil[2]]
    win = win[:, :, ::stride[0], ::stride[1], ::stride[2]]
    out = []
    per = co // groups
    for g in range(groups):
        xs = win[:, g * cg:(g + 1) * cg]
        out.append(np.einsum("ncdhwijk,ocijk->nodhw", xs, w[g * per:(g + 1) * per]))
    return np.concatenate(out, 1) + b.reshape(1, -1, 1, 1, 1)


@pytest.mark.parametrize("stride,pad,dil,groups", [((1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
                                                   ((2, 1, 2), (1, 0, 1), (1, 2, 1), 2)])
def test_conv3d_values_and_gradients(stride, pad, dil, groups, driver):
    r = rng()
    x = r.standard_normal((2, 4, 5, 6, 5))
    w = r.standard_normal((6, 4 // groups, 3, 2, 3))
    b = r.standard_normal(6)
    ref = conv3d_ref(x, w, b, stride, pad, dil, groups)
    g = r.standard_normal(ref.shape)
    grads = {}
    for dev in ("cpu", "cuda"):
        tx, tw, tb = T(x, dev, True), T(w, dev, True), T(b, dev, True)
        y = F.conv3d(tx, tw, tb, stride, pad, dil, groups)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        (y * T(g, dev)).sum().backward()
        grads[dev] = [t.grad.cpu().numpy() for t in (tx, tw, tb)]
    np.testing.assert_allclose(grads["cpu"][2], g.sum((0, 2, 3, 4)), rtol=1e-10, atol=1e-12)
    # the input and weight gradients of a linear map: <grad, dx> equals the change of <g, y> along dx
    dx = r.standard_normal(x.shape)
    lin = (conv3d_ref(x + 1e-3 * dx, w, b, stride, pad, dil, groups) * g).sum() - (ref * g).sum()
    assert (grads["cpu"][0] * dx).sum() * 1e-3 == pytest.approx(lin, rel=1e-8)
    dw = r.standard_normal(w.shape)
    lin = (conv3d_ref(x, w + 1e-3 * dw, b, stride, pad, dil, groups) * g).sum() - (ref * g).sum()
    assert (grads["cpu"][1] * dw).sum() * 1e-3 == pytest.approx(lin, rel=1e-8)
    for a, c in zip(grads["cuda"], grads["cpu"]):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4)
    m = nn.Conv3d(4, 6, (3, 2, 3), stride, pad, dil, groups)
    assert tuple(m.weight.shape) == (6, 4 // groups, 3, 2, 3) and m(rawdev.zeros(1, 4, 5, 6, 5)).ndim == 5


def pool_ref(x, k, s, p, op, fill):
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((q, q) for q in p), constant_values=fill)
    win = sliding_window_view(xp, k, axis=(2, 3, 4))[:, :, ::s[0], ::s[1], ::s[2]]
    return op(win, axis=(-3, -2, -1))


def test_pooling_3d(driver):
    r = rng()
    x = r.standard_normal((2, 3, 6, 7, 5))
    for dev in ("cpu", "cuda"):
        t = T(x, dev, True)
        y = F.max_pool3d(t, 3, 2, 1)
        np.testing.assert_allclose(y.detach().cpu().numpy(), pool_ref(x, (3, 3, 3), (2, 2, 2), (1, 1, 1), np.max,
                                                                        -np.inf), rtol=TOL[dev])
        y.sum().backward()
        assert t.grad.cpu().numpy().sum() == pytest.approx(y.numel())        # each max gets its window's 1
        np.testing.assert_allclose(F.avg_pool3d(T(x, dev), 2).cpu().numpy(),
                                   pool_ref(x, (2, 2, 2), (2, 2, 2), (0, 0, 0), np.mean, 0), rtol=TOL[dev] * 10)
        np.testing.assert_allclose(F.avg_pool3d(T(x, dev), 3, 2, 1).cpu().numpy(),
                                   pool_ref(x, (3, 3, 3), (2, 2, 2), (1, 1, 1), np.mean, 0), rtol=TOL[dev] * 10,
                                   atol=TOL[dev])
        sums = pool_ref(x, (3, 3, 3), (2, 2, 2), (1, 1, 1), np.sum, 0)
        counts = pool_ref(np.ones_like(x), (3, 3, 3), (2, 2, 2), (1, 1, 1), np.sum, 0)
        np.testing.assert_allclose(F.avg_pool3d(T(x, dev), 3, 2, 1, count_include_pad=False).cpu().numpy(),
                                   sums / counts, rtol=TOL[dev] * 10, atol=TOL[dev])
        a = nn.AdaptiveAvgPool3d((2, 3, None))(T(x, dev)).cpu().numpy()
        assert a.shape == (2, 3, 2, 3, 5)
        np.testing.assert_allclose(a[:, :, 0, 0], x[:, :, 0:3, 0:3].mean((2, 3)), rtol=TOL[dev] * 10)
        np.testing.assert_allclose(nn.AdaptiveMaxPool3d(1)(T(x, dev)).cpu().numpy()[..., 0, 0, 0], x.max((2, 3, 4)),
                                   rtol=TOL[dev])


def test_batchnorm3d_train_and_eval(driver):
    r = rng()
    x = r.standard_normal((3, 4, 2, 3, 5)) * 2 + 1
    mean, var = x.mean((0, 2, 3, 4)), x.var((0, 2, 3, 4))
    for dev in ("cpu", "cuda"):
        bn = nn.BatchNorm3d(4).to(dev, rawdev.float64 if dev == "cpu" else rawdev.float32)
        y = bn(T(x, dev)).detach().cpu().numpy()
        np.testing.assert_allclose(y, (x - mean.reshape(1, 4, 1, 1, 1)) / np.sqrt(var.reshape(1, 4, 1, 1, 1) + 1e-5),
                                   rtol=1e-4, atol=1e-4)
        n = x.size // 4
        np.testing.assert_allclose(bn.running_var.cpu().numpy(), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-5)
        with pytest.raises(ValueError, match="expected 5D input"):
            bn(T(x[0], dev))
