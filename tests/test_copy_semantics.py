"""Ops PyTorch documents as returning a new tensor return one (repeat, tile, expand_copy and the other *_copy ops,
contiguous() of an expanded view, clone of views, reshape when no view is possible), in-place writes into an
expanded tensor (elements sharing memory) raise PyTorch's error (fill_/zero_ and scalar fills excepted, as in
PyTorch), and class-index losses refuse int32 targets as PyTorch does — on the cpu and the simulated GPU."""
import copy

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.ops import cuda as cuda_ops

OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
           "location. Please clone() the tensor before performing the operation.")
RNG = np.random.default_rng(20261204)


@pytest.fixture(params=["cpu", "sim"])
def device(request):
    if request.param == "cpu":
        yield "cpu"
        return
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    cuda_ops.set_poison(True)   # kernel outputs start as NaN: unwritten elements show
    yield "cuda"
    cuda_ops.set_poison(False)


def host(t):
    return np.asarray(t.detach().cpu())


def shares(a, b):
    """True when a and b use one storage (the cpu root array or the device buffer), whatever the offset."""
    if a.is_cuda:
        return a._buf is b._buf
    return a._root is b._root


def test_the_reported_repeat_case(device):
    x = rawdev.ones(1, device=device)
    y = x.repeat(4)
    y[0] = 7
    assert host(y).tolist() == [7, 1, 1, 1] and host(x).tolist() == [1]


@pytest.mark.parametrize("shape,reps", [((1,), (4,)), ((1, 3), (2, 1)), ((3, 1), (1, 4)), ((2, 3), (1, 1)),
                                        ((1,), (3, 1)), ((1, 1), (2, 2, 1)), ((), (3,)), ((2,), (1,))])
def test_repeat_and_tile_return_new_memory(device, shape, reps):
    a = RNG.standard_normal(shape).astype(np.float32)
    for op, ref in ((lambda t: t.repeat(*reps), np.tile(a, reps)), (lambda t: t.tile(reps), np.tile(a, reps))):
        x = rawdev.tensor(a, device=device)
        y = op(x)
        np.testing.assert_array_equal(host(y), ref)
        assert not shares(x, y) and y.is_contiguous()
        y.add_(1)   # writable element by element (no stride 0), and x keeps its values
        np.testing.assert_array_equal(host(y), ref + 1)
        np.testing.assert_array_equal(host(x), a)


def test_view_copy_ops_return_new_memory(device):
    a = RNG.standard_normal((2, 1, 3)).astype(np.float32)
    x = rawdev.tensor(a, device=device)
    cases = {
        "expand_copy": (rawdev.expand_copy(x, (2, 4, 3)), np.broadcast_to(a, (2, 4, 3))),
        "permute_copy": (rawdev.permute_copy(x, (2, 0, 1)), a.transpose(2, 0, 1)),
        "transpose_copy": (rawdev.transpose_copy(x, 0, 2), a.transpose(2, 1, 0)),
        "view_copy": (rawdev.view_copy(x, (6,)), a.reshape(6)),
        "squeeze_copy": (rawdev.squeeze_copy(x, 1), a[:, 0]),
        "unsqueeze_copy": (rawdev.unsqueeze_copy(x, 0), a[None]),
        "select_copy": (rawdev.select_copy(x, 2, 1), a[:, :, 1]),
        "diagonal_copy": (rawdev.diagonal_copy(x[:, 0], 0), np.diagonal(a[:, 0])),
        "narrow_copy": (rawdev.narrow_copy(x, 2, 1, 2), a[:, :, 1:3]),
    }
    for name, (y, ref) in cases.items():
        np.testing.assert_array_equal(host(y), ref, err_msg=name)
        assert not shares(x, y), name
        y.mul_(2)
        np.testing.assert_array_equal(host(y), ref * 2, err_msg=name)
    np.testing.assert_array_equal(host(x), a)


def test_contiguous_and_clone_of_views_copy(device):
    a = RNG.standard_normal((3,)).astype(np.float32)
    x = rawdev.tensor(a, device=device)
    e = x.expand(2, 3)
    assert e.stride() == (0, 1) and shares(e, x)
    c = e.contiguous()
    assert c.stride() == (3, 1) and not shares(c, x)
    c[0, 0] = 5
    np.testing.assert_array_equal(host(x), a)
    k = x[1:].clone()
    k[0] = 9
    np.testing.assert_array_equal(host(x), a)
    t = rawdev.tensor(RNG.standard_normal((3, 4)).astype(np.float32), device=device)
    assert t.contiguous() is t   # already contiguous: itself, as PyTorch's


def test_reshape_is_a_view_when_strides_allow_and_a_copy_otherwise(device):
    a = RNG.standard_normal((4, 6)).astype(np.float32)
    x = rawdev.tensor(a, device=device)
    v = x.reshape(2, 2, 6)
    assert shares(v, x)
    xt = x.t()                                   # (6, 4) with strides (1, 6): no flat view
    r = xt.reshape(24)
    assert not shares(r, x)
    np.testing.assert_array_equal(host(r), a.T.reshape(24))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        xt.view(24)
    e = rawdev.tensor(a[0], device=device).expand(3, 6)
    assert shares(e.reshape(3, 2, 3), e)         # splitting the un-expanded dim: still a view (stride 0 kept)
    f = e.reshape(18)                            # merging an expanded dim: a copy with its own elements
    assert not shares(f, e) and f.stride() == (1,)
    f[0] = 100
    assert host(e)[0, 0] == a[0, 0]


