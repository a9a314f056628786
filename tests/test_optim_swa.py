"""optim.Rprop and optim.ASGD against NumPy transcriptions of their update rules, on the cpu and the simulated
GPU; swa_utils.AveragedModel (running mean and EMA), SWALR's schedule and update_bn."""
import math

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn


def _problem():
    r = np.random.default_rng(7)
    return r.standard_normal((3, 4)), r.standard_normal((8, 4)), r.standard_normal((8, 3))


def _grad(w, X, Y):
    return 2 * ((X @ w.T - Y).T @ X) / Y.size


def rprop_ref(w, X, Y, steps, lr=0.05, etas=(0.5, 1.2), sizes=(1e-6, 50)):
    prev, size = np.zeros_like(w), np.full_like(w, lr)
    for _ in range(steps):
        g = _grad(w, X, Y)
        s = np.sign(g * prev)
        size = np.clip(size * np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0)), *sizes)
        g = np.where(s < 0, 0.0, g)
        w = w - np.sign(g) * size
        prev = g
    return w


def asgd_ref(w, X, Y, steps, lr=0.05, lambd=1e-4, alpha=0.75, t0=3, wd=0.01):
    f32 = np.float32          # eta and mu live in 0-d tensors of the default dtype, as PyTorch's
    eta, mu, ax = float(f32(lr)), 1.0, np.zeros_like(w)
    for step in range(1, steps + 1):
        g = _grad(w, X, Y) + wd * w
        w = w * (1 - lambd * eta) - eta * g
        ax = ax + (w - ax) * mu if mu != 1 else w.copy()
        eta = float(f32(lr / ((1 + lambd * lr * step) ** alpha)))
        mu = float(f32(1 / max(1, step - t0)))
    return w, ax


@pytest.mark.parametrize("which", ["rprop", "asgd"])
def test_rprop_asgd_follow_their_rules(which, driver):
    W, X, Y = _problem()
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-10), ("cuda", rawdev.float32, 1e-4)):
        w = rawdev.tensor(W, dtype=dt, device=dev, requires_grad=True)
        tx, ty = rawdev.tensor(X, dtype=dt, device=dev), rawdev.tensor(Y, dtype=dt, device=dev)
        opt = (rawdev.optim.Rprop([w], lr=0.05) if which == "rprop"
               else rawdev.optim.ASGD([w], lr=0.05, t0=3, weight_decay=0.01))
        for _ in range(10):
            opt.zero_grad()
            ((tx @ w.T - ty) ** 2).mean().backward()
            opt.step()
        if which == "rprop":
            np.testing.assert_allclose(w.detach().cpu().numpy(), rprop_ref(W, X, Y, 10), rtol=tol, atol=tol)
        else:
            ref_w, ref_ax = asgd_ref(W, X, Y, 10)
            np.testing.assert_allclose(w.detach().cpu().numpy(), ref_w, rtol=tol, atol=tol)
            np.testing.assert_allclose(opt.state[w]["ax"].cpu().numpy(), ref_ax, rtol=tol, atol=tol)
        sd = opt.state_dict()
        opt2 = type(opt)([rawdev.tensor(W, dtype=dt, device=dev, requires_grad=True)])
        opt2.load_state_dict(sd)
        assert sorted(opt2.state_dict()["state"][0]) == sorted(sd["state"][0])


def test_averaged_model_and_swalr(driver):
    W, X, Y = _problem()
    m = nn.Linear(4, 3).cuda()
    swa = AveragedModel(m)
    ema = AveragedModel(m, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    opt = rawdev.optim.SGD(m.parameters(), lr=0.1)
    sched = SWALR(opt, swa_lr=0.02, anneal_epochs=3, anneal_strategy="cos")
    iterates, lrs = [], []
    ema_ref = None
    tx, ty = rawdev.tensor(X, dtype=rawdev.float32).cuda(), rawdev.tensor(Y, dtype=rawdev.float32).cuda()
    for _ in range(6):
        opt.zero_grad()
        ((m(tx) - ty) ** 2).mean().backward()
        opt.step()
        swa.update_parameters(m)
        ema.update_parameters(m)
        w = m.weight.detach().cpu().numpy()
        iterates.append(w)
        ema_ref = w if ema_ref is None else 0.9 * ema_ref + 0.1 * w
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(swa.module.weight.detach().cpu().numpy(), np.mean(iterates, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ema.module.weight.detach().cpu().numpy(), ema_ref, rtol=1e-5, atol=1e-6)
    assert int(swa.n_averaged.item()) == 6 and sorted(swa.state_dict()) == ["module.bias", "module.weight",
                                                                            "n_averaged"]
    # cos annealing from 0.1 to 0.02 over 3 steps, then constant
    alpha = [(1 - math.cos(math.pi * min(1, t / 3))) / 2 for t in range(1, 7)]
    want, lr = [], 0.1
    for t, a in enumerate(alpha, start=1):
        prev_a = (1 - math.cos(math.pi * max(0, min(1, (t - 1) / 3)))) / 2
        base = 0.02 if prev_a == 1 else (lr - prev_a * 0.02) / (1 - prev_a)
        lr = 0.02 * a + base * (1 - a)
        want.append(lr)
    np.testing.assert_allclose(lrs, want, rtol=1e-12, atol=1e-14)
    assert lrs[-1] == pytest.approx(0.02)


def test_update_bn_recomputes_statistics(driver):
    r = np.random.default_rng(1)
    data = [rawdev.tensor(r.standard_normal((16, 3)) * 2 + 5, dtype=rawdev.float32) for _ in range(4)]
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).cuda()
    model[0].weight.data.copy_(rawdev.eye(3))
    model[0].bias.data.zero_()
    model.eval()
    update_bn([(d,) for d in data], model, device="cuda")
    allx = np.concatenate([d.numpy() for d in data])
    bn = model[1]
    np.testing.assert_allclose(bn.running_mean.cpu().numpy(), allx.mean(0), rtol=1e-4)
    batch_vars = [d.numpy().var(0, ddof=1) for d in data]
    np.testing.assert_allclose(bn.running_var.cpu().numpy(), np.mean(batch_vars, 0), rtol=1e-4)
    assert bn.momentum == 0.1 and not model.training
