"""Optimizers on parameters of other dtypes than float32 (PyTorch steps them all; rawdev used to refuse these).
RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam on float16/bfloat16 parameters: as SGD's and Adam's 16-bit
kernels do, each step is the float32 update, and every stored value (the
parameter, each state tensor, which has the parameter's dtype as PyTorch's zeros_like(param)) is rounded once into
its 16-bit storage. Checked bit for bit against the float32 optimizer stepped on float32 copies that are rounded
the same way after each step, on the cpu and on cuda; the two devices agree within one 16-bit ulp; a group mixing
a float32 and a 16-bit parameter steps each by its own rule. Every optimizer on float64 cuda parameters: stepped on
the host in float64, bit for bit what the cpu path gives."""
import numpy as np
import pytest
import rawdev
from rawdev import optim
from rawdev.nn.parameter import Parameter

from _refs import rng

OPTS = [("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
        ("RMSprop", dict(lr=0.01)),
        ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
        ("Adadelta", dict(lr=1.0, weight_decay=0.01)),
        ("Adamax", dict(lr=0.01, maximize=True)),
        ("NAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True)),
        ("RAdam", dict(lr=0.01, weight_decay=0.05))]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(OPTS)]
STEPS = 7     # RAdam rectifies from its 6th step on


def _round_(t, dt):
    """t (float32) rounded through dt in place: what a 16-bit store keeps."""
    with rawdev.no_grad():
        t.copy_(t.to(dtype=dt).to(dtype=rawdev.float32))


def _run(name, kw, dev, dt, p0, grads):
    """(16-bit run, float32 reference with every stored value rounded through dt after each step)."""
    p = Parameter(rawdev.tensor(p0, device=dev).to(dtype=dt))
    q = Parameter(p.detach().to(dtype=rawdev.float32))
    o16, o32 = getattr(optim, name)([p], **kw), getattr(optim, name)([q], **kw)
    for s in o32.state.values():          # Adagrad's initial sum is stored in the parameter's dtype too
        for v in s.values():
            if v.shape == q.shape and v.device == q.device:
                _round_(v, dt)
    for g in grads:
        p.grad = rawdev.tensor(g, device=dev).to(dtype=dt)
        q.grad = p.grad.to(dtype=rawdev.float32)
        o16.step()
        o32.step()
        _round_(q, dt)
        for v in o32.state[q].values():
            if v.shape == q.shape and v.device == q.device:
                _round_(v, dt)
    return p, o16.state[p], q, o32.state[q]


def _case(n=37):
    g = rng()
    return g.standard_normal(n).astype(np.float32), [g.standard_normal(n).astype(np.float32) for _ in range(STEPS)]


def _bits(t):
    return np.asarray(t.detach().to(dtype=rawdev.float32).cpu()).view(np.uint32)


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("dev", ["cpu", "cuda"])
@pytest.mark.parametrize("idx", range(len(OPTS)), ids=IDS)
def test_16bit_step_is_the_float32_step_rounded_once(driver, dev, dt, idx):
    name, kw = OPTS[idx]
    dt = getattr(rawdev, dt)
    p, st, q, st32 = _run(name, kw, dev, dt, *_case())
    assert p.dtype is dt and p.device.type == dev
    assert np.array_equal(_bits(p), _bits(q))
    assert set(st) == set(st32)
    for k, v in st.items():
        if v.shape == p.shape and v.numel() > 1:
            assert v.dtype is dt and v.device == p.device, k          # state in the parameter's dtype
            assert np.array_equal(_bits(v), _bits(st32[k])), k
        else:
            assert float(v.item()) == float(st32[k].item()), k       # host step counts and products


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("idx", range(len(OPTS)), ids=IDS)
def test_cpu_and_cuda_agree_within_a_16bit_ulp(driver, dt, idx):
    name, kw = OPTS[idx]
    dt = getattr(rawdev, dt)
    p0, grads = _case()
    a = _run(name, kw, "cpu", dt, p0, grads)[0]
    b = _run(name, kw, "cuda", dt, p0, grads)[0]
    a, b = (np.asarray(t.detach().to(dtype=rawdev.float32).cpu(), np.float64) for t in (a, b))
    ulp = np.spacing(np.abs(a).astype(np.float16 if dt is rawdev.float16 else np.float32))
    if dt is rawdev.bfloat16:
        ulp = ulp * 2.0 ** 16      # bfloat16 keeps 8 of float32's 24 significand bits
    assert np.all(np.abs(a - b) <= ulp), np.abs(a - b).max()


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_a_group_mixing_float32_and_bfloat16_parameters(driver, dev):
    p0, grads = _case(12)
    w32 = Parameter(rawdev.tensor(p0, device=dev))
    w16 = Parameter(rawdev.tensor(p0, device=dev).to(dtype=rawdev.bfloat16))
    ref = Parameter(rawdev.tensor(p0, device=dev))
    opt, alone = optim.RMSprop([w32, w16], lr=0.01, momentum=0.5), optim.RMSprop([ref], lr=0.01, momentum=0.5)
    for g in grads:
        w32.grad, ref.grad = rawdev.tensor(g, device=dev), rawdev.tensor(g, device=dev)
        w16.grad = rawdev.tensor(g, device=dev).to(dtype=rawdev.bfloat16)
        opt.step()
        alone.step()
    assert np.array_equal(_bits(w32), _bits(ref))
    assert w16.dtype is rawdev.bfloat16 and opt.state[w16]["square_avg"].dtype is rawdev.bfloat16
    assert not np.array_equal(_bits(w16), _bits(rawdev.tensor(p0).to(dtype=rawdev.bfloat16)))   # it moved


F64_OPTS = [("SGD", dict(lr=0.01, momentum=0.9, nesterov=True)), ("Adam", dict(lr=0.01, amsgrad=True)),
            ("AdamW", dict(lr=0.01, weight_decay=0.1))] + OPTS


@pytest.mark.parametrize("idx", range(len(F64_OPTS)), ids=[f"{n}-{i}" for i, (n, _) in enumerate(F64_OPTS)])
def test_float64_cuda_parameters_step_as_on_the_cpu(driver, idx):
    name, kw = F64_OPTS[idx]
    p0, grads = _case()
    out = {}
    for dev in ("cpu", "cuda"):
        w = Parameter(rawdev.tensor(p0.astype(np.float64), device=dev))
        opt = getattr(optim, name)([w], **kw)
        for g in grads:
            w.grad = rawdev.tensor(g.astype(np.float64), device=dev)
            opt.step()
        assert w.dtype is rawdev.float64 and w.device.type == dev
        assert all(v.device.type in ("cpu", dev) and (v.dtype is rawdev.float64 or v.numel() == 1)
                   for v in opt.state[w].values())
        out[dev] = np.asarray(w.detach().cpu())
    assert np.array_equal(out["cpu"].view(np.uint64), out["cuda"].view(np.uint64))
    assert not np.array_equal(out["cpu"], p0.astype(np.float64))


def test_an_integer_tensor_on_cuda_is_refused(driver):
    p = rawdev.ones(3, dtype=rawdev.int32, device="cuda")
    p.grad = rawdev.ones(3, dtype=rawdev.int32, device="cuda")
    with pytest.raises(TypeError, match="update float32 parameters"):
        optim.RMSprop([p]).step()
