"""rawdev.Size, the default dtype, memory formats and the module paths PyTorch programs import."""
import pickle

import numpy as np
import pytest
import rawdev
import rawdev.ops.cuda as cuda_ops

RNG = np.random.default_rng()


@pytest.fixture(params=["cpu", "sim", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    """'cpu', or 'cuda' on the simulator (outputs poisoned before kernels run), or on a real GPU when present."""
    if request.param == "cpu":
        yield "cpu"
        return
    import os

    from rawdev.runtime import reset_for_tests

    from conftest import real_gpu
    name = request.param
    if name == "gpu":
        if os.environ.get("RAWDEV_GPU_TESTS_ON") == "sim":
            name = "sim"
        elif real_gpu():
            pytest.skip(f"needs a real GPU: {real_gpu().split(': install')[0]}")
        else:
            name = "cuda"
    reset_for_tests(name)
    cuda_ops.set_poison(True)
    yield "cuda"
    cuda_ops.set_poison(False)


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
