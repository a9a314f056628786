"""Module and tensor hooks (PyTorch's semantics and wording): forward pre/post hooks (with_kwargs, prepend,
always_call, replacements), full backward (pre) hooks, global module hooks, state_dict hooks, handles,
Tensor.register_hook / retain_grad / post-accumulate hooks, and the Module tree helpers."""
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.tensor.factory import from_numpy

import _poisoned_device

device = _poisoned_device.device   # the fixture its tests take

RNG = np.random.default_rng()


def f64(*shape, requires_grad=False):
    return from_numpy(RNG.standard_normal(shape)).requires_grad_(requires_grad)


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(from_numpy(np.array([2.0, -3.0, 0.5])))

    def forward(self, x, shift=0.0):
        return x * self.w + shift


# ------------------------------------------------------------------ forward hooks
def test_forward_pre_hook_replaces_args_and_kwargs_in_order():
    m = Scale()
    order = []
    x = f64(4, 3)
    h1 = m.register_forward_pre_hook(lambda mod, args: order.append("a") or (args[0] * 2,))
    h2 = m.register_forward_pre_hook(lambda mod, args, kw: order.append("kw") or (args, {"shift": 1.0}),
                                     with_kwargs=True)
    h3 = m.register_forward_pre_hook(lambda mod, args: order.append("first"), prepend=True)
    y = m(x)
    assert order == ["first", "a", "kw"]
    np.testing.assert_allclose(np.asarray(y), np.asarray(x) * 2 * [2.0, -3.0, 0.5] + 1.0, rtol=1e-12, atol=1e-14)
    # a single non-tuple return value becomes the 1-tuple of args
    h1.remove()
    h4 = m.register_forward_pre_hook(lambda mod, args: args[0] + 1)
    np.testing.assert_allclose(np.asarray(m(x)), (np.asarray(x) + 1) * [2.0, -3.0, 0.5] + 1.0, rtol=1e-12, atol=1e-14)
    for h in (h2, h3, h4):
        h.remove()
    h2.remove()   # removing twice is harmless
    np.testing.assert_allclose(np.asarray(m(x)), np.asarray(x) * [2.0, -3.0, 0.5], rtol=1e-12, atol=1e-14)


def test_forward_pre_hook_with_kwargs_bad_return():
    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kw: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, new_kwargs\)"):
        m(f64(2, 3))


def test_forward_hook_replaces_output_and_sees_kwargs():
    m = Scale()
    x = f64(2, 3)
    seen = {}
    m.register_forward_hook(lambda mod, args, kw, out: seen.update(kw=dict(kw), out=out), with_kwargs=True)
    h = m.register_forward_hook(lambda mod, args, out: out * 10)
    y = m(x, shift=0.5)
    assert seen["kw"] == {"shift": 0.5}
    np.testing.assert_allclose(np.asarray(y), (np.asarray(x) * [2.0, -3.0, 0.5] + 0.5) * 10, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(seen["out"]), np.asarray(x) * [2.0, -3.0, 0.5] + 0.5, rtol=1e-12, atol=1e-14)
    h.remove()
    np.testing.assert_allclose(np.asarray(m(x)), np.asarray(x) * [2.0, -3.0, 0.5], rtol=1e-12, atol=1e-14)


def test_forward_hook_prepend_order():
    m = Scale()
    order = []
    m.register_forward_hook(lambda *a: order.append(1))
    m.register_forward_hook(lambda *a: order.append(2))
    m.register_forward_hook(lambda *a: order.append(0), prepend=True)
    m(f64(1, 3))
    assert order == [0, 1, 2]


def test_always_call_hook_runs_when_forward_raises():
    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Bad()
    calls = []
    m.register_forward_hook(lambda mod, args, out: calls.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: calls.append(("plain", out)))
    with pytest.raises(ValueError, match="boom"):
        m(f64(2))
    assert calls == [("always", None)]
    # an always_call hook that itself raises is reported as a warning; forward's error propagates
    m2 = Bad()
    m2.register_forward_hook(lambda mod, args, out: 1 / 0, always_call=True)
    with pytest.warns(UserWarning, match="always_call=True`` raised an exception that was silenced"):
        with pytest.raises(ValueError, match="boom"):
            m2(f64(2))


