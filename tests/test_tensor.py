"""Tensor on the cpu: storage, dtypes, views, constructors, numpy interop; device parsing; seeding."""
import copy

import numpy as np
import pytest
from rawdev import dtypes, random
from rawdev.device import device
from rawdev.nn import Parameter
from rawdev.tensor import (
    Size,
    Tensor,
    arange,
    as_tensor,
    empty,
    empty_like,
    from_numpy,
    full,
    full_like,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)


# ------------------------------------------------------------------------------------------ dtypes
@pytest.mark.parametrize("data,dt", [([1.0, 2.0], dtypes.float32), ([1, 2], dtypes.int64),
                                     ([True, False], dtypes.bool), (3.5, dtypes.float32), (7, dtypes.int64),
                                     (np.zeros(2, np.float64), dtypes.float64),
                                     (np.zeros(2, np.int32), dtypes.int32), (np.zeros(2, np.uint8), dtypes.uint8),
                                     (np.zeros(2, np.float16), dtypes.float16)])
def test_tensor_infers_dtype_like_pytorch(data, dt):
    assert tensor(data).dtype is dt


@pytest.mark.parametrize("dt", dtypes.ALL)
def test_every_dtype_round_trips_values(dt):
    vals = [0, 1, 1, 0] if dt is dtypes.bool else [0, 1, 2, 3]
    t = tensor(vals, dtype=dt)
    assert t.dtype is dt and t.element_size() == dt.itemsize and t.nbytes == 4 * dt.itemsize
    assert t.tolist() == [bool(v) if dt is dtypes.bool else v for v in vals]


def test_bfloat16_storage_and_rounding():
    t = tensor([1.0, 1.00390625, 1.01171875, -2.5, float("inf"), float("nan")], dtype=dtypes.bfloat16)
    assert t._data.dtype == np.uint16
    # 1 + 2**-8 is a tie between 1 and 1 + 2**-7: round to even (1.0); 1 + 3*2**-8 rounds up to 1 + 2**-6.
    v = t.numpy()
    assert v.dtype == np.float32
    assert v[:5].tolist() == [1.0, 1.0, 1.015625, -2.5, float("inf")] and np.isnan(v[5])
    assert t.to(dtypes.float32).dtype is dtypes.float32
    assert np.array_equal(dtypes.bf16_bits_to_f32(dtypes.f32_to_bf16_bits(v[:5])), v[:5])


def test_dtype_names_and_aliases():
    assert repr(dtypes.float32) == "rawdev.float32"
    assert dtypes.float is dtypes.float32 and dtypes.half is dtypes.float16 and dtypes.long is dtypes.int64
    assert dtypes.from_name("torch.bfloat16") is dtypes.bfloat16 and dtypes.from_name("BF16") is dtypes.bfloat16
    assert copy.deepcopy(dtypes.int32) is dtypes.int32
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.complex64"):
        from_numpy(np.zeros(2, np.complex64))


# ------------------------------------------------------------------------------------------ device
def test_device_parsing_and_equality():
    assert repr(device("cuda:1")) == "device(type='cuda', index=1)" and str(device("cuda:1")) == "cuda:1"
    assert device("cuda", 2) == device("cuda:2") == "cuda:2"
    assert device(0) == device("cuda:0") and device("cpu").index is None and repr(device("cpu")) == "device(type='cpu')"
    assert device("cuda") != device("cuda:0")  # no index means "current", as in PyTorch
    assert hash(device("cuda:0")) == hash(device("cuda", 0))
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type at start of device string: gpu"):
        device("gpu")
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        device("cuda:x")
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        device("cuda", -1)


# ------------------------------------------------------------------------------------------ storage and views
def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = from_numpy(a)
    a[0, 0] = 42
    assert t[0].tolist() == [42, 1, 2]
    t[1] = 7.0
    assert (a[1] == 7).all()
    assert t.data_ptr() == a.ctypes.data
    assert np.shares_memory(np.asarray(t), a)
    tt = from_numpy(a.T)   # a strided array is shared with its strides, as PyTorch's from_numpy
    assert tt.stride() == (1, 3) and np.shares_memory(np.asarray(tt), a)
    with pytest.raises(ValueError, match="negative"):
        from_numpy(a[:, ::-1])


