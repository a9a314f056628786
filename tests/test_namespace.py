"""The torch namespace programs touch: rawdev.Size, the default dtype, memory formats, the module paths PyTorch
programs import, and accelerator, backends, amp, compile, print options, deterministic and matmul-precision
switches — each with what it really does in rawdev."""
import pickle
import warnings

import numpy as np
import pytest
import rawdev
import rawdev as torch

import _poisoned_device

device = _poisoned_device.device   # the fixture its tests take


def test_accelerator_follows_cuda(driver):
    assert torch.accelerator.is_available() is True
    assert torch.accelerator.current_accelerator().type == "cuda"
    assert torch.accelerator.device_count() == torch.cuda.device_count() >= 1
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    assert torch.ones(2, device=device).is_cuda


def test_backends_switches():
    assert torch.backends.mps.is_available() is False
    assert torch.backends.cudnn.is_available() is False
    torch.backends.cudnn.benchmark = True
    assert torch.backends.cudnn.benchmark is True
    torch.backends.cudnn.benchmark = False
    assert torch.backends.cuda.matmul.allow_tf32 is False
    torch.set_float32_matmul_precision("high")
    assert torch.backends.cuda.matmul.allow_tf32 is True and torch.get_float32_matmul_precision() == "high"
    torch.set_float32_matmul_precision("highest")
    assert torch.backends.cuda.matmul.allow_tf32 is False
    with pytest.raises(RuntimeError, match="Invalid precision"):
        torch.set_float32_matmul_precision("fast")


def test_compile_returns_the_model_and_works_as_a_decorator():
    m = torch.nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.compile(m) is m

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2
    assert f(torch.ones(2)).tolist() == [2.0, 2.0]


def test_amp_autocasts_and_scales(driver):
    m = torch.nn.Linear(4, 2).cuda()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.cuda.amp.GradScaler is deprecated, as in PyTorch
        scaler = torch.cuda.amp.GradScaler()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        y = m(torch.ones(3, 4, device="cuda"))
    assert y.dtype is torch.float16
    before = m.weight.detach().cpu().numpy().copy()
    scaler.scale(y.float().mean()).backward()   # sum: 65536 in the float16 gradient is inf (skipped step)
    assert m.weight.grad.dtype is torch.float32
    scaler.step(opt)
    scaler.update()
    assert (m.weight.detach().cpu().numpy() != before).any() and scaler.get_scale() == 65536.0


def test_print_options():
    t = torch.tensor([1.23456, 2.5])
    torch.set_printoptions(precision=2)
    try:
        assert repr(t) == "tensor([1.23, 2.50])"
        torch.set_printoptions(sci_mode=True)
        assert "e+00" in repr(t)
    finally:
        torch.set_printoptions(profile="default")
    assert repr(t) == "tensor([1.2346, 2.5000])"


def test_deterministic_and_default_device_switches():
    torch.use_deterministic_algorithms(True)
    assert torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(False)
    torch.set_default_device("cpu")
    assert torch.get_default_device().type == "cpu"
    with pytest.raises(NotImplementedError, match="pass device= to the constructor"):
        torch.set_default_device("cuda")


def test_grad_mode_context_managers_are_decorators_too():
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad()
    def f(t):
        return t * 2

    @torch.inference_mode()
    def g(t):
        return t * 3
    assert not f(x).requires_grad and not g(x).requires_grad
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


RNG = np.random.default_rng()


# ------------------------------------------------------------------ Size
def test_size_behaves_like_torch_size():
    s = rawdev.zeros(2, 3, 4).shape
    assert isinstance(s, tuple) and type(s) is rawdev.Size
    assert s == (2, 3, 4) and (2, 3, 4) == s and s != (2, 3)
    assert hash(s) == hash((2, 3, 4))
    assert s.numel() == 24 and rawdev.Size([]).numel() == 1 and rawdev.Size([0, 5]).numel() == 0
    assert type(s[1:]) is rawdev.Size and s[1:] == (3, 4) and s[-1] == 4 and type(s[0]) is int
    assert repr(s) == "rawdev.Size([2, 3, 4])" and str(rawdev.Size()) == "rawdev.Size([])"
    assert type(s + (5,)) is rawdev.Size and s + (5,) == (2, 3, 4, 5)
    assert type((1,) + s) is rawdev.Size and (1,) + s == (1, 2, 3, 4)
    assert type(s * 2) is rawdev.Size and 2 * rawdev.Size([1]) == (1, 1)
    back = pickle.loads(pickle.dumps(s))
    assert type(back) is rawdev.Size and back == s
    assert rawdev.zeros(rawdev.Size([3, 1])).shape == (3, 1)
    assert rawdev.zeros(2, 3).size() == rawdev.Size([2, 3]) and rawdev.zeros(2, 3).size(1) == 3
    with pytest.raises(TypeError):
        s + [1]