def test_handle_is_a_context_manager():
    m = Scale()
    calls = []
    with m.register_forward_hook(lambda *a: calls.append(1)) as h:
        assert isinstance(h, rawdev.utils.hooks.RemovableHandle)
        m(f64(1, 3))
    m(f64(1, 3))
    assert calls == [1]
    assert not m._forward_hooks


def test_global_forward_hooks_run_for_every_module():
    from rawdev.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    names = []
    h1 = register_module_forward_pre_hook(lambda mod, args: names.append("pre " + type(mod).__name__))
    h2 = register_module_forward_hook(lambda mod, args, out: names.append("post " + type(mod).__name__))
    try:
        net(rawdev.randn(2, 3))
    finally:
        h1.remove()
        h2.remove()
    assert names == ["pre Sequential", "pre Linear", "post Linear", "pre ReLU", "post ReLU", "post Sequential"]
    names.clear()
    net(rawdev.randn(2, 3))
    assert names == []


# ------------------------------------------------------------------ backward hooks
def test_full_backward_hooks_see_and_replace_gradients():
    m = Scale()
    w = np.asarray(m.w.detach()).copy()
    x = f64(5, 3, requires_grad=True)
    seen = {}

    def pre(mod, grad_output):
        seen["go"] = np.asarray(grad_output[0]).copy()
        return (grad_output[0] * 2,)

    def post(mod, grad_input, grad_output):
        seen["gi"] = np.asarray(grad_input[0]).copy()
        seen["go2"] = np.asarray(grad_output[0]).copy()
        return (grad_input[0] + 1,)

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(post)
    y = m(x)
    gy = RNG.standard_normal((5, 3))
    y.backward(from_numpy(gy))
    np.testing.assert_allclose(seen["go"], gy, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(seen["go2"], 2 * gy, rtol=1e-12, atol=1e-14)        # the pre-hook's replacement
    np.testing.assert_allclose(seen["gi"], 2 * gy * w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(x.grad), 2 * gy * w + 1, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(m.w.grad), (2 * gy * np.asarray(x.detach())).sum(0), rtol=1e-12, atol=1e-14)


def test_backward_hook_grad_input_has_an_entry_per_argument():
    class Two(nn.Module):
        def forward(self, a, k, b):
            return a * k + b, a - b

    m = Two()
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((gi, go)))
    a, b = f64(3, requires_grad=True), f64(3)
    y1, y2 = m(a, 3.0, b)
    (y1.sum() + 2 * y2.sum()).backward()
    (gi, go), = got
    assert len(gi) == 3 and gi[1] is None and gi[2] is None
    np.testing.assert_allclose(np.asarray(gi[0]), np.full(3, 5.0))
    assert len(go) == 2
    np.testing.assert_allclose(np.asarray(go[1]), np.full(3, 2.0))


def test_backward_hook_when_no_input_requires_grad():
    m = nn.Linear(3, 2)
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((gi, tuple(go[0].shape))))
    m(rawdev.randn(4, 3)).sum().backward()
    assert got == [((None,), (4, 2))]
    m2 = nn.Linear(3, 2)
    m2.register_full_backward_hook(lambda mod, gi, go: (rawdev.ones(4, 3),))
    with pytest.raises(RuntimeError, match="where no input requires gradient should always return None"):
        m2(rawdev.randn(4, 3)).sum().backward()


def test_backward_hook_wrong_number_of_grads():
    m = Scale()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, but "
                                           "expected 1"):
        m(f64(2, 3, requires_grad=True)).sum().backward()
    m2 = Scale()
    m2.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, got 2"):
        m2(f64(2, 3, requires_grad=True)).sum().backward()


def test_backward_hooks_not_set_up_under_no_grad():
    m = Scale()
    calls = []
    m.register_full_backward_hook(lambda *a: calls.append(1))
    with rawdev.no_grad():
        y = m(f64(2, 3, requires_grad=True))
    assert y.grad_fn is None and calls == []


