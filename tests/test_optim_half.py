"""SGD and Adam/AdamW on float16/bfloat16 parameters: the state (momentum_buffer, exp_avg, exp_avg_sq,
max_exp_avg_sq) has the parameter's dtype, as PyTorch's zeros_like(param), and on cuda the `sgd_step_f16/_bf16`,
`adam_step_f16/_bf16` kernels of optim.ptx update parameter and state on their 16-bit storage: 2-byte loads,
the float32 kernel's math, each stored value rounded once, one launch per group step and no cast launch (no float32
copy). Each kernel equals, bit for bit, the widened step (the float32 kernel on float32 copies, every result rounded
back); the public optimizers match a float64 reference that rounds each stored value the same way, and the cpu
(which computes the same float32 math in numpy) agrees with cuda."""
import functools

import numpy as np
import pytest
import rawdev
from rawdev import dtypes as _dt
from rawdev import nn, optim
from rawdev.ops.dispatch import cuda_backend

from _refs import rng
from test_native_half_elementwise import DTYPES, _same

SGD_CASES = [dict(momentum=0.0), dict(momentum=0.9), dict(momentum=0.9, dampening=0.3, weight_decay=0.05),
             dict(momentum=0.8, nesterov=True, maximize=True), dict(momentum=0.0, weight_decay=0.1, maximize=True)]
ADAM_CASES = [dict(), dict(amsgrad=True), dict(weight_decay=0.1, maximize=True),
              dict(decoupled=True, weight_decay=0.1), dict(decoupled=True, weight_decay=0.05, amsgrad=True)]
STEPS = 3


def _vals(n, scale=1.0):
    return (rng().standard_normal(n) * scale).astype(np.float32)


def _dev(vals, dtype):
    return rawdev.tensor(vals, device="cuda").to(getattr(rawdev, dtype))


def _traced(fn):
    with rawdev.trace() as t:
        fn()
        rawdev.cuda.synchronize()
    return [line.split()[-1] for line in str(t).splitlines() if line.startswith("cuLaunchKernel")]


def _sgd_args(c):
    return dict(lr=0.1, momentum=c.get("momentum", 0.0), dampening=c.get("dampening", 0.0),
                nesterov=c.get("nesterov", False), weight_decay=c.get("weight_decay", 0.0),
                maximize=c.get("maximize", False))


def _adam_args(c, step):
    return dict(steps=[step], lr=0.01, beta1=0.9, beta2=0.999, eps=1e-3, weight_decay=c.get("weight_decay", 0.0),
                decoupled=c.get("decoupled", False), amsgrad=c.get("amsgrad", False),
                maximize=c.get("maximize", False))


