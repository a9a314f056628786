"""nn.utils.parametrize, parametrizations.weight_norm/spectral_norm and the hook forms nn.utils.weight_norm/
spectral_norm: values against NumPy, PyTorch's state_dict keys, gradients, moves and removal."""
import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.nn.utils import parametrizations, parametrize


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


def test_register_parametrization_and_remove(driver):
    for dev in ("cpu", "cuda"):
        m = nn.Linear(4, 4).to(dev)
        parametrize.register_parametrization(m, "weight", Symmetric())
        assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
        assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
        assert parametrize.type_before_parametrizations(m) is nn.Linear
        w = m.weight.detach().cpu().numpy()
        np.testing.assert_array_equal(w, w.T)
        assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original"]
        x = rawdev.randn(2, 4).to(dev)
        m(x).sum().backward()
        g = m.parametrizations.weight.original.grad.cpu().numpy()
        gw = np.ones((2, 1)).T @ x.cpu().numpy()                    # d sum(x Wᵀ) / dW, each row
        want = np.broadcast_to(gw, (4, 4)).copy()
        want = np.triu(want + want.T - np.diag(np.diag(want)))     # through triu + triu(1)ᵀ
        np.testing.assert_allclose(g, want, rtol=1e-5)
        target = np.arange(16.0).reshape(4, 4)
        target = target + target.T
        m.weight = rawdev.tensor(target, dtype=rawdev.float32).to(dev)     # the setter inverts the parametrization
        np.testing.assert_allclose(m.weight.detach().cpu().numpy(), target)
        with parametrize.cached():
            assert m.weight is m.weight
        parametrize.remove_parametrizations(m, "weight")
        assert type(m) is nn.Linear and sorted(m.state_dict()) == ["bias", "weight"]
        np.testing.assert_allclose(m.weight.detach().cpu().numpy(), target)


def test_weight_norm_both_forms(driver):
    r = np.random.default_rng()
    W = r.standard_normal((5, 3))
    x = r.standard_normal((2, 3))
    for dev in ("cpu", "cuda"):
        def linear(dev=dev):
            m = nn.Linear(3, 5)
            m.weight.data.copy_(rawdev.tensor(W, dtype=rawdev.float32))
            return m.to(dev)
        for form in ("parametrization", "hooks"):
            m = parametrizations.weight_norm(linear()) if form == "parametrization" else nn.utils.weight_norm(linear())
            keys = sorted(m.state_dict())
            g = m.parametrizations.weight.original0 if form == "parametrization" else m.weight_g
            v = m.parametrizations.weight.original1 if form == "parametrization" else m.weight_v
            assert keys == (["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
                            if form == "parametrization" else ["bias", "weight_g", "weight_v"])
            np.testing.assert_allclose(g.detach().cpu().numpy(), np.linalg.norm(W, axis=1, keepdims=True), rtol=1e-5)
            with rawdev.no_grad():
                g.mul_(2.0)
            y = m(rawdev.tensor(x, dtype=rawdev.float32).to(dev))
            np.testing.assert_allclose(y.detach().cpu().numpy(), x @ (2 * W).T + m.bias.detach().cpu().numpy(),
                                       rtol=1e-4, atol=1e-5)
            y.sum().backward()
            assert g.grad is not None and v.grad is not None
            # the v gradient is orthogonal to v (scaling v does not change the weight)
            assert abs(float((v.grad * v.detach()).sum())) < 1e-4
        nn.utils.remove_weight_norm(m)
        np.testing.assert_allclose(m.weight.detach().cpu().numpy(), 2 * W, rtol=1e-5)
        assert sorted(m.state_dict()) == ["bias", "weight"]


def test_spectral_norm_both_forms_and_moves(driver):
    r = np.random.default_rng()
    # singular values with a gap (sigma2 / sigma1 = 0.6): the power iteration's error shrinks by 0.36 a step
    # whatever the random start; a random W's top two can be nearly equal and converge arbitrarily slowly
    U = np.linalg.qr(r.standard_normal((6, 4)))[0]
    V = np.linalg.qr(r.standard_normal((4, 4)))[0]
    sigma = 3.0
    W = U @ np.diag(sigma * np.array([1.0, 0.6, 0.4, 0.2])) @ V.T
    x = rawdev.tensor(r.standard_normal((2, 4)), dtype=rawdev.float32)
    for maker, keys in ((parametrizations.spectral_norm,
                         ["bias", "parametrizations.weight.0._u", "parametrizations.weight.0._v",
                          "parametrizations.weight.original"]),
                        (nn.utils.spectral_norm, ["bias", "weight_orig", "weight_u", "weight_v"])):
        m = nn.Linear(4, 6)
        m.weight.data.copy_(rawdev.tensor(W, dtype=rawdev.float32))
        m = maker(m).cuda()
        assert sorted(m.state_dict()) == keys
        for _ in range(30):                                  # power iteration converges in training
            y = m(x.cuda())
        np.testing.assert_allclose(np.linalg.svd(m.weight.detach().cpu().numpy(), compute_uv=False)[0], 1.0,
                                   rtol=1e-3)
        np.testing.assert_allclose(m.weight.detach().cpu().numpy(), W / sigma, rtol=1e-3, atol=1e-4)
        y.sum().backward()
        assert all(p.grad is not None for p in m.parameters())
        state = {k: v.cpu() for k, v in m.state_dict().items()}
        m2 = nn.Linear(4, 6)
        m2 = maker(m2)
        m2.load_state_dict(state, strict=True)
        m2.eval()
        m.eval()
        np.testing.assert_allclose(m2(x).detach().numpy(), m(x.cuda()).detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(nn.Linear(2, 2))
