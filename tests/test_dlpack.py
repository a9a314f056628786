"""DLPack both ways and the array interfaces: shared memory (a write through one side is seen by the other),
every dtype, non-contiguous layouts, the producer's deleter run exactly once, and the consumer's stream
ordered after rawdev's work."""
import gc

import numpy as np
import pytest
import rawdev
from rawdev.runtime import trace
from rawdev.tensor import dlpack as dl

DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_]


@pytest.mark.parametrize("np_dt", DTYPES)
def test_cpu_round_trip_through_numpy_shares_memory(np_dt):
    a = (np.random.default_rng(0).standard_normal((3, 5)) * 10).astype(np_dt)
    t = rawdev.from_dlpack(a)
    assert t.dtype == rawdev.from_numpy(a).dtype and tuple(t.shape) == a.shape
    back = np.from_dlpack(t)
    assert np.array_equal(back, a)
    assert back.ctypes.data == a.ctypes.data == t.data_ptr()


def test_cpu_non_contiguous_view_keeps_its_strides():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = rawdev.from_numpy(a)[:, 1::2]       # a strided view
    back = np.from_dlpack(t)
    assert np.array_equal(back, a[:, 1::2]) and back.strides == (24, 8)
    assert back.ctypes.data == a[:, 1::2].ctypes.data        # shared, not copied


def test_tensor_requiring_grad_is_refused():
    t = rawdev.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="require gradient"):
        t.__dlpack__()


def test_cuda_round_trip_shares_device_memory_and_calls_the_deleter_once(dev):
    x = rawdev.randn(4, 7).cuda()
    view = x.t()                               # non-contiguous: strides travel in the capsule
    assert x.__dlpack_device__() == (2, 0)
    y = rawdev.from_dlpack(view)
    assert y.is_cuda and tuple(y.shape) == (7, 4) and y.stride() == view.stride()
    assert y.data_ptr() == view.data_ptr()
    assert np.array_equal(y.cpu().numpy(), x.cpu().numpy().T)
    y.fill_(3.0)                               # a write through the import is a write to x
    assert (x.cpu().numpy() == 3.0).all()
    n_alive = len(dl._alive)
    del y
    gc.collect()
    assert len(dl._alive) == n_alive - 1      # the deleter ran: x's capsule context is released


def test_unconsumed_cuda_capsule_releases_its_tensor(dev):
    x = rawdev.zeros(5).cuda()
    before = len(dl._alive)
    cap = x.__dlpack__()
    assert len(dl._alive) == before + 1
    del cap
    gc.collect()
    assert len(dl._alive) == before


def test_export_orders_the_consumers_stream(dev):
    x = rawdev.ones(8).cuda()
    with trace() as t:
        x.__dlpack__(stream=1)
    assert t.count("cuStreamWaitEvent") == 1 and t.count("cuEventRecord") == 1
    with trace() as t:
        x.__dlpack__(stream=None)
    assert t.count("cuStreamWaitEvent") == 0


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool"])
def test_cuda_dtypes_survive_the_round_trip(dev, dt):
    dtype = getattr(rawdev, dt)
    x = rawdev.tensor([0, 1, 2, 0, 1, 1]).to(dtype).cuda()
    y = rawdev.from_dlpack(x)
    assert y.dtype is dtype
    assert np.array_equal(y.cpu().float().numpy(), x.cpu().float().numpy())


def test_utils_dlpack_functions():
    from rawdev.utils.dlpack import from_dlpack, to_dlpack
    t = rawdev.arange(5.0)
    cap = to_dlpack(t)
    u = from_dlpack(cap)
    assert np.array_equal(u.numpy(), t.numpy())


def test_cuda_array_interface(dev):
    x = rawdev.arange(12.0).reshape(3, 4).cuda()
    cai = x.__cuda_array_interface__
    assert cai["shape"] == (3, 4) and cai["typestr"] == "<f4" and cai["data"][0] == x.data_ptr()
    assert cai["strides"] is None and cai["version"] == 3
    assert x.t().__cuda_array_interface__["strides"] == (4, 16)
    with pytest.raises(AttributeError, match="non-CUDA"):
        _ = rawdev.ones(2).__cuda_array_interface__


def test_numpy_asarray_and_from_numpy_views():
    a = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]   # non-contiguous
    t = rawdev.from_numpy(a)
    assert np.array_equal(np.asarray(t), a)
    a[0, 0] = 99
    assert t[0, 0].item() == 99                               # from_numpy shares memory
