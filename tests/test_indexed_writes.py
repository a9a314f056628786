"""Indexed writes of graph tensors (PyTorch's CopySlices), setitem broadcasting (leading size-1 dims dropped),
range and other sequences as indices, and the legacy typed constructors (FloatTensor, cuda.LongTensor, ...) with
Tensor.type — on the cpu and on the simulator, gradients against hand-derived float64 references."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

SEED = 2412
RNG = np.random.default_rng(SEED)


@pytest.fixture(params=["cpu", "sim"])
def device(request):
    if request.param == "cpu":
        yield "cpu"
        return
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    cuda_ops.set_poison(True)
    yield "cuda"
    cuda_ops.set_poison(False)


def host(x):
    return np.asarray(x.detach().cpu(), dtype=np.float64)


def test_issue_repro_copyslices_gradient(device):
    w = rawdev.ones(2, requires_grad=True, device=device)
    z = rawdev.zeros(3, 2, device=device)
    z[0] = w * 2
    assert z.requires_grad and z.grad_fn.name() == "CopySlices"
    z.sum().backward()
    np.testing.assert_array_equal(host(w.grad), [2.0, 2.0])


def test_copyslices_grad_to_written_value_and_unwritten_base(device):
    a_np = RNG.standard_normal((4, 3))
    v_np = RNG.standard_normal((2, 3))
    c_np = RNG.standard_normal((4, 3))
    vt = rawdev.tensor(v_np.T.copy(), dtype=rawdev.float32, device=device, requires_grad=True)
    a = rawdev.tensor(a_np, dtype=rawdev.float32, device=device, requires_grad=True)
    z = a * 3.0                    # a graph tensor, written through a basic index
    z[1:3] = vt.t().exp()          # a non-contiguous value
    loss = (z * rawdev.tensor(c_np, dtype=rawdev.float32, device=device)).sum()
    loss.backward()
    ref = a_np * 3
    ref[1:3] = np.exp(v_np)
    np.testing.assert_allclose(host(z), ref, rtol=1e-5, err_msg=f"seed {SEED}")
    ga = 3 * c_np
    ga[1:3] = 0                    # the overwritten rows take no gradient back to a
    np.testing.assert_allclose(host(a.grad), ga, rtol=1e-5, err_msg=f"seed {SEED}")
    np.testing.assert_allclose(host(vt.grad), (c_np[1:3] * np.exp(v_np)).T, rtol=1e-5, err_msg=f"seed {SEED}")


def test_copyslices_broadcast_value_sums_its_gradient(device):
    w = rawdev.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    z = rawdev.zeros(4, 2, 3, device=device)
    z[1:3, :, :] = rawdev.reshape(w, (1, 1, 1, 3))      # leading 1s dropped, then broadcast over (2, 2, 3)
    (z * z).sum().backward()
    np.testing.assert_allclose(host(w.grad), 2 * 4 * np.array([1.0, 2.0, 3.0]), rtol=1e-6)


def test_advanced_index_write_gradients(device):
    v_np = RNG.standard_normal((2, 3))
    base = rawdev.tensor(RNG.standard_normal((5, 3)), dtype=rawdev.float32, device=device, requires_grad=True)
    v = rawdev.tensor(v_np, dtype=rawdev.float32, device=device, requires_grad=True)
    z = base * 1.0
    z[rawdev.tensor([4, 1], device=device)] = v * 2
    (z * z).sum().backward()
    gb = 2 * host(base)
    gb[[4, 1]] = 0
    np.testing.assert_allclose(host(base.grad), gb, rtol=1e-5)
    np.testing.assert_allclose(host(v.grad), 8 * v_np, rtol=1e-5)


def test_write_into_leaf_requiring_grad_is_refused(device):
    z = rawdev.zeros(3, 2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place"):
        z[0] = rawdev.ones(2, device=device)


def test_setitem_drops_leading_size_one_dims(device):
    x = rawdev.zeros(3, 4, device=device)
    x[0] = rawdev.ones(1, 4, device=device)
    x[1:2, :] = rawdev.full((1, 1, 1, 4), 2.0, device=device)
    np.testing.assert_array_equal(host(x), [[1] * 4, [2] * 4, [0] * 4])
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match the existing size "
                                           r"\(3\) at non-singleton dimension 0"):
        x[0] = rawdev.ones(3, device=device)
    with pytest.raises(RuntimeError, match=r"the number of sizes provided \(1\) must be greater or equal to the "
                                           r"number of dimensions in the tensor \(2\)"):
        x[0] = rawdev.ones(2, 4, device=device)
    np.testing.assert_array_equal(host(x)[2], [0] * 4)      # the failed writes left x as it was


def test_range_and_sequences_as_indices(device):
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    x = rawdev.tensor(a, device=device)
    np.testing.assert_array_equal(host(x[range(3)]), a[:3])
    np.testing.assert_array_equal(host(x[range(3), rawdev.tensor([0, 1, 2], device=device)]), a[[0, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(host(x[np.array([3, 0])]), a[[3, 0]])
    np.testing.assert_array_equal(host(x[:, [4, 0]]), a[:, [4, 0]])
    x[range(3), rawdev.tensor([0, 1, 2], device=device)] = 5.0
    b = a.copy()
    b[[0, 1, 2], [0, 1, 2]] = 5.0
    np.testing.assert_array_equal(host(x), b)
    x[np.array([3]), range(2)] = rawdev.tensor([7.0, 8.0], device=device)
    b[[3], [0, 1]] = [7.0, 8.0]
    np.testing.assert_array_equal(host(x), b)


def test_legacy_constructors():
    a = rawdev.FloatTensor(np.ones((2, 2)))
    assert a.dtype is rawdev.float32 and a.shape == (2, 2) and float(a.sum()) == 4.0
    b = rawdev.LongTensor([1, 2])
    assert b.dtype is rawdev.int64 and b.tolist() == [1, 2]
    assert rawdev.FloatTensor(2, 3).shape == (2, 3) and rawdev.DoubleTensor(rawdev.Size([4])).shape == (4,)
    assert rawdev.FloatTensor().shape == (0,)
    for cls, dt in ((rawdev.HalfTensor, rawdev.float16), (rawdev.IntTensor, rawdev.int32),
                    (rawdev.ShortTensor, rawdev.int16), (rawdev.ByteTensor, rawdev.uint8),
                    (rawdev.CharTensor, rawdev.int8), (rawdev.BoolTensor, rawdev.bool),
                    (rawdev.BFloat16Tensor, rawdev.bfloat16)):
        t = cls([1, 0])
        assert t.dtype is dt and isinstance(t, cls) and not isinstance(t, rawdev.FloatTensor)
    assert isinstance(a, rawdev.FloatTensor) and not isinstance(a, rawdev.cuda.FloatTensor)
    assert rawdev.FloatTensor(a).data_ptr() == a.data_ptr()     # the same type: an alias, as PyTorch
    with pytest.raises(TypeError, match="expected rawdev.FloatTensor"):
        rawdev.FloatTensor(b)
    with pytest.raises(TypeError, match="data must be a sequence"):
        rawdev.FloatTensor("ab")


def test_cuda_legacy_constructors_and_type(device):
    if device == "cpu":
        pytest.skip("the cuda constructors run on the simulator")
    c = rawdev.cuda.FloatTensor([1.5, 2.5])
    assert c.is_cuda and c.dtype is rawdev.float32 and isinstance(c, rawdev.cuda.FloatTensor)
    assert not isinstance(c, rawdev.FloatTensor) and c.type() == "rawdev.cuda.FloatTensor"
    assert rawdev.cuda.LongTensor(3).shape == (3,)
    back = c.type("torch.LongTensor")
    assert back.is_cpu and back.dtype is rawdev.int64 and back.tolist() == [1, 2]
    up = rawdev.ones(2).type(rawdev.cuda.DoubleTensor)
    assert up.is_cuda and up.dtype is rawdev.float64


def test_tensor_type_names_and_conversions():
    x = rawdev.ones(2)
    assert x.type() == "rawdev.FloatTensor" and x.type(rawdev.FloatTensor) is x
    assert x.type("torch.LongTensor").dtype is rawdev.int64
    assert x.type(rawdev.DoubleTensor).dtype is rawdev.float64
    assert x.type(rawdev.float16).dtype is rawdev.float16
    with pytest.raises(ValueError, match="invalid type: 'torch.NotATensor'"):
        x.type("torch.NotATensor")


def test_destroy_process_group_without_a_group():
    from rawdev.distributed import barrier, destroy_process_group, is_initialized
    assert not is_initialized()
    with pytest.raises(AssertionError):
        destroy_process_group()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        barrier()


def test_copyslices_through_a_view_of_a_graph_tensor(device):
    a_np = RNG.standard_normal((3, 4))
    c_np = RNG.standard_normal((3, 4))
    a = rawdev.tensor(a_np, dtype=rawdev.float32, device=device, requires_grad=True)
    w = rawdev.tensor(2.0, device=device, requires_grad=True)
    c = rawdev.tensor(c_np, dtype=rawdev.float32, device=device)
    z = a * 1.0
    z[1][2] = w * 3                      # chained indexing: a write into the view z[1]
    assert z.grad_fn.name() == "CopySlices"
    (z * c).sum().backward()
    ga = c_np.copy()
    ga[1, 2] = 0
    np.testing.assert_allclose(host(a.grad), ga, rtol=1e-6)
    np.testing.assert_allclose(float(w.grad), 3 * c_np[1, 2], rtol=1e-5)
    # a view kept by the program follows the write: its history is the new base's
    a.grad = None
    z = a * 2.0
    row = z[0]
    v = rawdev.ones(3, device=device, requires_grad=True)
    row[1:] = v * 5
    (row.sum() * 10 + (z * c).sum()).backward()
    ga = 2 * c_np
    ga[0] += 20
    ga[0, 1:] = 0
    np.testing.assert_allclose(host(a.grad), ga, rtol=1e-5)
    np.testing.assert_allclose(host(v.grad), c_np[0, 1:] * 5 + 50, rtol=1e-5)
    p = rawdev.zeros(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        p[0:2][0] = 1.0


IN_PLACE_WRITES = {
    "add_": lambda x: x.add_(rawdev.ones_like(x)),
    "mul_": lambda x: x.mul_(2.0),
    "index_add_": lambda x: x.index_add_(0, rawdev.tensor([0, 2], device=x.device),
                                         rawdev.ones(2, x.shape[1], device=x.device, dtype=x.dtype)),
    "index_copy_": lambda x: x.index_copy_(0, rawdev.tensor([1], device=x.device),
                                           rawdev.ones(1, x.shape[1], device=x.device, dtype=x.dtype)),
    "scatter_add_": lambda x: x.scatter_add_(0, rawdev.zeros(1, x.shape[1], dtype=rawdev.int64, device=x.device),
                                             rawdev.ones(1, x.shape[1], device=x.device, dtype=x.dtype)),
    "setitem": lambda x: x.__setitem__(0, 1.0),
}


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("op", list(IN_PLACE_WRITES))
def test_an_in_place_write_advances_the_version_by_one(device, op, dtype, strided):
    # PyTorch's version counter moves by one per in-place op, on every device and dtype (the cpu index writes
    # once counted two, and 16-bit cuda index_add_ two: widened and written back, then bumped again)
    base = rawdev.zeros(4, 6, device=device, dtype=getattr(rawdev, dtype))
    x = base[:, ::2] if strided else base
    before = x._version
    IN_PLACE_WRITES[op](x)
    assert x._version == before + 1
    assert base._version == x._version     # a view shares its base's counter
