"""nn layers, losses and init (nn.init.orthogonal_/dirac_/eye_ included), nn.Bilinear, LazyLinear and the reprs of
the less common layers: PyTorch's defaults, shapes, reprs, and values against numpy."""
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn
from rawdev.nn import init

from _composed_checks import DEVICES, check
from _refs import rng


def test_linear_default_init_and_forward():
    rawdev.manual_seed(0)
    lin = nn.Linear(50, 30)
    w, b = np.asarray(lin.weight.detach()), np.asarray(lin.bias.detach())
    bound = 1 / math.sqrt(50)
    assert w.shape == (30, 50) and b.shape == (30,)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound   # U(-1/sqrt(in), 1/sqrt(in))
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    x = np.random.default_rng(0).standard_normal((7, 50)).astype(np.float32)
    y = lin(rawdev.tensor(x))
    np.testing.assert_allclose(np.asarray(y.detach()), x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert repr(lin) == "Linear(in_features=50, out_features=30, bias=True)"
    assert nn.Linear(3, 2, bias=False).bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    assert nn.Linear(4, 3, dtype=rawdev.float64).weight.dtype is rawdev.float64


def test_seeded_init_is_reproducible():
    rawdev.manual_seed(42)
    a = np.asarray(nn.Linear(5, 4).weight.detach())
    rawdev.manual_seed(42)
    b = np.asarray(nn.Linear(5, 4).weight.detach())
    np.testing.assert_array_equal(a, b)


def test_activation_modules_match_functional():
    x = rawdev.randn(6, 5)
    xv = np.asarray(x).astype(np.float64)
    np.testing.assert_allclose(np.asarray(nn.ReLU()(x)), np.maximum(xv, 0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.LeakyReLU(0.1)(x)), np.where(xv > 0, xv, 0.1 * xv), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.Tanh()(x)), np.tanh(xv), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(nn.Sigmoid()(x)), 1 / (1 + np.exp(-xv)), rtol=1e-5)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(np.asarray(nn.GELU()(x)), 0.5 * xv * (1 + erf(xv / np.sqrt(2))), rtol=1e-5, atol=1e-7)
    t = np.tanh(np.sqrt(2 / np.pi) * (xv + 0.044715 * xv ** 3))
    np.testing.assert_allclose(np.asarray(nn.GELU("tanh")(x)), 0.5 * xv * (1 + t), rtol=1e-5, atol=1e-7)
    e = np.exp(xv - xv.max(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(nn.Softmax(1)(x)), e / e.sum(1, keepdims=True), rtol=1e-5)
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(negative_slope=0.1)"
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.Dropout(0.2)) == "Dropout(p=0.2, inplace=False)"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


def test_flatten_identity_dropout_modes():
    x = rawdev.randn(2, 3, 4)
    assert tuple(nn.Flatten()(x).shape) == (2, 12)
    assert tuple(nn.Flatten(0)(x).shape) == (24,)
    assert nn.Identity(54, unused="x")(x) is x
    d = nn.Dropout(0.5)
    d.eval()
    assert d(x) is x
    d.train()
    y = np.asarray(d(rawdev.ones(1000)))
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y > 0).mean() < 0.6


