"""torch.distributed.algorithms._checkpoint.checkpoint_wrapper on rawdev: a wrapped module really checkpoints
(its forward runs once under no_grad and again in backward) and its gradients equal the plain model's exactly,
on cpu and cuda; state_dict and named_parameters keep the plain names both ways; REENTRANT packs keyword
arguments and warns as PyTorch does; apply_activation_checkpointing replaces the selected submodules in place,
by check_fn or by an FSDP-style auto_wrap_policy."""
import copy

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    CheckpointWrapper,
    apply_activation_checkpointing,
    checkpoint_wrapper,
    offload_wrapper,
)

rng = np.random.default_rng()


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def where(request):
    if request.param == "cuda":
        return request.getfixturevalue("device")
    return rawdev.device("cpu")


class Counted(nn.Module):
    """Linear -> tanh -> Linear, counting its forward calls."""

    def __init__(self, n=6):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(n, 2 * n), nn.Linear(2 * n, n)
        self.calls = 0

    def forward(self, x, scale=None):
        self.calls += 1
        y = self.fc2(rawdev.tanh(self.fc1(x)))
        return y if scale is None else y * scale


def grads(model):
    """Parameter gradients by plain name (a parent's named_parameters keeps the wrappers' level: strip it)."""
    return {n.replace("_checkpoint_wrapped_module.", ""): p.grad.cpu().numpy() for n, p in model.named_parameters()}


def test_the_wrapped_forward_runs_again_in_backward_and_gradients_match_exactly(where):
    plain = Counted().to(where)
    block = Counted().to(where)
    block.load_state_dict(plain.state_dict())
    wrapped = checkpoint_wrapper(block)
    assert isinstance(wrapped, CheckpointWrapper) and wrapped._checkpoint_wrapped_module is block
    x_np = rng.standard_normal((5, 6)).astype(np.float32)
    xa = rawdev.tensor(x_np, device=where, requires_grad=True)
    xb = rawdev.tensor(x_np, device=where, requires_grad=True)
    ya, yb = plain(xa), wrapped(xb)
    assert block.calls == 1
    np.testing.assert_array_equal(ya.detach().cpu().numpy(), yb.detach().cpu().numpy())
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    assert block.calls == 2   # recomputed during backward: the activations were not kept
    ga, gb = grads(plain), grads(wrapped)
    assert ga.keys() == gb.keys() == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    for k in ga:
        np.testing.assert_array_equal(ga[k], gb[k])
    np.testing.assert_array_equal(xa.grad.cpu().numpy(), xb.grad.cpu().numpy())
    # an independent float64 reference of d(sum y^2)/dx
    w1, b1 = (plain.fc1.weight.detach().cpu().numpy().astype(np.float64),
              plain.fc1.bias.detach().cpu().numpy().astype(np.float64))
    w2, b2 = (plain.fc2.weight.detach().cpu().numpy().astype(np.float64),
              plain.fc2.bias.detach().cpu().numpy().astype(np.float64))
    h = np.tanh(x_np @ w1.T + b1)
    y = h @ w2.T + b2
    gx = ((2 * y) @ w2 * (1 - h ** 2)) @ w1
    np.testing.assert_allclose(xb.grad.cpu().numpy(), gx, rtol=1e-4, atol=1e-5)


def test_no_grad_runs_once():
    block = Counted()
    wrapped = checkpoint_wrapper(block)
    with rawdev.no_grad():
        wrapped(rawdev.ones(2, 6))
    assert block.calls == 1


def test_state_dict_and_parameter_names_are_the_plain_modules():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    plain = copy.deepcopy(model)
    apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, nn.Linear))
    assert isinstance(model[0], CheckpointWrapper) and isinstance(model[2], CheckpointWrapper)
    assert not isinstance(model[1], CheckpointWrapper)
    assert list(model.state_dict()) == list(plain.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    # as in PyTorch: the wrapper's own named_parameters drop its level; a parent's walk (Module's) keeps it
    assert [n for n, _ in model[0].named_parameters()] == ["weight", "bias"]
    assert [n for n, _ in model.named_parameters()][:1] == ["0._checkpoint_wrapped_module.weight"]
    other = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    apply_activation_checkpointing(other, check_fn=lambda m: isinstance(m, nn.Linear))
    other.load_state_dict(plain.state_dict())              # plain -> wrapped
    fresh = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    fresh.load_state_dict(other.state_dict())               # wrapped -> plain
    for k, v in plain.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k].numpy(), v.numpy())
    root = checkpoint_wrapper(nn.Linear(3, 3))               # the wrapper at the root: keys without any prefix
    assert list(root.state_dict()) == ["weight", "bias"]
    root.load_state_dict(nn.Linear(3, 3).state_dict())
    assert root.in_features == 3 and root.weight is root._checkpoint_wrapped_module.weight   # forwarded lookups
    seq = checkpoint_wrapper(nn.Sequential(nn.Linear(2, 2), nn.Tanh()))
    assert isinstance(seq[1], nn.Tanh)