# ------------------------------------------------------------------ the kernels against the widened step
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(SGD_CASES)))
def test_sgd_kernel_equals_widened_bit_for_bit(driver, dtype, case):
    c, n = SGD_CASES[case], 300     # two blocks of 256, the second partly filled
    p, buf = _dev(_vals(n), dtype), _dev(np.zeros(n, np.float32), dtype)
    wp, wbuf = p.clone(), buf.clone()
    for step in range(STEPS):
        g = _dev(_vals(n), dtype)
        bufs = [buf] if c.get("momentum") else None
        names = _traced(functools.partial(cuda_backend.sgd_group, [p], [g], bufs, [step == 0], **_sgd_args(c)))
        assert names == ["sgd_step" + ("_f16" if dtype == "float16" else "_bf16")], names
        p32, b32 = wp.float(), wbuf.float()
        cuda_backend.sgd_group([p32], [g.float()], [b32] if bufs else None, [step == 0], **_sgd_args(c))
        wp, wbuf = p32.to(p.dtype), b32.to(p.dtype)
        _same(p, wp, f"param after step {step + 1}")
        _same(buf, wbuf, f"momentum_buffer after step {step + 1}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(ADAM_CASES)))
def test_adam_kernel_equals_widened_bit_for_bit(driver, dtype, case):
    c, n = ADAM_CASES[case], 300
    p = _dev(_vals(n), dtype)
    st = [_dev(np.zeros(n, np.float32), dtype) for _ in range(3)]
    wide = [p.clone()] + [s.clone() for s in st]
    for step in range(1, STEPS + 1):
        g = _dev(_vals(n), dtype)
        names = _traced(functools.partial(cuda_backend.adam_group, [p], [g], [st[0]], [st[1]], [st[2]],
                                          **_adam_args(c, step)))
        assert names == ["adam_step" + ("_f16" if dtype == "float16" else "_bf16")], names
        w32 = [t.float() for t in wide]
        cuda_backend.adam_group([w32[0]], [g.float()], [w32[1]], [w32[2]], [w32[3]], **_adam_args(c, step))
        wide = [t.to(p.dtype) for t in w32]
        for what, got, want in zip(("param", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"), [p] + st, wide):
            if what != "max_exp_avg_sq" or c.get("amsgrad"):
                _same(got, want, f"{what} after step {step}")


# ------------------------------------------------------------------ the optimizers against float64
def _round(x, dtype):
    """float64 values rounded to the 16-bit dtype (through float32, as the kernels' float32 results are)."""
    x32 = np.asarray(x, np.float64).astype(np.float32)
    if dtype == "float16":
        return x32.astype(np.float16).astype(np.float64)
    return _dt.bf16_bits_to_f32(_dt.f32_to_bf16_bits(x32)).astype(np.float64)


def _ref_sgd(p, grads, c, dtype):
    """PyTorch's SGD in float64, each stored value (param, buffer) rounded to dtype; the update uses the unrounded
    buffer, as the kernel does."""
    buf = None
    for step, g in enumerate(grads):
        g = -g if c.get("maximize") else g
        g = g + c.get("weight_decay", 0.0) * p
        if c.get("momentum"):
            b = g if step == 0 else c["momentum"] * buf + (1 - c.get("dampening", 0.0)) * g
            buf = _round(b, dtype)
            g = g + c["momentum"] * b if c.get("nesterov") else b
        p = _round(p - 0.1 * g, dtype)
    return p, {"momentum_buffer": buf} if buf is not None else {}


def _ref_adam(p, grads, c, dtype):
    m, v, vmax = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-3, c.get("weight_decay", 0.0)
    for t, g in enumerate(grads, 1):
        g = -g if c.get("maximize") else g
        if c.get("decoupled"):
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
        mu, vu = m + (1 - b1) * (g - m), b2 * v + (1 - b2) * g * g
        m, v = _round(mu, dtype), _round(vu, dtype)
        if c.get("amsgrad"):
            vu = np.maximum(vmax, vu)
            vmax = _round(vu, dtype)
        p = _round(p - lr / (1 - b1 ** t) * mu / (np.sqrt(vu) / np.sqrt(1 - b2 ** t) + eps), dtype)
    state = {"exp_avg": m, "exp_avg_sq": v}
    if c.get("amsgrad"):
        state["max_exp_avg_sq"] = vmax
    return p, state


def _close(got, ref, dtype, what, ulps=2):
    """got within a few units in the last place of the 16-bit dtype of the reference (the kernels' float32 fmas and
    the float64 reference can round a value to neighbouring 16-bit numbers, and the difference carries over)."""
    ulp = 2.0 ** (-10 if dtype == "float16" else -7)
    scale = np.abs(ref) + 1e-3 * np.abs(ref).max()
    err = np.abs(got - ref) / scale
    assert err.max() <= ulps * ulp, f"{what}: worst {err.max() / ulp:.2f} ulps at {err.argmax()}"


def _run(kind, c, dtype, device, p0, grads):
    """kind's optimizer over two parameters (one group; on cuda one arena, so one launch per step) from values p0
    with the gradients grads: the final values, the state, and the launches of every step."""
    dt = getattr(rawdev, dtype)
    m = nn.Sequential(nn.Linear(7, 5), nn.Linear(5, 3, bias=False)).to(dt).to(device)
    ps = list(m.parameters())
    sizes = [p.numel() for p in ps]
    with rawdev.no_grad():
        for p, v in zip(ps, np.split(p0, np.cumsum(sizes)[:-1])):
            p.copy_(rawdev.tensor(v.astype(np.float32).reshape(p.shape)).to(dt))
    if kind == "sgd":
        opt = optim.SGD(ps, lr=0.1, momentum=c.get("momentum", 0.0), dampening=c.get("dampening", 0.0),
                        nesterov=c.get("nesterov", False), weight_decay=c.get("weight_decay", 0.0),
                        maximize=c.get("maximize", False))
    else:
        cls = optim.AdamW if c.get("decoupled") else optim.Adam
        opt = cls(ps, lr=0.01, eps=1e-3, weight_decay=c.get("weight_decay", 0.0), amsgrad=c.get("amsgrad", False),
                  maximize=c.get("maximize", False))
    launches = []
    for g in grads:
        opt.zero_grad()
        # d/dp sum(p * g) = g exactly: the gradients land in the backward's arena, as a model's do
        loss = sum((p * rawdev.tensor(v.astype(np.float32).reshape(p.shape)).to(dt).to(device)).sum()
                   for p, v in zip(ps, np.split(g, np.cumsum(sizes)[:-1])))
        loss.float().backward()
        if device == "cuda":
            launches.append(_traced(opt.step))
        else:
            opt.step()
    for p in ps:
        assert p.dtype is dt and p.grad.dtype is dt
        for k, s in opt.state[p].items():
            if k != "step":
                assert s.dtype is dt and s.device == p.device, (k, s.dtype)
    vals = np.concatenate([p.detach().float().cpu().numpy().ravel() for p in ps]).astype(np.float64)
    state = {k: np.concatenate([opt.state[p][k].float().cpu().numpy().ravel() for p in ps]).astype(np.float64)
             for k in opt.state[ps[0]] if k != "step"}
    return vals, state, launches


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind,case", [("sgd", i) for i in range(len(SGD_CASES))] +
                         [("adam", i) for i in range(len(ADAM_CASES))])
def test_optimizer_matches_float64_on_cuda_and_cpu(driver, dtype, kind, case):
    c = (SGD_CASES if kind == "sgd" else ADAM_CASES)[case]
    n = 7 * 5 + 5 + 5 * 3
    p0 = _round(_vals(n), dtype)
    grads = [_round(_vals(n, 0.5), dtype) for _ in range(STEPS)]
    ref_p, ref_state = (_ref_sgd if kind == "sgd" else _ref_adam)(p0, grads, c, dtype)
    results = {}
    for device in ("cuda", "cpu"):
        vals, state, launches = _run(kind, c, dtype, device, p0, grads)
        _close(vals, ref_p, dtype, f"{device} params")
        assert sorted(state) == sorted(ref_state)
        for k in ref_state:
            _close(state[k], ref_state[k], dtype, f"{device} {k}")
        results[device] = vals
        kernel = ("sgd_step" if kind == "sgd" else "adam_step") + ("_f16" if dtype == "float16" else "_bf16")
        for step, names in enumerate(launches):
            assert names == [kernel], f"step {step + 1}: {names}"   # one launch, no cast_ widening
    _close(results["cpu"], results["cuda"], dtype, "cpu against cuda", ulps=1)


# ------------------------------------------------------------------ mixed dtypes and the other optimizers
def test_a_group_of_mixed_dtypes_steps_each_on_its_storage(driver):
    p32 = nn.Parameter(rawdev.ones(4, device="cuda"))
    p16 = nn.Parameter(rawdev.ones(4, device="cuda").to(rawdev.bfloat16))
    opt = optim.SGD([p32, p16], lr=0.5, momentum=0.9)
    p32.grad, p16.grad = rawdev.ones(4, device="cuda"), rawdev.ones(4, device="cuda").to(rawdev.bfloat16)
    names = _traced(opt.step)
    assert sorted(names) == ["sgd_step", "sgd_step_bf16"], names
    assert opt.state[p16]["momentum_buffer"].dtype is rawdev.bfloat16
    assert p32.detach().cpu().numpy().tolist() == [0.5] * 4
    assert p16.detach().float().cpu().numpy().tolist() == [0.5] * 4


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_loaded_state_dict_keeps_the_16_bit_state_and_steps_alike(driver, dtype):
    dt = getattr(rawdev, dtype)
    vals, grad = _vals(40), _vals(40)
    ps = [nn.Parameter(rawdev.tensor(vals, device="cuda").to(dt)) for _ in range(2)]
    opts = [optim.AdamW([p], lr=0.01, amsgrad=True) for p in ps]
    for p, opt in zip(ps, opts):
        p.grad = rawdev.tensor(grad, device="cuda").to(dt)
        opt.step()
    fresh = nn.Parameter(ps[0].detach().clone())
    loaded = optim.AdamW([fresh], lr=0.01, amsgrad=True)
    loaded.load_state_dict(opts[0].state_dict())
    assert all(s.dtype is dt for k, s in loaded.state[fresh].items() if k != "step")
    fresh.grad = ps[1].grad
    loaded.step()
    opts[1].step()
    _same(fresh.detach(), ps[1].detach(), "parameter after a step from the loaded state")
    for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        _same(loaded.state[fresh][k], opts[1].state[ps[1]][k], k)
