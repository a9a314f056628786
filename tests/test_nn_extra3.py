"""pdist, gumbel_softmax, Dropout3d, InstanceNorm3d and LazyLinear against NumPy references and their defining
properties, on the cpu and the simulated GPU."""
import numpy as np
import rawdev
import rawdev.nn.functional as F
from rawdev import nn


def test_pdist_values_and_gradient(driver):
    r = np.random.default_rng()
    x = r.standard_normal((5, 3))
    i, j = np.triu_indices(5, 1)
    for p in (1.0, 2.0, 3.0):
        ref = (np.abs(x[i] - x[j]) ** p).sum(-1) ** (1 / p)
        for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 2e-5)):
            t = rawdev.tensor(x, dtype=dt, device=dev, requires_grad=True)
            y = F.pdist(t, p)
            np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=tol)
            y.sum().backward()
            assert t.grad.shape == (5, 3)
    t = rawdev.tensor(x, requires_grad=True)
    F.pdist(t).sum().backward()
    d = x[:, None] - x[None]
    n = np.linalg.norm(d, axis=-1)
    np.fill_diagonal(n, 1)
    np.testing.assert_allclose(t.grad.numpy(), (d / n[..., None]).sum(1), rtol=1e-10)


def test_gumbel_softmax(driver):
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    for dev in ("cpu", "cuda"):
        rawdev.manual_seed(3)
        lg = rawdev.tensor(np.tile(logits, (20000, 1)), dtype=rawdev.float32, device=dev, requires_grad=True)
        soft = F.gumbel_softmax(lg, tau=0.5)
        np.testing.assert_allclose(soft.detach().cpu().numpy().sum(-1), 1.0, rtol=1e-5)
        hard = F.gumbel_softmax(lg, hard=True)
        h = hard.detach().cpu().numpy()
        assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
        np.testing.assert_allclose(h.mean(0), [0.1, 0.2, 0.7], atol=0.015)     # argmax of logits + Gumbel noise
        (hard * rawdev.tensor([1.0, 2.0, 3.0], device=dev)).sum().backward()
        assert lg.grad is not None and float(lg.grad.abs().sum()) > 0           # the straight-through gradient


def test_dropout3d_and_instancenorm3d(driver):
    r = np.random.default_rng()
    x = r.standard_normal((3, 4, 2, 3, 5))
    for dev in ("cpu", "cuda"):
        rawdev.manual_seed(0)
        y = nn.Dropout3d(0.5)(rawdev.ones(8, 6, 2, 2, 2, device=dev)).cpu().numpy()
        per_channel = y.reshape(8, 6, -1)
        assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
        assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7
        m = nn.Dropout3d(0.5).eval()
        t = rawdev.tensor(x, device=dev)
        assert m(t) is t
        got = nn.InstanceNorm3d(4)(rawdev.tensor(x, dtype=rawdev.float32, device=dev)).cpu().numpy()
        mu, var = x.mean((2, 3, 4), keepdims=True), x.var((2, 3, 4), keepdims=True)
        np.testing.assert_allclose(got, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)


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
