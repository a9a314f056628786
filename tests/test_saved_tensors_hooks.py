"""torch.autograd.graph.saved_tensors_hooks / save_on_cpu / disable_saved_tensors_hooks: pack runs once per tensor
an op recorded in the graph saves (never under no_grad), unpack when backward needs it, gradients equal the run
without hooks, in-place changes of the original are still caught, and save_on_cpu really moves activations off the
device."""
import numpy as np
import pytest
import rawdev
from rawdev.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks

from _refs import rng


def _mlp(device):
    rawdev.manual_seed(0)
    return rawdev.nn.Sequential(rawdev.nn.Linear(16, 64), rawdev.nn.Tanh(), rawdev.nn.Linear(64, 64),
                                rawdev.nn.Sigmoid(), rawdev.nn.Linear(64, 4)).to(device)


def _grads(model, x, ctx=None):
    model.zero_grad()
    if ctx is None:
        loss = (model(x) ** 2).sum()
    else:
        with ctx:
            loss = (model(x) ** 2).sum()
    loss.backward()
    return [p.grad.cpu().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_pack_and_unpack_wrap_every_saved_tensor_and_change_no_gradient(driver, device):
    x = rawdev.tensor(rng().standard_normal((8, 16)).astype(np.float32), device=device)
    model = _mlp(device)
    want = _grads(model, x)
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.shape)
        return ("box", t)

    def unpack(box):
        unpacked.append(box[1].shape)
        return box[1]

    got = _grads(model, x, saved_tensors_hooks(pack, unpack))
    assert packed and len(unpacked) == len(packed)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_hooks_run_only_for_recorded_ops_and_nest_innermost_first():
    a = rawdev.ones(5, requires_grad=True)
    seen = []
    outer = saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t)
    inner = saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda t: t)
    with outer:
        with rawdev.no_grad():
            _ = a * a
        assert seen == []                         # nothing is saved for backward under no_grad
        _ = rawdev.ones(5) * rawdev.ones(5)       # nor when no input requires grad
        assert seen == []
        with inner:
            _ = a * a
        assert seen and set(seen) == {"inner"}
        seen.clear()
        _ = a * a
        assert seen and set(seen) == {"outer"}


def test_in_place_change_of_a_saved_original_still_raises():
    a = rawdev.ones(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        b = a * 2
        c = b * b
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_unpack_must_return_a_tensor():
    a = rawdev.ones(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = (a * a).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.backward()


def test_disable_saved_tensors_hooks_refuses_new_hooks_with_its_message():
    with disable_saved_tensors_hooks("no hooks in this region"):
        with pytest.raises(RuntimeError, match="no hooks in this region"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):   # usable again outside
        pass


@pytest.mark.parametrize("pin_memory", [False, True])
def test_save_on_cpu_moves_activations_off_the_device(driver, pin_memory):
    x = rawdev.tensor(rng().standard_normal((256, 16)).astype(np.float32), device="cuda")
    model = _mlp("cuda")
    want = _grads(model, x)
    model.zero_grad(set_to_none=True)
    rawdev.cuda.synchronize()
    base = rawdev.cuda.memory_allocated()
    loss = (model(x) ** 2).sum()
    kept_plain = rawdev.cuda.memory_allocated() - base
    del loss
    with save_on_cpu(pin_memory=pin_memory):
        loss = (model(x) ** 2).sum()
    kept_offloaded = rawdev.cuda.memory_allocated() - base
    assert kept_offloaded < kept_plain / 2, (kept_offloaded, kept_plain)
    loss.backward()
    got = [p.grad.cpu().numpy() for p in model.parameters()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