def test_views_share_storage_and_version():
    t = arange(24, dtype=dtypes.float32).reshape(2, 3, 4)
    assert t.shape == Size([2, 3, 4]) and repr(t.shape) == "rawdev.Size([2, 3, 4])"
    v = t.view(6, -1)
    f = t.flatten()
    r = t[1]
    s = t[0:1]
    assert v.shape == (6, 4) and f.shape == (24,) and r.shape == (3, 4) and s.shape == (1, 3, 4)
    assert t.flatten(1).shape == (2, 12) and t.flatten(0, 1).shape == (6, 4)
    assert r.data_ptr() == t.data_ptr() + 12 * 4
    v0 = t._version
    r.fill_(-1)
    assert t._version == v0 + 1 and (t.numpy()[1] == -1).all() and (f.numpy()[12:] == -1).all()
    assert t[-1].data_ptr() == r.data_ptr()
    assert t[1:].shape == (1, 3, 4) and t[5:].shape == (0, 3, 4)
    d = t.detach()
    assert d.data_ptr() == t.data_ptr() and d._vc is t._vc and not d.requires_grad


def test_view_and_index_errors_match_pytorch():
    t = zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        t.view(4, 2)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        t[2]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        tensor(1.0)[0]
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        t.size(2)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        t.t().view(6)
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted to Scalar"):
        t.item()


def test_metadata():
    t = ones(2, 3, dtype=dtypes.float16)
    assert t.dim() == t.ndim == 2 and t.numel() == 6 and t.size() == (2, 3) and t.size(-1) == 3
    assert t.nbytes == 12 and t.itemsize == 2 and not t.is_cuda and t.is_cpu and t.device == device("cpu")
    assert t.is_contiguous() and t.contiguous() is t and len(t) == 2
    assert t.type() == "rawdev.HalfTensor" and zeros(1).type() == "rawdev.FloatTensor"
    assert t.is_leaf and t.grad is None and t.grad_fn is None and t._version == 0


def test_numpy_item_array():
    t = tensor([[1.5, 2.5]])
    assert t[0, ...].tolist() == [1.5, 2.5]
    assert tensor([3]).item() == 3 and isinstance(tensor([3]).item(), int)
    assert float(tensor(2.0)) == 2.0 and int(tensor(3)) == 3 and bool(tensor([True]))
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    p = Parameter(t)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        p.numpy()
    assert p.detach().numpy() is not None


def test_requires_grad_and_grad_slot():
    t = zeros(3)
    t.requires_grad_()
    assert t.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        zeros(3, dtype=dtypes.int64).requires_grad_()
    t.grad = ones(3)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        t.grad = ones(4)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        t.grad = ones(3, dtype=dtypes.float16)
    t.grad = None
    assert t.grad is None


def test_copy_fill_zero_clone():
    t = zeros(2, 3)
    t.copy_(tensor([1, 2, 3]))              # broadcast and cast int64 -> float32
    assert t.tolist() == [[1, 2, 3], [1, 2, 3]]
    c = t.clone()
    c.zero_()
    assert t.tolist()[0] == [1, 2, 3] and c.tolist()[0] == [0, 0, 0]
    t.fill_(tensor(4.0))
    assert (t.numpy() == 4).all()
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        t.copy_(zeros(4))
    b = zeros(2, dtype=dtypes.bfloat16)
    b.copy_(tensor([1.5, -3.0]))
    assert b.tolist() == [1.5, -3.0]


def test_data_property_swaps_storage():
    p = Parameter(zeros(2))
    q = ones(3)
    p.data = q
    assert p.shape == (3,) and p.data_ptr() == q.data_ptr() and isinstance(p, Parameter) and p.requires_grad