WRITES = {
    "add_": lambda e: e.add_(1),
    "+=": lambda e: e.__iadd__(1),
    "*=": lambda e: e.__imul__(2),
    "mul_": lambda e: e.mul_(2),
    "sub_": lambda e: e.sub_(rawdev.ones(2, 3, device=e.device)),
    "copy_": lambda e: e.copy_(rawdev.zeros(2, 3, device=e.device)),
    "relu_": lambda e: e.relu_(),
    "clamp_": lambda e: e.clamp_(0, 1),
    "exp_": lambda e: e.exp_(),
    "uniform_": lambda e: e.uniform_(),
    "rawdev.relu_": lambda e: rawdev.relu_(e),
    "F.relu(inplace=True)": lambda e: F.relu(e, inplace=True),
    "F.leaky_relu(inplace=True)": lambda e: F.leaky_relu(e, inplace=True),
    "F.threshold(inplace=True)": lambda e: F.threshold(e, 0.5, 0.0, True),
    "setitem tensor": lambda e: e.__setitem__(slice(None), rawdev.zeros(3, device=e.device)),
    "index_put_": lambda e: e.index_put_((rawdev.tensor([0], device=e.device),), rawdev.zeros(3, device=e.device)),
    "masked_fill_": lambda e: e.masked_fill_(rawdev.ones(2, 3, dtype=rawdev.bool, device=e.device), 0.0),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_in_place_writes_into_an_expanded_tensor_raise(device, name):
    x = rawdev.tensor([1.0, 2.0, 3.0], device=device)
    e = x.expand(2, 3)
    with pytest.raises(RuntimeError, match=OVERLAP.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")):
        WRITES[name](e)
    assert host(x).tolist() == [1.0, 2.0, 3.0]   # nothing written


def test_fills_and_writes_into_non_overlapping_selections_of_an_expanded_tensor_work(device):
    x = rawdev.tensor([1.0, 2.0, 3.0], device=device)
    e = x.expand(2, 3)
    e[:, 0] = 4                   # a number: a fill (PyTorch allows it)
    e[0, 1] = rawdev.tensor(5.0)  # one element: no overlap
    e[1].add_(1)                  # a row: no overlap (it writes x)
    assert host(x).tolist() == [5.0, 6.0, 4.0]
    e.fill_(7)
    assert host(x).tolist() == [7.0, 7.0, 7.0]
    e.zero_()
    assert host(x).tolist() == [0.0, 0.0, 0.0]
    y = rawdev.ones(1, 3, device=device).expand(1, 3)   # stride 0 over a size-1 dim: no overlap
    y.add_(1)
    assert host(y).tolist() == [[2.0, 2.0, 2.0]]


@pytest.mark.parametrize("dtype,name", [(rawdev.int32, "Int"), (rawdev.int16, "Short"), (rawdev.int8, "Char")])
def test_class_index_losses_refuse_targets_that_are_not_long(dtype, name):
    x = rawdev.tensor(RNG.standard_normal((4, 3)).astype(np.float32))
    y = rawdev.tensor([0, 1, 2, 1], dtype=dtype)
    want = f"expected scalar type Long but found {name}"
    for fn in (lambda: F.cross_entropy(x, y), lambda: rawdev.nn.CrossEntropyLoss()(x, y),
               lambda: F.nll_loss(F.log_softmax(x, 1), y), lambda: rawdev.nn.NLLLoss()(x, y),
               lambda: F.cross_entropy(x[0], y[0])):
        with pytest.raises(RuntimeError, match=want):
            fn()


def test_class_index_losses_refuse_int32_targets_on_the_device():
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    x = rawdev.tensor(RNG.standard_normal((4, 3)).astype(np.float32), device="cuda")
    y = rawdev.tensor([0, 1, 2, 1], dtype=rawdev.int32, device="cuda")
    with pytest.raises(RuntimeError, match="\"nll_loss_forward_reduce_cuda_kernel_2d_index\" not implemented for "
                                           "'Int'"):
        F.cross_entropy(x, y)


def test_byte_targets_load_as_pytorch_reads_them():
    a = RNG.standard_normal((4, 3))
    x = rawdev.tensor(a.astype(np.float32))
    idx = [0, 1, 2, 1]
    lp = a - np.log(np.exp(a).sum(1, keepdims=True))
    ref = -np.mean(lp[np.arange(4), idx])
    for t in (rawdev.tensor(idx, dtype=rawdev.uint8), rawdev.tensor(idx)):
        assert abs(F.cross_entropy(x, t).item() - ref) <= 1e-6 * abs(ref)
        assert abs(F.nll_loss(F.log_softmax(x, 1), t).item() - ref) <= 1e-6 * abs(ref)


def test_a_deepcopy_made_after_backward_gets_its_own_gradients(device):
    # the DQN / EMA pattern: train, then copy the network; the copy's backward must not reach the original
    net = rawdev.nn.Sequential(rawdev.nn.Linear(4, 3), rawdev.nn.Tanh(), rawdev.nn.Linear(3, 2)).to(device)
    x = rawdev.randn(5, 4, device=device)
    net(x).sum().backward()
    before = [p.grad.cpu().numpy().copy() for p in net.parameters()]
    target = copy.deepcopy(net)
    target.zero_grad(set_to_none=True)
    target(x).square().sum().backward()
    for p, b in zip(net.parameters(), before):
        np.testing.assert_array_equal(p.grad.cpu().numpy(), b)        # the original's grads are untouched
    for p in target.parameters():
        assert p.grad is not None and p.grad.device == p.device
    y = target[0].weight * 2     # and a copy's view/graph bookkeeping starts fresh
    assert "_accumulate_grad" not in target[0].weight.__dict__ or \
        target[0].weight.__dict__["_accumulate_grad"].variable is target[0].weight
    del y
