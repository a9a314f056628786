"""rawdev.func (torch.func): per-sample gradients with vmap(grad(...)) and functional_call, model ensembling
with stack_module_state, jacrev/hessian and nested grad — each against a plain autograd loop or a closed form,
on the cpu and the simulated GPU."""
# ruff: noqa: B023  (each closure is called inside the iteration that makes it)
import copy

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import func, nn


def _model(dev):
    rawdev.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to(dev)


def test_per_sample_gradients(driver):
    for dev in ("cpu", "cuda"):
        model = _model(dev)
        r = np.random.default_rng()
        data = rawdev.tensor(r.standard_normal((5, 4)), dtype=rawdev.float32).to(dev)
        targets = rawdev.tensor(r.integers(0, 3, 5)).to(dev)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss_fn(p, x, t):
            return F.cross_entropy(func.functional_call(model, p, (x.unsqueeze(0),)), t.unsqueeze(0))
        grads = func.vmap(func.grad(loss_fn), in_dims=(None, 0, 0))(params, data, targets)
        for i in range(5):
            model.zero_grad()
            F.cross_entropy(model(data[i:i + 1]), targets[i:i + 1]).backward()
            for k, p in model.named_parameters():
                np.testing.assert_allclose(grads[k][i].detach().cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-4,
                                           atol=1e-6)
        before = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
        func.functional_call(model, {k: v * 0 for k, v in params.items()}, (data,))
        assert all(np.array_equal(before[k], v.detach().cpu().numpy()) for k, v in model.state_dict().items())


def test_ensembling_with_stack_module_state(driver):
    for dev in ("cpu", "cuda"):
        models = []
        for i in range(3):
            rawdev.manual_seed(i)
            models.append(nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)).to(dev))
        params, buffers = func.stack_module_state(models)
        assert tuple(params["0.weight"].shape) == (3, 6, 4) and params["0.weight"].requires_grad
        base = copy.deepcopy(models[0])
        x = rawdev.randn(5, 4).to(dev)
        out = func.vmap(lambda p, b, xx: func.functional_call(base, (p, b), (xx,)), in_dims=(0, 0, None))(
            params, buffers, x)
        for i, m in enumerate(models):
            np.testing.assert_allclose(out[i].detach().cpu().numpy(), m(x).detach().cpu().numpy(), rtol=1e-5,
                                       atol=1e-6)


def test_jacobians_hessians_and_nesting(driver):
    for dev in ("cpu", "cuda"):
        xv = np.array([0.3, -1.2, 2.0])
        x = rawdev.tensor(xv, dtype=rawdev.float32).to(dev)
        np.testing.assert_allclose(func.jacrev(rawdev.sin)(x).cpu().numpy(), np.diag(np.cos(xv)), rtol=1e-5)
        # f = x0 · Σ x³: H = 6·x0·diag(x) + (row/col 0: 3x²), H00 = 12·x0²
        H = func.hessian(lambda t: (t ** 3).sum() * t[0])(x).cpu().numpy()
        want = np.diag(6 * xv[0] * xv)
        want[0, :] += 3 * xv ** 2
        want[:, 0] += 3 * xv ** 2
        np.testing.assert_allclose(H, want, rtol=1e-4, atol=1e-5)
        t = rawdev.tensor(0.7).to(dev)
        # d²/dt² (t sin t) = 2 cos t − t sin t
        assert func.grad(func.grad(lambda s: rawdev.sin(s) * s))(t).item() == pytest.approx(
            2 * np.cos(0.7) - 0.7 * np.sin(0.7), rel=1e-5)
        g, v = func.grad_and_value(lambda s: (s ** 2).sum())(x)
        np.testing.assert_allclose(g.cpu().numpy(), 2 * xv, rtol=1e-6)
        assert v.item() == pytest.approx(float((xv ** 2).sum()), rel=1e-6)
        m = rawdev.randn(3, 4).to(dev)
        out = func.vmap(lambda row: row * 2, in_dims=1, out_dims=1)(m)
        np.testing.assert_allclose(out.cpu().numpy(), 2 * m.cpu().numpy())
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        func.vmap(rawdev.add)(rawdev.zeros(2), rawdev.zeros(3))
    assert rawdev.vmap is func.vmap