def test_to_on_cpu():
    t = tensor([1.25, 2.5])
    assert t.to("cpu") is t and t.to(dtypes.float32) is t
    d = t.to(dtypes.float64)
    assert d.dtype is dtypes.float64 and d.tolist() == [1.25, 2.5]
    assert t.to(d).dtype is dtypes.float64
    assert t.half().dtype is dtypes.float16 and t.long().tolist() == [1, 2] and t.bool().dtype is dtypes.bool
    assert t.to(dtypes.float32, copy=True) is not t
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        t.to(foo=1)


def test_deepcopy_keeps_class_and_grad():
    p = Parameter(randn(3))
    p.grad = randn(3)
    q = copy.deepcopy(p)
    assert isinstance(q, Parameter) and q.requires_grad and q.data_ptr() != p.data_ptr()
    assert q.tolist() == p.tolist() and q.grad.tolist() == p.grad.tolist()


def test_parameter():
    p = Parameter(tensor([1.0, 2.0]))
    assert p.requires_grad and isinstance(p, Tensor) and p.grad is None
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert not Parameter(zeros(1), requires_grad=False).requires_grad
    assert Parameter().shape == (0,)
    base = zeros(2)
    assert Parameter(base).data_ptr() == base.data_ptr()  # shares, like PyTorch


def test_repr():
    assert repr(tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(tensor([1, 2])) == "tensor([1, 2])"
    assert repr(tensor([1.0], dtype=dtypes.float16)) == "tensor([1.], dtype=rawdev.float16)"
    assert repr(tensor([True, False])) == "tensor([ True, False])"   # PyTorch pads to one width
    assert repr(zeros(0, 3)) == "tensor([], size=(0, 3))"


def test_repr_numbers_like_pytorch():
    """PyTorch's _Formatter, not numpy's printer (which wrote "0.    " and "2.5")."""
    assert repr(tensor([0.0, 0.7616])) == "tensor([0.0000, 0.7616])"
    assert repr(tensor([1.5, 2.25, -3.125])) == "tensor([ 1.5000,  2.2500, -3.1250])"
    assert repr(tensor(0.5)) == "tensor(0.5000)" and repr(tensor(3.0)) == "tensor(3.)"
    assert repr(tensor([0.1, 100.0])) == "tensor([  0.1000, 100.0000])"
    assert repr(tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(tensor([1e10, 1.0])) == "tensor([1.0000e+10, 1.0000e+00])"
    assert repr(tensor([float("nan"), float("inf"), 1.0])) == "tensor([nan, inf, 1.])"
    assert repr(tensor([1, -20, 300])) == "tensor([  1, -20, 300])"
    assert repr(tensor([1.5], dtype=dtypes.bfloat16)) == "tensor([1.5000], dtype=rawdev.bfloat16)"
    assert repr(tensor([1.7, -1.7], dtype=dtypes.float16)) == "tensor([ 1.7002, -1.7002], dtype=rawdev.float16)"
    assert repr(arange(12.0).reshape(3, 4) / 7) == (
        "tensor([[0.0000, 0.1429, 0.2857, 0.4286],\n"
        "        [0.5714, 0.7143, 0.8571, 1.0000],\n"
        "        [1.1429, 1.2857, 1.4286, 1.5714]])")
    # more than 1000 elements: summarized with the width of the shown ones, wrapped at 80 columns
    assert repr(arange(2000.0)) == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])")


