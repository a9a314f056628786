"""Single-tensor device work for Tensor: allocate, read back, clone, copy_, zero_, fill_ — strided too.

Everything is ordered on the device's compute stream (the stream kernels run on), so a tensor's
reads and writes line up with the kernels that use it without extra events. A strided view is read
or written with one strided-copy launch (rawdev.tensor.strided); whole-module moves and batched
loads go through rawdev.tensor.moves (one pinned staging buffer, one copy) instead.
"""

import numpy as np

from .. import dtypes as _dt
from ..errors import NoDeviceError
from ..runtime import device as _rt_device
from ..runtime import memory
from . import strided
from .host_alloc import host_empty

__all__ = ["runtime_device", "stream_handle", "empty", "upload", "download", "clone", "copy_into", "memset_zero",
           "fill"]


def runtime_device(dev):
    """The runtime Device behind a rawdev.device("cuda:N"); NoDeviceError (with the fix) when there is none."""
    opened = _rt_device._devices.get(dev._index or 0)
    if opened is not None:   # on every cuda op: an opened device needs no driver or device-count check
        return opened
    from ..runtime import get_device, is_available, seam
    if not is_available():
        raise NoDeviceError(f"{dev} was requested but no CUDA device is available: {seam.SIM_HINT}")
    return get_device(dev.index or 0)


def stream_handle(dev):
    return int(runtime_device(dev).compute_stream.handle)


_Tensor = None   # rawdev.tensor.core.Tensor, imported on first use (core imports this module)


def empty(shape, dt, dev, owner=None):
    """An uninitialized contiguous cuda tensor: one pool allocation, ordered on the compute stream."""
    global _Tensor
    if _Tensor is None:   # an import statement per call costs more than the rest of this function
        from .core import Tensor
        _Tensor = Tensor
    rdev = runtime_device(dev)
    nbytes = shape.numel() * dt.itemsize
    buf = memory.DeviceBuffer.alloc(rdev, nbytes, stream=rdev.compute_stream, owner=owner)
    return _Tensor._make_cuda_contiguous(buf, shape, dt, dev)


def upload(arr, dt, dev, owner=None):
    """A new contiguous cuda tensor holding a host storage array's values (arr already in dt's storage type)."""
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


def _strided_copy(dst, src):
    """dst[...] = src on the device, any layouts (src already of dst's shape, stride 0 where broadcast)."""
    rdev = runtime_device(dst.device)
    strided.strided_copy(rdev, dst.data_ptr(), 0, dst.stride(), src.data_ptr(), 0, src.stride(), tuple(dst.shape),
                         dst.dtype.itemsize, stream=rdev.compute_stream)


def _broadcast_strides(src, shape):
    """src's strides seen at the broadcast shape (stride 0 on new and size-1 axes)."""
    lead = len(shape) - src.ndim
    return (0,) * lead + tuple(0 if (s == 1 and n != 1) else st
                               for s, st, n in zip(src.shape, src.stride(), shape[lead:]))


def download(t):
    """A new contiguous host storage array with t's values. Ordered after the compute stream's queued
    work; returns when the bytes are there."""
    rdev = runtime_device(t.device)
    src = t if t.is_contiguous() else clone(t, "download staging")
    out = host_empty(t.shape, t.dtype.storage)
    if out.nbytes:
        memory.copy_dtoh(out, src.data_ptr(), out.nbytes, stream=rdev.compute_stream)
        rdev.compute_stream.synchronize()
    return out


def clone(t, owner=None):
    """A contiguous copy on the same device: one DtoD for a contiguous tensor, one strided copy otherwise."""
    rdev = runtime_device(t.device)
    out = empty(t.shape, t.dtype, t.device, owner)
    if t.nbytes:
        if t.is_contiguous():
            memory.copy_dtod(out.data_ptr(), t.data_ptr(), t.nbytes, stream=rdev.compute_stream)
        else:
            _strided_copy(out, t)
    return out


def copy_into(dst, src, non_blocking=False):
    """dst.copy_(src) where at least one of them is on cuda (shapes already checked broadcastable)."""
    from .core import Tensor
    shape = tuple(dst.shape)
    if dst.is_cuda:
        rdev = runtime_device(dst.device)
        if not dst.nbytes:
            return
        if src.is_cuda and src.device == dst.device and src.dtype is dst.dtype:
            if src.shape == dst.shape and dst.is_contiguous() and src.is_contiguous():
                memory.copy_dtod(dst.data_ptr(), src.data_ptr(), dst.nbytes, stream=rdev.compute_stream)
            else:
                view = Tensor._make_cuda(src._buf, src._offset, shape, src.dtype, src.device,
                                         strides=_broadcast_strides(src, shape))
                _strided_copy(dst, view)
            return
        # Casts, other devices and host sources: the values are made on the host, then one HtoD
        # (into a staging tensor and one strided copy when dst is a strided view).
        vals = np.broadcast_to(src._values(), shape)
        host = np.ascontiguousarray(_dt.to_storage(vals, dst.dtype))
        target = dst if dst.is_contiguous() else empty(dst.shape, dst.dtype, dst.device, "copy_ staging")
        memory.copy_htod(target.data_ptr(), host, host.nbytes, stream=rdev.compute_stream)
        memory.keep_alive(rdev.compute_stream, host)
        if target is not dst:
            _strided_copy(dst, target)
    else:
        host = download(src)
        vals = np.broadcast_to(_dt.to_values(host, src.dtype), shape)
        np.copyto(dst._host_storage(), _dt.to_storage(vals, dst.dtype))


def fill(t, value):
    """Every element of t (any layout) = value: a memset for contiguous 32-bit/zero fills, else one
    element uploaded and broadcast by the strided copy (stride 0)."""
    from .core import Tensor
    from .size import Size
    if not t.nbytes:
        return
    rdev = runtime_device(t.device)
    word = np.asarray(_dt.to_storage(value, t.dtype)).reshape(1)
    if t.is_contiguous() and (t.dtype.itemsize == 4 or not word.view(np.uint8).any()):
        if t.dtype.itemsize == 4:
            memory.memset_d32(t.data_ptr(), int(word.view(np.uint32)[0]), t.numel(), rdev.compute_stream)
        else:
            memory.memset_d8(t.data_ptr(), 0, t.nbytes, rdev.compute_stream)
        return
    one = upload(np.ascontiguousarray(word), t.dtype, t.device, "fill value")
    src = Tensor._make_cuda(one._buf, one._offset, Size(t.shape), t.dtype, t.device, strides=(0,) * t.ndim)
    _strided_copy(t, src)


def memset_zero(t):
    fill(t, 0)
