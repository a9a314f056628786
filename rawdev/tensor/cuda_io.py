"""Single-tensor device work for Tensor: allocate, read back, clone, copy_, zero_.

Everything is ordered on the device's compute stream (the stream kernels run on), so a tensor's
reads and writes line up with the kernels that use it without extra events. Whole-module moves and
batched loads go through rawdev.moves (one pinned staging buffer, one copy) instead.
"""

import numpy as np

from .. import dtypes as _dt
from ..errors import NoDeviceError
from ..runtime import memory

__all__ = ["runtime_device", "stream_handle", "empty", "upload", "download", "clone", "copy_into", "memset_zero"]


def runtime_device(dev):
    """The runtime Device behind a rawdev.device("cuda:N"); NoDeviceError (with the fix) when there is none."""
    from ..runtime import get_device, is_available, seam
    if not is_available():
        raise NoDeviceError(f"{dev} was requested but no CUDA device is available: {seam.SIM_HINT}")
    return get_device(dev.index or 0)


def stream_handle(dev):
    return int(runtime_device(dev).compute_stream.handle)


def empty(shape, dt, dev, owner=None):
    """An uninitialized cuda tensor: one pool allocation, ordered on the compute stream."""
    from .core import Tensor
    rdev = runtime_device(dev)
    nbytes = shape.numel() * dt.itemsize
    buf = memory.DeviceBuffer.alloc(rdev, nbytes, stream=rdev.compute_stream, owner=owner)
    return Tensor._make_cuda(buf, 0, shape, dt, dev)


def upload(arr, dt, dev, owner=None):
    """A new cuda tensor holding a host storage array's bytes (arr must already be in dt's storage type)."""
    from .size import Size
    rdev = runtime_device(dev)
    t = empty(Size(arr.shape), dt, dev, owner)
    src = np.ascontiguousarray(arr)
    if src.nbytes:
        # From pageable memory the driver stages the source before returning; keep_alive covers the
        # simulator and any driver that reads it later.
        memory.copy_htod(t.data_ptr(), src, src.nbytes, stream=rdev.compute_stream, owner=owner)
        memory.keep_alive(rdev.compute_stream, src)
    return t


def download(t):
    """A new host storage array with t's bytes. Ordered after the compute stream's queued work; returns
    when the bytes are there (a DtoH into pageable memory completes before the call returns)."""
    rdev = runtime_device(t.device)
    out = np.empty(tuple(t.shape), dtype=t.dtype.storage)
    if out.nbytes:
        memory.copy_dtoh(out, t.data_ptr(), out.nbytes, stream=rdev.compute_stream)
        rdev.compute_stream.synchronize()
    return out


def clone(t):
    rdev = runtime_device(t.device)
    out = empty(t.shape, t.dtype, t.device)
    if t.nbytes:
        memory.copy_dtod(out.data_ptr(), t.data_ptr(), t.nbytes, stream=rdev.compute_stream)
    return out


def copy_into(dst, src, non_blocking=False):
    """dst.copy_(src) where at least one of them is on cuda (shapes already checked broadcastable)."""
    same_layout = src.dtype is dst.dtype and src.shape == dst.shape
    if dst.is_cuda:
        rdev = runtime_device(dst.device)
        if src.is_cuda and src.device == dst.device and same_layout:
            if dst.nbytes:
                memory.copy_dtod(dst.data_ptr(), src.data_ptr(), dst.nbytes, stream=rdev.compute_stream)
            return
        # Casts and broadcasts happen on the host (no cast kernel yet); then one HtoD.
        vals = np.broadcast_to(src._values(), tuple(dst.shape))
        host = _dt.to_storage(vals, dst.dtype) if not (same_layout and src.is_cpu) else \
            np.array(src._host_storage(), copy=True)
        if host.nbytes:
            memory.copy_htod(dst.data_ptr(), host, host.nbytes, stream=rdev.compute_stream)
            memory.keep_alive(rdev.compute_stream, host)
    else:
        host = download(src)
        vals = np.broadcast_to(_dt.to_values(host, src.dtype), tuple(dst.shape))
        np.copyto(dst._host_storage(), host if same_layout else _dt.to_storage(vals, dst.dtype))


def memset_zero(t):
    if t.nbytes:
        rdev = runtime_device(t.device)
        memory.memset_d8(t.data_ptr(), 0, t.nbytes, rdev.compute_stream)