# ------------------------------------------------------------------------------------------ constructors
def test_constructors():
    assert zeros(2, 3).tolist() == [[0] * 3] * 2 and zeros((2, 3)).shape == (2, 3) and zeros([4]).shape == (4,)
    assert ones(2, dtype=dtypes.int32).tolist() == [1, 1]
    assert full((2,), 7).dtype is dtypes.int64 and full((2,), 7.0).dtype is dtypes.float32
    assert full((1,), True).dtype is dtypes.bool
    assert empty(3, 4).shape == (3, 4) and empty(0).numel() == 0
    assert arange(5).tolist() == [0, 1, 2, 3, 4] and arange(5).dtype is dtypes.int64
    assert arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75] and arange(1, 2, 0.25).dtype is dtypes.float32
    x = randn(2, 3, dtype=dtypes.float64)
    for fn in (zeros_like, ones_like, empty_like, randn_like):
        y = fn(x)
        assert y.shape == x.shape and y.dtype is dtypes.float64
    assert full_like(x, 2).tolist() == [[2.0] * 3] * 2
    assert randint(0, 3, (100,)).numpy().max() <= 2
    assert zeros(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="negative dimension"):
        zeros(-1)
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        tensor(["a"])
    a = np.ones(3, np.float32)
    assert as_tensor(a).data_ptr() == a.ctypes.data


def test_manual_seed_reproduces():
    random.manual_seed(123)
    a, b = randn(5), rand(5)
    g = random.manual_seed(123)
    assert g.initial_seed() == 123
    assert randn(5).tolist() == a.tolist() and rand(5).tolist() == b.tolist()
    assert ((b.numpy() >= 0) & (b.numpy() < 1)).all()
    state = random.get_rng_state()
    c = randn(3)
    random.set_rng_state(state)
    assert randn(3).tolist() == c.tolist()


def test_default_dtype():
    assert dtypes.get_default_dtype() is dtypes.float32
    try:
        dtypes.set_default_dtype(dtypes.float64)
        assert tensor([1.0]).dtype is dtypes.float64 and zeros(2).dtype is dtypes.float64
        assert tensor([1]).dtype is dtypes.int64
    finally:
        dtypes.set_default_dtype(dtypes.float32)
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        dtypes.set_default_dtype(dtypes.int32)


def test_randint_high_size_overload():
    """randint(high, size) as in PyTorch (it raised 'size must be a tuple of ints, but got None')."""
    t = randint(5, (3,))
    assert t.shape == (3,) and t.dtype is dtypes.int64 and all(0 <= v < 5 for v in t.tolist())
    assert randint(3, 5, (2, 2)).shape == (2, 2) and randint(5, size=(4,)).shape == (4,)


def test_inplace_writes_into_a_leaf_that_requires_grad_are_refused():
    """PyTorch's errors: copy_/fill_/zero_/indexed writes into a leaf that requires grad, with grad mode
    on, are refused (rawdev wrote silently); under no_grad they are how parameters are set."""
    from rawdev.autograd import no_grad
    p = ones(3, requires_grad=True)
    for write in (lambda: p.copy_(zeros(3)), lambda: p.fill_(2.0), lambda: p.zero_()):
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place "
                                               "operation.$"):
            write()
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation.$"):
        p[0] = 2.0
    with no_grad():
        p.copy_(tensor([1.0, 2.0, 3.0]))
        p[0] = 5.0
    assert p.tolist() == [5.0, 2.0, 3.0] and p.requires_grad
    # an indexed write of a value that requires grad is recorded (CopySlices): the gradient reaches p
    buf = zeros(2)
    buf[0] = (p * 2)[0]
    buf.sum().backward()
    assert p.grad.tolist() == [2.0, 0.0, 0.0]


def test_scalar_conversions_and_requires_grad_messages():
    with pytest.raises(ValueError, match="^only one element tensors can be converted to Python scalars$"):
        float(ones(2))
    with pytest.raises(ValueError, match="^only one element tensors can be converted to Python scalars$"):
        int(zeros(0))
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require "
                                           "gradients$"):
        ones(2, dtype=dtypes.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require gradients$"):
        ones(2, dtype=dtypes.int64).requires_grad_()


def test_non_leaf_grad_read_warns_like_pytorch():
    import warnings
    a = ones(2, requires_grad=True)
    b = a * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert b.grad is None
    b.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert b.grad is None and a.grad is None       # retained, or a leaf: no warning