def test_backward_hooks_cuda_matches_cpu(device):
    rawdev.manual_seed(3)
    net = nn.Sequential(nn.Linear(7, 33), nn.Tanh(), nn.Linear(33, 5))
    net.to(device)
    seen = []
    net[2].register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    net[0].register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].cpu()))
    x = rawdev.randn(9, 7).to(device).requires_grad_()
    net(x).sum().backward()
    # the same gradients computed by hand on the host (float64)
    W0, b0 = np.asarray(net[0].weight.detach().cpu(), np.float64), np.asarray(net[0].bias.detach().cpu(), np.float64)
    W2 = np.asarray(net[2].weight.detach().cpu(), np.float64)
    xv = np.asarray(x.detach().cpu(), np.float64)
    h = np.tanh(xv @ W0.T + b0)
    gh = np.full((9, 5), 3.0) @ W2
    gz = gh * (1 - h * h)
    np.testing.assert_allclose(np.asarray(seen[0], np.float64), gz, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(x.grad.cpu(), np.float64), gz @ W0, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(net[0].weight.grad.cpu(), np.float64), gz.T @ xv, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ tensor hooks
def test_tensor_hooks_on_leaf_and_non_leaf():
    x = f64(4, requires_grad=True)
    xv = np.asarray(x.detach()).copy()
    hx = x.register_hook(lambda g: g * 10)
    y = x * x
    got = []
    y.register_hook(lambda g: got.append(np.asarray(g).copy()))
    hy = y.register_hook(lambda g: g + 1)
    y.retain_grad()
    y.sum().backward()
    np.testing.assert_allclose(got[0], np.ones(4))
    np.testing.assert_allclose(np.asarray(y.grad), np.full(4, 2.0))     # retain_grad sees the hooked grad
    np.testing.assert_allclose(np.asarray(x.grad), 10 * 2 * 2 * xv, rtol=1e-12, atol=1e-14)
    hx.remove()
    hy.remove()
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * xv, rtol=1e-12, atol=1e-14)


def test_tensor_hook_applies_to_autograd_grad_and_errors():
    x = f64(3, requires_grad=True)
    x.register_hook(lambda g: g * 3)
    g, = rawdev.autograd.grad((x * 2).sum(), x)
    np.testing.assert_allclose(np.asarray(g), np.full(3, 6.0))
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        f64(3).register_hook(lambda g: g)


