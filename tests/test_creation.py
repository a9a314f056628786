"""Creation ops against numpy references on the cpu and the simulator (poisoned outputs): factories with
PyTorch's signatures and dtype inference, ramps, eye, tril/triu (and in place, with gradients), meshgrid,
new_* methods, tensor/as_tensor/from_numpy for every dtype; and the dtype conveniences users meet
(__format__, item, tolist, numpy() errors, finfo/iinfo)."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

from test_autograd import gradcheck

RNG = np.random.default_rng(5)
DEVICES = ["cpu", "cuda"]


@pytest.fixture(params=DEVICES)
def device(request):
    if request.param == "cuda":
        from rawdev.runtime import reset_for_tests
        reset_for_tests("sim")
        cuda_ops.set_poison(True)
        yield "cuda"
        cuda_ops.set_poison(False)
    else:
        yield "cpu"


def vals(t):
    return t.cpu().numpy()


# name -> (rawdev fn(device), numpy reference, rtol (0: exact))
CASES = {
    "arange_int": (lambda d: rawdev.arange(7, device=d), lambda: np.arange(7), 0),
    "arange_step": (lambda d: rawdev.arange(2, 20, 3, device=d), lambda: np.arange(2, 20, 3), 0),
    "arange_neg": (lambda d: rawdev.arange(5, -5, -2, dtype=rawdev.int32, device=d), lambda: np.arange(5, -5, -2), 0),
    "arange_float": (lambda d: rawdev.arange(0, 1, 0.1, device=d), lambda: np.arange(0, 1, 0.1), 1e-6),
    "arange_f64": (lambda d: rawdev.arange(-1.5, 3, 0.25, dtype=rawdev.float64, device=d),
                   lambda: np.arange(-1.5, 3, 0.25), 1e-15),
    "arange_empty": (lambda d: rawdev.arange(0, device=d), lambda: np.arange(0), 0),
    "linspace": (lambda d: rawdev.linspace(-2, 3, 11, device=d), lambda: np.linspace(-2, 3, 11), 1e-6),
    "linspace_1": (lambda d: rawdev.linspace(4, 9, 1, device=d), lambda: np.linspace(4, 9, 1), 0),
    "linspace_0": (lambda d: rawdev.linspace(4, 9, 0, device=d), lambda: np.linspace(4, 9, 0), 0),
    "linspace_f64": (lambda d: rawdev.linspace(0, 1, 7, dtype=rawdev.float64, device=d),
                     lambda: np.linspace(0, 1, 7), 1e-15),
    "linspace_int": (lambda d: rawdev.linspace(0, 10, 5, dtype=rawdev.int64, device=d),
                     lambda: np.trunc(np.linspace(0, 10, 5)), 0),
    "logspace": (lambda d: rawdev.logspace(-1, 2, 4, device=d), lambda: np.logspace(-1, 2, 4), 1e-5),
    "logspace_base2": (lambda d: rawdev.logspace(0, 4, 5, base=2, device=d),
                       lambda: np.logspace(0, 4, 5, base=2), 1e-5),
    "eye": (lambda d: rawdev.eye(3, device=d), lambda: np.eye(3), 0),
    "eye_rect": (lambda d: rawdev.eye(2, 4, dtype=rawdev.int64, device=d), lambda: np.eye(2, 4), 0),
    "eye_empty": (lambda d: rawdev.eye(0, 3, device=d), lambda: np.eye(0, 3), 0),
    "zeros": (lambda d: rawdev.zeros(2, 3, device=d), lambda: np.zeros((2, 3)), 0),
    "zeros_tuple": (lambda d: rawdev.zeros((2, 0), dtype=rawdev.int32, device=d), lambda: np.zeros((2, 0)), 0),
    "ones": (lambda d: rawdev.ones([3], dtype=rawdev.float16, device=d), lambda: np.ones(3), 0),
    "full": (lambda d: rawdev.full((2, 2), 2.5, device=d), lambda: np.full((2, 2), 2.5), 0),
    "full_int": (lambda d: rawdev.full((3,), 7, device=d), lambda: np.full(3, 7), 0),
    "full_bool": (lambda d: rawdev.full((2,), True, device=d), lambda: np.full(2, True), 0),
    "full_bf16": (lambda d: rawdev.full((2,), 1.5, dtype=rawdev.bfloat16, device=d), lambda: np.full(2, 1.5), 0),
    "ones_like": (lambda d: rawdev.ones_like(rawdev.zeros(2, 3, device=d)), lambda: np.ones((2, 3)), 0),
    "zeros_like_dt": (lambda d: rawdev.zeros_like(rawdev.ones(2, device=d), dtype=rawdev.int64),
                      lambda: np.zeros(2, np.int64), 0),
    "full_like": (lambda d: rawdev.full_like(rawdev.zeros(2, 2, device=d), -3.0), lambda: np.full((2, 2), -3.0), 0),
    "new_zeros": (lambda d: rawdev.ones(2, dtype=rawdev.float64, device=d).new_zeros(3, 2),
                  lambda: np.zeros((3, 2)), 0),
    "new_ones": (lambda d: rawdev.zeros(1, device=d).new_ones((2,)), lambda: np.ones(2), 0),
    "new_full": (lambda d: rawdev.zeros(1, dtype=rawdev.int32, device=d).new_full((2, 2), 4),
                 lambda: np.full((2, 2), 4), 0),
    "new_tensor": (lambda d: rawdev.zeros(1, device=d).new_tensor([[1, 2], [3, 4]]),
                   lambda: np.array([[1, 2], [3, 4]]), 0),
}

# expected dtypes (PyTorch's inference)
DTYPES = {"arange_int": rawdev.int64, "arange_float": rawdev.float32, "arange_neg": rawdev.int32,
          "full": rawdev.float32, "full_int": rawdev.int64, "full_bool": rawdev.bool, "full_bf16": rawdev.bfloat16,
          "ones": rawdev.float16,
          "new_zeros": rawdev.float64, "new_full": rawdev.int32, "new_tensor": rawdev.float32,
          "zeros_like_dt": rawdev.int64, "linspace_int": rawdev.int64, "eye_rect": rawdev.int64}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values(name, device):
    fn, ref, rtol = CASES[name]
    t = fn(device)
    want = ref()
    assert t.device.type == device
    assert tuple(t.shape) == want.shape
    if name in DTYPES:
        assert t.dtype is DTYPES[name]
    got = vals(t).astype(np.float64)
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    else:
        assert np.array_equal(got, want)


def test_empty_and_requires_grad(device):
    e = rawdev.empty(2, 3, device=device)
    assert e.shape == (2, 3) and e.dtype is rawdev.float32 and e.device.type == device
    assert rawdev.empty_like(e, dtype=rawdev.int32).dtype is rawdev.int32
    assert rawdev.zeros(2, requires_grad=True, device=device).requires_grad
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        rawdev.zeros(2, dtype=rawdev.int64, requires_grad=True, device=device)
    assert rawdev.zeros(2, 3, device=device).new_empty(4).shape == (4,)


# ------------------------------------------------------------------ tril / triu
@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 3), (1, 0, 4), (3, 1)])
def test_tril_triu_values(shape, k, device):
    a = RNG.standard_normal(shape).astype(np.float32)
    for dt in (np.float32, np.int64, np.bool_, np.float16):
        x = rawdev.from_numpy(np.ascontiguousarray(a.astype(dt))).to(device)
        assert np.array_equal(vals(rawdev.tril(x, k)), np.tril(a.astype(dt), k))
        assert np.array_equal(vals(x.triu(diagonal=k)), np.triu(a.astype(dt), k))
    # a non-contiguous input
    xt = rawdev.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).to(device).transpose(-1, -2)
    assert np.array_equal(vals(xt.tril(k)), np.tril(a, k))


def test_tril_in_place(device):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    x = rawdev.from_numpy(a.copy()).to(device)
    assert x.tril_(-1) is x
    assert np.array_equal(vals(x), np.tril(a, -1))
    y = rawdev.from_numpy(a.copy()).to(device)
    y.t().triu_()                     # a transposed view: the base is written
    assert np.array_equal(vals(y), np.triu(a.T).T)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        rawdev.tril(rawdev.zeros(3, device=device))


def test_tril_triu_gradients():
    x = rawdev.from_numpy(RNG.standard_normal((2, 3, 4))).requires_grad_(True)
    gradcheck(lambda t: rawdev.tril(t, 1), x)
    gradcheck(lambda t: rawdev.triu(t, -1), x)
    assert type(rawdev.tril(x).grad_fn).__name__ == "TrilBackward0"


def test_tril_cuda_gradients_match_cpu(dev):
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    w = RNG.standard_normal((3, 5)).astype(np.float32)
    grads = []
    for d in DEVICES:
        x = rawdev.from_numpy(a.copy()).to(d).requires_grad_(True)
        (rawdev.triu(x, 1) * rawdev.from_numpy(w).to(d)).sum().backward()
        grads.append(vals(x.grad))
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-4)


# ------------------------------------------------------------------ meshgrid
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing, device):
    a, b, c = np.arange(3.0), np.arange(4.0) * 2, np.arange(2.0) - 5
    got = rawdev.meshgrid(*(rawdev.from_numpy(v).to(device) for v in (a, b, c)), indexing=indexing)
    want = np.meshgrid(a, b, c, indexing=indexing)
    for g, w in zip(got, want):
        assert np.array_equal(vals(g), w)
    g2 = rawdev.meshgrid(rawdev.from_numpy(a).to(device), rawdev.from_numpy(b).to(device), indexing=indexing)
    for g, w in zip(g2, np.meshgrid(a, b, indexing=indexing)):
        assert np.array_equal(vals(g), w) and g.stride().count(0) == 1   # expanded views, no copy


def test_meshgrid_gradient():
    a = rawdev.from_numpy(RNG.standard_normal(3)).requires_grad_(True)
    b = rawdev.from_numpy(RNG.standard_normal(4)).requires_grad_(True)
    gradcheck(lambda x, y: rawdev.meshgrid(x, y, indexing="xy")[0] * rawdev.meshgrid(x, y, indexing="xy")[1], a, b)


# ------------------------------------------------------------------ tensor / as_tensor / from_numpy
ALL = [rawdev.float32, rawdev.float16, rawdev.bfloat16, rawdev.float64, rawdev.int64, rawdev.int32, rawdev.uint8,
       rawdev.bool]


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_tensor_every_dtype(dt, device):
    data = [[0, 1, 2], [3, 1, 0]]
    t = rawdev.tensor(data, dtype=dt, device=device)
    assert t.dtype is dt and t.device.type == device
    want = np.array(data).astype(np.bool_) if dt is rawdev.bool else np.array(data)
    assert t.tolist() == want.tolist()
    assert rawdev.as_tensor(t) is t
    if dt is not rawdev.bfloat16:
        a = np.array(data, dtype=dt.storage)
        f = rawdev.from_numpy(a)
        assert f.dtype is dt and np.shares_memory(np.asarray(f), a)
        s = rawdev.as_tensor(a)
        assert s.dtype is dt and np.shares_memory(np.asarray(s), a)


def test_tensor_inference():
    assert rawdev.tensor(3).dtype is rawdev.int64
    assert rawdev.tensor([1.0, 2]).dtype is rawdev.float32
    assert rawdev.tensor([True]).dtype is rawdev.bool
    assert rawdev.tensor(np.float64(1.5)).dtype is rawdev.float64
    with pytest.raises(TypeError):
        rawdev.from_numpy(np.zeros(2, np.complex64))


# ------------------------------------------------------------------ formatting and conversions
def test_format_item_tolist(device):
    loss = rawdev.tensor(0.123456, device=device)
    assert f"{loss:.4f}" == "0.1235" and f"{loss}" == f"{loss.item()}"
    assert f"{rawdev.tensor(7, device=device):>3}" == "  7"
    v = rawdev.tensor([1.0, 2.0], device=device)
    assert f"{v}" == str(v)
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{v:.2f}"
    assert rawdev.tensor([[1, 2]], device=device).tolist() == [[1, 2]]
    assert isinstance(rawdev.tensor(3, device=device).item(), int)
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        v.item()


def test_numpy_errors(dev):
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\) to "
                                        r"copy the tensor to host memory first\."):
        rawdev.zeros(2, device="cuda").numpy()
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad\. Use "
                                           r"tensor\.detach\(\)\.numpy\(\) instead\."):
        rawdev.zeros(2, requires_grad=True).numpy()


def test_finfo_iinfo():
    f = rawdev.finfo(rawdev.float32)
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal, f.resolution, f.dtype) == \
        (32, float(np.finfo(np.float32).eps), float(np.finfo(np.float32).max), -float(np.finfo(np.float32).max),
         float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).tiny), 1e-06, "float32")
    assert rawdev.finfo().dtype == "float32"
    assert rawdev.finfo(rawdev.float16).max == 65504.0
    b = rawdev.finfo(rawdev.bfloat16)
    assert (b.bits, b.eps, b.tiny, b.resolution) == (16, 0.0078125, 2.0 ** -126, 0.01)
    i = rawdev.iinfo(rawdev.int32)
    assert (i.bits, i.min, i.max, i.dtype) == (32, -2 ** 31, 2 ** 31 - 1, "int32")
    assert rawdev.iinfo(rawdev.uint8).max == 255
    with pytest.raises(TypeError):
        rawdev.finfo(rawdev.int64)
    with pytest.raises(TypeError):
        rawdev.iinfo(rawdev.float32)