def test_sequential_mlp_trains_on_cpu():
    rawdev.manual_seed(1)
    model = nn.Sequential(nn.Flatten(), nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    x = rawdev.randn(32, 2, 4)
    y = rawdev.tensor(np.arange(32) % 3)
    loss_fn = nn.CrossEntropyLoss()
    opt = rawdev.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.2 * first


def test_losses_modules():
    x = rawdev.randn(6, 4)
    t = rawdev.tensor([0, 1, 2, 3, 1, 0])
    assert abs(nn.CrossEntropyLoss()(x, t).item() - F.cross_entropy(x, t).item()) < 1e-7
    assert tuple(nn.CrossEntropyLoss(reduction="none")(x, t).shape) == (6,)
    w = rawdev.tensor([1.0, 2.0, 0.5, 1.0])
    ce = nn.CrossEntropyLoss(weight=w, ignore_index=2, label_smoothing=0.05)
    assert "weight" in dict(ce.named_buffers())
    assert abs(ce(x, t).item() - F.cross_entropy(x, t, weight=w, ignore_index=2, label_smoothing=0.05).item()) < 1e-7
    a, b = rawdev.randn(5, 3), rawdev.randn(5, 3)
    ref = ((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2).mean()
    assert abs(nn.MSELoss()(a, b).item() - ref) < 1e-6
    assert abs(nn.MSELoss(reduction="sum")(a, b).item() - ref * 15) < 1e-4


def test_init_functions():
    rawdev.manual_seed(0)
    t = rawdev.empty(200, 300)
    init.uniform_(t, -0.5, 2.0)
    v = np.asarray(t)
    assert v.min() >= -0.5 and v.max() <= 2.0 and abs(v.mean() - 0.75) < 0.02
    init.normal_(t, 1.0, 0.1)
    v = np.asarray(t)
    assert abs(v.mean() - 1.0) < 0.005 and abs(v.std() - 0.1) < 0.005
    init.zeros_(t)
    assert not np.asarray(t).any()
    init.ones_(t)
    assert (np.asarray(t) == 1).all()
    init.kaiming_uniform_(t, a=0, nonlinearity="relu")
    bound = math.sqrt(2) * math.sqrt(3 / 300)
    assert np.abs(np.asarray(t)).max() <= bound and np.abs(np.asarray(t)).max() > 0.95 * bound
    init.xavier_uniform_(t, gain=2.0)
    a = 2.0 * math.sqrt(6 / 500)
    assert np.abs(np.asarray(t)).max() <= a and np.abs(np.asarray(t)).max() > 0.95 * a
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(rawdev.empty(3))
    p = nn.Parameter(rawdev.empty(3, 3))
    init.normal_(p)           # works on a leaf that requires grad (no graph recorded)
    assert p.grad_fn is None and p.requires_grad


def test_lazy_linear_becomes_linear(driver):
    for dev in ("cpu", "cuda"):
        rawdev.manual_seed(0)
        m = nn.LazyLinear(4)
        assert m.weight is None and list(m.parameters()) == []
        x = rawdev.randn(6, 7).to(dev)
        y = m(x)
        assert type(m) is nn.Linear and m.in_features == 7 and tuple(m.weight.shape) == (4, 7)
        assert m.weight.device.type == dev and y.shape == (6, 4)
        np.testing.assert_allclose(y.detach().cpu().numpy(),
                                   x.cpu().numpy() @ m.weight.detach().cpu().numpy().T + m.bias.detach().cpu().numpy(),
                                   rtol=1e-5, atol=1e-5)
        assert float(m.weight.abs().max()) <= 1 / np.sqrt(7) + 1e-6          # PyTorch's init bound
        opt = rawdev.optim.SGD(m.parameters(), lr=0.1)
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        assert m(x).pow(2).mean().item() < loss.item()
        assert sorted(m.state_dict()) == ["bias", "weight"]
        assert nn.LazyLinear(3, bias=False)(rawdev.randn(2, 5).to(dev)).shape == (2, 3)


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


def test_reprs_match_pytorch():
    assert repr(nn.Bilinear(3, 4, 5)) == "Bilinear(in1_features=3, in2_features=4, out_features=5, bias=True)"
    assert repr(nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert repr(nn.LPPool2d(2, 3)) == "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"
    assert repr(nn.Threshold(0.1, 20)) == "Threshold(threshold=0.1, value=20)"
    assert repr(nn.Softshrink()) == "Softshrink(0.5)"
    assert repr(nn.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    assert math.isclose(nn.RReLU().upper, 1 / 3)


def test_orthogonal_dirac_eye_init():
    rawdev.manual_seed(0)
    for shape in ((6, 4), (3, 8), (4, 2, 3, 3)):
        w = rawdev.empty(shape)
        nn.init.orthogonal_(w, gain=2.0)
        m = w.numpy().reshape(shape[0], -1)
        gram = m @ m.T if shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-5)
    w = rawdev.empty(4, 2, 3, 3)
    nn.init.dirac_(w, groups=2)
    x = rawdev.randn(1, 2, 5, 5)
    y = F.conv2d(x, w, padding=1, groups=1)
    np.testing.assert_allclose(y.numpy()[0, :2], x.numpy()[0], rtol=1e-6)
    np.testing.assert_allclose(nn.init.eye_(rawdev.empty(2, 3)).numpy(), np.eye(2, 3))