# ------------------------------------------------------------------ default dtype
def test_set_default_dtype_affects_factories_and_python_floats():
    assert rawdev.get_default_dtype() is rawdev.float32
    try:
        rawdev.set_default_dtype(rawdev.float64)
        assert rawdev.get_default_dtype() is rawdev.float64
        for t in (rawdev.zeros(2), rawdev.ones(2), rawdev.randn(2), rawdev.rand(2), rawdev.empty(2),
                  rawdev.full((2,), 1.5), rawdev.tensor([1.0]), rawdev.tensor(2.5), rawdev.arange(0, 1, 0.5),
                  rawdev.linspace(0, 1, 3), rawdev.eye(2), rawdev.tensor([1]) / 2, rawdev.sqrt(rawdev.tensor([4])),
                  rawdev.nn.Linear(2, 2).weight):
            assert t.dtype is rawdev.float64, t
        assert rawdev.tensor([1]).dtype is rawdev.int64 and rawdev.arange(3).dtype is rawdev.int64
        assert (rawdev.tensor([1.0], dtype=rawdev.float32) * 1.5).dtype is rawdev.float32
        rawdev.set_default_dtype(rawdev.float16)
        assert rawdev.tensor([1.0]).dtype is rawdev.float16
        with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
            rawdev.set_default_dtype(rawdev.int64)
    finally:
        rawdev.set_default_dtype(rawdev.float32)
    assert rawdev.tensor([1.0]).dtype is rawdev.float32


# ------------------------------------------------------------------ memory formats
def test_memory_format_names():
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        fmt = getattr(rawdev, name)
        assert isinstance(fmt, rawdev.memory_format) and repr(fmt) == "rawdev." + name
        assert pickle.loads(pickle.dumps(fmt)) is fmt


def test_channels_last_layout(device):
    a = RNG.standard_normal((2, 3, 5, 7)).astype(np.float32)
    x = rawdev.tensor(a, device=device)
    y = x.to(memory_format=rawdev.channels_last)
    assert y.shape == (2, 3, 5, 7) and y.stride() == (105, 1, 21, 3)
    assert y.is_contiguous(memory_format=rawdev.channels_last) and not y.is_contiguous()
    assert x.is_contiguous(memory_format=rawdev.contiguous_format)
    assert not x.is_contiguous(memory_format=rawdev.channels_last)
    np.testing.assert_array_equal(np.asarray(y.cpu()), a)
    assert y.contiguous(memory_format=rawdev.channels_last) is y
    z = y.contiguous()
    assert z.stride() == (105, 35, 7, 1)
    np.testing.assert_array_equal(np.asarray(z.cpu()), a)
    c = x.clone(memory_format=rawdev.channels_last)
    assert c.stride() == (105, 1, 21, 3)
    np.testing.assert_array_equal(np.asarray(c.cpu()), a)
    assert x.clone(memory_format=rawdev.preserve_format).is_contiguous()
    w = rawdev.tensor(RNG.standard_normal((2, 3, 4, 5, 6)).astype(np.float32), device=device)
    w3 = w.contiguous(memory_format=rawdev.channels_last_3d)
    assert w3.stride() == (360, 1, 90, 18, 3)
    assert w3.is_contiguous(memory_format=rawdev.channels_last_3d)
    np.testing.assert_array_equal(np.asarray(w3.cpu()), np.asarray(w.cpu()))


def test_channels_last_size_one_axes_and_errors():
    x = rawdev.zeros(4, 1, 3, 3)   # C == 1: the NCHW strides are channels-last strides too
    assert x.is_contiguous(memory_format=rawdev.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        rawdev.zeros(2, 3).to(memory_format=rawdev.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        rawdev.zeros(2, 3, 4, 5).contiguous(memory_format=rawdev.channels_last_3d)
    assert rawdev.zeros(2, 3).to(memory_format=rawdev.contiguous_format).is_contiguous()


def test_channels_last_is_differentiable_and_keeps_dtype_device_changes():
    a = RNG.standard_normal((2, 3, 4, 5))
    x = rawdev.tensor(a, requires_grad=True)
    y = x.to(rawdev.float32, memory_format=rawdev.channels_last)
    assert y.dtype is rawdev.float32 and y.stride() == (60, 1, 15, 3)
    g = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    (y * rawdev.tensor(g)).sum().backward()
    assert x.grad.dtype is rawdev.float64
    np.testing.assert_allclose(np.asarray(x.grad), g, rtol=1e-6)


def test_module_to_accepts_memory_format():
    m = rawdev.nn.Linear(3, 2)
    assert m.to(memory_format=rawdev.channels_last) is m
    assert m.to(rawdev.float64, memory_format=rawdev.contiguous_format).weight.dtype is rawdev.float64


# ------------------------------------------------------------------ module paths
def test_pytorch_module_paths():
    import rawdev.nn.modules.module as mm
    import rawdev.utils.hooks as uh
    assert mm.Module is rawdev.nn.Module
    assert callable(mm.register_module_forward_pre_hook) and callable(mm.register_module_full_backward_hook)
    h = rawdev.nn.Linear(1, 1).register_forward_hook(lambda *a: None)
    assert isinstance(h, uh.RemovableHandle)
    assert rawdev.autograd.graph.Node is rawdev.autograd.Node
    assert rawdev.is_inference_mode_enabled() is False
    for name in ("jacobian", "hessian", "vjp"):
        assert callable(getattr(rawdev.autograd.functional, name))
