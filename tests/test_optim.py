"""Optimizers against hand-written float64 loops of PyTorch's documented algorithms."""

import numpy as np
import pytest
import rawdev
import rawdev.ops  # noqa: F401
import rawdev.optim as optim
from rawdev.nn.parameter import Parameter
from rawdev.tensor.factory import from_numpy

RNG = np.random.default_rng(7)


def ref_sgd(p, grads, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False):
    p = p.copy()
    b = None
    for g in grads:
        g = -g if maximize else g.copy()
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            b = g.copy() if b is None else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p - lr * g
    return p


def ref_adam(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
             decoupled=False):
    p = p.copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    vmax = np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g.copy()
        if weight_decay:
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            vhat = vmax / (1 - b2 ** t)
        else:
            vhat = v / (1 - b2 ** t)
        p = p - lr * mhat / (np.sqrt(vhat) + eps)
    return p


def run(opt_cls, kw, steps=7, shapes=((5, 3), (3,)), dev="cpu", dtype=np.float64):
    init = [RNG.standard_normal(s) for s in shapes]
    grads = [[RNG.standard_normal(s) for _ in range(steps)] for s in shapes]
    params = [Parameter(from_numpy(a.astype(dtype))) for a in init]
    if dev != "cpu":
        params = [Parameter(p.detach().to(dev)) for p in params]
    opt = opt_cls(params, **kw)
    for t in range(steps):
        opt.zero_grad()
        for p, gs in zip(params, grads):
            p.grad = from_numpy(gs[t].astype(dtype)).to(p.device)
        opt.step()
    return init, grads, [np.asarray(p.detach().cpu()) for p in params], opt


SGD_CASES = [dict(lr=0.1), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3),
             dict(lr=0.05, momentum=0.8, nesterov=True), dict(lr=0.1, weight_decay=0.01, momentum=0.5),
             dict(lr=0.1, maximize=True, momentum=0.9)]
ADAM_CASES = [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1), dict(lr=0.02, amsgrad=True),
              dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, maximize=True)]


@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd(kw):
    init, grads, got, _ = run(optim.SGD, kw)
    for a, gs, g in zip(init, grads, got):
        ref = ref_sgd(a, gs, **kw)
        assert np.linalg.norm(g - ref) / np.linalg.norm(ref) < 1e-12


@pytest.mark.parametrize("kw", ADAM_CASES)
@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW])
def test_adam(cls, kw):
    kw = dict(kw)
    if cls is optim.AdamW:
        kw.setdefault("weight_decay", 1e-2)
    init, grads, got, _ = run(cls, kw)
    for a, gs, g in zip(init, grads, got):
        ref = ref_adam(a, gs, decoupled=cls is optim.AdamW, **kw)
        assert np.linalg.norm(g - ref) / np.linalg.norm(ref) < 1e-12


def test_param_groups_and_state_dict_roundtrip():
    a = [RNG.standard_normal((4, 2)), RNG.standard_normal(3)]
    grads = [[RNG.standard_normal(x.shape) for _ in range(6)] for x in a]

    def make():
        ps = [Parameter(from_numpy(x.copy())) for x in a]
        return ps, optim.Adam([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}], lr=0.01, amsgrad=True)

    def steps(ps, opt, ts):
        for t in ts:
            for p, gs in zip(ps, grads):
                p.grad = from_numpy(gs[t].copy())
            opt.step()

    p1, o1 = make()
    steps(p1, o1, range(6))
    p2, o2 = make()
    steps(p2, o2, range(3))
    sd = o2.state_dict()
    assert sd["param_groups"][1]["lr"] == 0.05 and sd["param_groups"][1]["params"] == [1]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    p3, o3 = make()
    for q, p in zip(p3, p2):
        with rawdev.no_grad():
            q.copy_(p)
    o3.load_state_dict(sd)
    steps(p3, o3, range(3, 6))
    for x, y in zip(p1, p3):
        np.testing.assert_array_equal(np.asarray(x.detach()), np.asarray(y.detach()))
    ref = ref_adam(a[1], grads[1], lr=0.05, amsgrad=True)
    np.testing.assert_allclose(np.asarray(p1[1].detach()), ref, rtol=1e-12, atol=1e-14)


def test_zero_grad_and_errors():
    p = Parameter(from_numpy(RNG.standard_normal(3)))
    opt = optim.SGD([p], lr=0.1)
    p.grad = from_numpy(RNG.standard_normal(3))
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(np.asarray(p.grad), 0)
    opt.zero_grad()
    assert p.grad is None
    opt.step()   # no grads: nothing happens
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    assert "Parameter Group 0" in repr(opt)


def test_adam_groups_carry_decoupled_weight_decay_like_pytorch():
    """PyTorch's Adam has decoupled_weight_decay (AdamW is Adam with it True): the key is in defaults,
    every param group and state_dict(); Adam(decoupled_weight_decay=True) steps exactly as AdamW."""
    def run(make):
        p = Parameter(from_numpy(np.array([1.0, -2.0], np.float32)))
        opt = make([p])
        for _ in range(3):
            p.grad = from_numpy(np.array([0.5, 0.25], np.float32))
            opt.step()
        return p.tolist(), opt
    a, oa = run(lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.1, decoupled_weight_decay=True))
    w, ow = run(lambda ps: optim.AdamW(ps, lr=0.1, weight_decay=0.1))
    assert a == w
    assert optim.Adam([Parameter(from_numpy(np.zeros(1, np.float32)))]).defaults["decoupled_weight_decay"] is False
    assert ow.state_dict()["param_groups"][0]["decoupled_weight_decay"] is True
    sd = ow.state_dict()
    del sd["param_groups"][0]["decoupled_weight_decay"]        # a checkpoint from before the flag
    ow.load_state_dict(sd)
    assert ow.param_groups[0]["decoupled_weight_decay"] is True


def test_sgd_without_momentum_keeps_no_state():
    p = Parameter(from_numpy(np.array([1.0], np.float32)))
    opt = optim.SGD([p], lr=0.1)
    p.grad = from_numpy(np.array([1.0], np.float32))
    opt.step()
    assert opt.state_dict()["state"] == {} and len(opt.state) == 0


def test_params_given_as_one_tensor_names_its_type():
    p = Parameter(from_numpy(np.zeros(2, np.float32)))
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an iterable of "
                                        "Tensors or dicts, but got rawdev.FloatTensor$"):
        optim.SGD(p, lr=0.1)