def test_reentrant_packs_keyword_tensors_and_warns():
    block = Counted(4)
    plain = copy.deepcopy(block)
    with pytest.warns(FutureWarning, match="CheckpointImpl.REENTRANT will soon be removed"):
        wrapped = checkpoint_wrapper(block, CheckpointImpl.REENTRANT)
    x = rawdev.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    sa = rawdev.tensor([1.5], requires_grad=True)
    sb = rawdev.tensor([1.5], requires_grad=True)
    plain(x, scale=sa).sum().backward()
    wrapped(x, scale=sb).sum().backward()
    assert block.calls == 2 and sb.grad is not None
    np.testing.assert_array_equal(sa.grad.numpy(), sb.grad.numpy())
    for k, v in grads(plain).items():
        np.testing.assert_array_equal(v, grads(wrapped)[k])


def test_a_custom_checkpoint_fn_gets_the_module_and_its_kwargs():
    seen = []

    def my_checkpoint(fn, *args, tag, **kwargs):
        seen.append(tag)
        return fn(*args, **kwargs)

    wrapped = checkpoint_wrapper(nn.Linear(2, 2), checkpoint_fn=my_checkpoint, tag="t")
    wrapped(rawdev.ones(1, 2))
    assert seen == ["t"]


def test_dropout_draws_the_same_mask_when_recomputed():
    rawdev.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    plain = copy.deepcopy(model)
    apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, nn.Dropout))
    x = rawdev.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    rawdev.manual_seed(1)
    plain(x).sum().backward()
    rawdev.manual_seed(1)
    model(x).sum().backward()
    for k, v in grads(plain).items():
        np.testing.assert_array_equal(v, grads(model)[k])


def test_nested_selection_and_an_auto_wrap_policy():
    inner = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    model = nn.Sequential(inner, nn.Linear(4, 100))
    apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, (nn.Sequential, nn.Linear)))
    assert isinstance(model[0], CheckpointWrapper) and isinstance(model[1], CheckpointWrapper)
    assert isinstance(model[0]._checkpoint_wrapped_module[0], CheckpointWrapper)   # post-order: inner first
    assert list(model.state_dict()) == ["0.0.weight", "0.0.bias", "1.weight", "1.bias"]
    calls = []

    def size_policy(module, recurse, nonwrapped_numel, min_num_params=100):   # PyTorch's size-based rule
        calls.append((type(module).__name__, recurse, nonwrapped_numel))
        return True if recurse else nonwrapped_numel >= min_num_params

    model = nn.Sequential(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)), nn.Linear(10, 10))
    apply_activation_checkpointing(model, auto_wrap_policy=size_policy, check_fn=lambda m: False)
    assert not isinstance(model[0], CheckpointWrapper) and isinstance(model[1], CheckpointWrapper)
    assert ("Sequential", False, 40) in calls and ("Linear", False, 110) in calls
    assert all(not (c[0] == "Sequential" and c[2] == 150 and not c[1]) for c in calls)   # the root is never wrapped
    with pytest.raises(ValueError, match="Expected 3 to be callable or be a pre-defined wrap policy"):
        apply_activation_checkpointing(model, auto_wrap_policy=3)


def test_offload_wrapper_keeps_activations_on_the_host_and_gradients_exact(driver):
    rawdev.manual_seed(3)
    block = nn.Sequential(nn.Linear(32, 128), nn.Tanh(), nn.Linear(128, 128), nn.Sigmoid()).to("cuda")
    x = rawdev.randn(256, 32, device="cuda")
    want = grads_of(block, x)
    wrapped = offload_wrapper(copy.deepcopy(block))
    assert set(wrapped.state_dict()) == set(block.state_dict())
    rawdev.cuda.synchronize()
    base = rawdev.cuda.memory_allocated()
    out = (block(x) ** 2).sum()
    plain = rawdev.cuda.memory_allocated() - base
    del out
    out = (wrapped(x) ** 2).sum()
    offloaded = rawdev.cuda.memory_allocated() - base
    # the tanh output (256 x 128 float32) now waits on the host; the block's output stays, as the loss holds it
    assert offloaded <= plain - 256 * 128 * 4, (offloaded, plain)
    out.backward()
    for p, w in zip(wrapped.parameters(), want):
        np.testing.assert_array_equal(p.grad.cpu().numpy(), w)


def grads_of(model, x):
    model.zero_grad(set_to_none=True)
    (model(x) ** 2).sum().backward()
    out = [p.grad.cpu().numpy().copy() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return out