def test_post_accumulate_grad_hook():
    p = f64(3, requires_grad=True)
    seen = []
    h = p.register_post_accumulate_grad_hook(lambda t: seen.append(np.asarray(t.grad).copy()))
    (p * 2).sum().backward()
    (p * 3).sum().backward()
    np.testing.assert_allclose(seen[0], np.full(3, 2.0))
    np.testing.assert_allclose(seen[1], np.full(3, 5.0))
    h.remove()
    (p * 3).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (p * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_retain_grad_on_non_leaf_cuda(device):
    x = rawdev.randn(37, device=device, requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(np.asarray(y.grad.cpu()), 2 * np.asarray(y.detach().cpu()), rtol=1e-5)


# ------------------------------------------------------------------ state_dict hooks and buffers
def test_non_persistent_buffer_not_in_state_dict():
    m = nn.Linear(2, 2)
    m.register_buffer("running", rawdev.zeros(2), persistent=False)
    m.register_buffer("kept", rawdev.ones(2))
    assert set(m.state_dict()) == {"weight", "bias", "kept"}
    assert "running" in dict(m.named_buffers())
    m.load_state_dict({"weight": rawdev.zeros(2, 2), "bias": rawdev.zeros(2), "kept": rawdev.zeros(2)})


def test_state_dict_hooks():
    m = nn.Sequential(nn.Linear(2, 3))
    calls = []
    m[0].register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix, keep_vars)))

    def post(mod, sd, prefix, meta):
        sd[prefix + "extra"] = rawdev.ones(1)
    m[0].register_state_dict_post_hook(post)
    sd = m.state_dict()
    assert calls == [("pre", "0.", False)]
    assert list(sd) == ["0.weight", "0.bias", "0.extra"]
    m[0].register_state_dict_post_hook(lambda *a: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()


def test_load_state_dict_hooks_rename_and_clear_keys():
    m = nn.Linear(2, 3)
    src = nn.Linear(2, 3)
    old = OrderedDict(("old_" + k, v) for k, v in src.state_dict().items())

    def rename(mod, sd, prefix, meta, strict, missing, unexpected, errors):
        for k in list(sd):
            if k.startswith(prefix + "old_"):
                sd[prefix + k[len(prefix) + 4:]] = sd.pop(k)
    h = m.register_load_state_dict_pre_hook(rename)
    m.load_state_dict(old)
    np.testing.assert_array_equal(np.asarray(m.weight.detach()), np.asarray(src.weight.detach()))
    h.remove()
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "weight", "bias"'):
        m.load_state_dict(old)
    def forgive(mod, keys):
        keys.missing_keys.clear()
        keys.unexpected_keys.clear()
    h = m.register_load_state_dict_post_hook(forgive)
    res = m.load_state_dict({"zzz": rawdev.ones(1)})
    assert res.missing_keys == [] and res.unexpected_keys == []
    h.remove()
    m.register_load_state_dict_post_hook(lambda mod, keys: keys)
    with pytest.raises(RuntimeError, match="are not expected to return new values"):
        m.load_state_dict(src.state_dict())
    # the private PyTorch form, without the module argument
    m2 = nn.Linear(2, 3)
    m2._register_load_state_dict_pre_hook(lambda sd, prefix, *a: sd.update(old) or rename(None, sd, prefix, *a))
    m2.load_state_dict({})
    np.testing.assert_array_equal(np.asarray(m2.bias.detach()), np.asarray(src.bias.detach()))


# ------------------------------------------------------------------ the Module tree
def test_named_modules_and_parameters_duplicates():
    shared = nn.Linear(2, 2)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in net.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in net.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert [n for n, _ in net.named_modules(prefix="net")] == ["net", "net.0", "net.1"]
    memo = {id(shared)}
    assert [n for n, _ in net.named_modules(memo=memo)] == ["", "1"]
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == ["0.weight", "0.bias", "2.weight",
                                                                            "2.bias"]


def test_get_submodule_and_parameter():
    net = nn.Sequential(OrderedDict(enc=nn.Sequential(nn.Linear(2, 3)), act=nn.ReLU()))
    assert net.get_submodule("enc.0") is net.enc[0]
    assert net.get_submodule("") is net
    assert net.get_parameter("enc.0.bias") is net.enc[0].bias
    with pytest.raises(AttributeError, match="Sequential has no attribute `nope`"):
        net.get_submodule("enc.nope")
    with pytest.raises(AttributeError, match="`training` is not an nn.Parameter"):
        net.get_parameter("act.training")


def test_apply_train_eval_requires_grad_zero_grad():
    net = nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.5))
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "Dropout", "Sequential"]
    assert net.train(False) is net and not net[1].training
    net.train()
    assert net[0].training
    net.eval()
    assert not net.training and not net[0].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    net(rawdev.randn(4, 2)).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(np.all(np.asarray(p.grad) == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_repr_nesting_and_extra_repr():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2, bias=False)

        def extra_repr(self):
            return "k=3"

    net = nn.Sequential(Block(), nn.ReLU())
    assert repr(net) == ("Sequential(\n"
                         "  (0): Block(\n"
                         "    k=3\n"
                         "    (fc): Linear(in_features=2, out_features=2, bias=False)\n"
                         "  )\n"
                         "  (1): ReLU()\n"
                         ")")


def test_module_dtype_and_memory_format_conversions():
    m = nn.Linear(2, 2)
    assert m.to(memory_format=rawdev.channels_last) is m
    assert m.double().weight.dtype is rawdev.float64
    assert m.half().weight.dtype is rawdev.float16
    assert m.float().weight.dtype is rawdev.float32
    assert m.type(rawdev.float64).bias.dtype is rawdev.float64
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.to(rawdev.float32, memory_format=rawdev.contiguous_format)
    assert m.weight.dtype is rawdev.float32
