"""DLPack both ways: Tensor.__dlpack__ / __dlpack_device__ and rawdev.from_dlpack.

A DLPack capsule hands another library a pointer, a device, a dtype, sizes and strides without a copy.
On the cpu rawdev's storage is a numpy array, so a cpu tensor's capsule is numpy's own (numpy implements
the protocol) and `from_dlpack` of a cpu producer goes through `np.from_dlpack`. For cuda tensors the
capsule is built here with ctypes: a DLManagedTensor whose manager context keeps the tensor (and so its
device buffer) alive until the consumer calls the deleter. A cuda capsule from another library becomes a
rawdev tensor over an `ExternalBuffer`: rawdev never frees that memory, it calls the producer's deleter
when the last tensor using it is gone.

Streams: `__dlpack__(stream=s)` makes the consumer's stream s wait for rawdev's compute stream (an event
recorded there, cuStreamWaitEvent on s), as the protocol asks; `from_dlpack` passes rawdev's compute
stream to the producer for the same reason.
"""
import ctypes

import numpy as np

from .. import dtypes as _dt
from .core import Tensor

__all__ = ["to_dlpack", "from_dlpack", "dlpack_device"]

kDLCPU, kDLCUDA, kDLCUDAHost = 1, 2, 3
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}     # DLDataTypeCode: kDLInt, kDLUInt, kDLFloat, kDLBool
kDLBfloat = 4


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# The destructor gets a capsule whose refcount is already 0: it must not become a Python object again, so
# these two take the bare pointer.
_IsValidRaw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_GetPointerRaw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))

# What a capsule handed out keeps alive, by the DLManagedTensor's address, until its deleter runs.
_alive: dict = {}


@_Deleter
def _delete(managed):
    _alive.pop(ctypes.addressof(managed.contents), None)


@_Destructor
def _capsule_destructor(capsule):
    # An unconsumed capsule (still named "dltensor") owns its DLManagedTensor: run its deleter.
    if _IsValidRaw(capsule, b"dltensor"):
        _alive.pop(_GetPointerRaw(capsule, b"dltensor"), None)


def dlpack_device(t):
    """(device type, device id) as DLPack numbers them: (1, 0) for the cpu, (2, index) for cuda."""
    if t.is_cuda:
        return (kDLCUDA, t.device.index or 0)
    return (kDLCPU, 0)


def _dl_dtype(dt):
    if dt is _dt.bfloat16:
        return _DLDataType(kDLBfloat, 16, 1)
    return _DLDataType(_CODES[dt.storage.kind], dt.itemsize * 8, 1)


def to_dlpack(t, stream=None):
    """A "dltensor" capsule for t (no copy). stream: the consumer's stream (int handle; None/-1: none)."""
    if t.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if not t.is_cuda:
        return t._values().__dlpack__() if t.dtype is not _dt.bfloat16 else _cuda_like_capsule(t, kDLCPU)
    if stream is not None and stream != -1:
        _order_consumer_stream(t, stream)
    return _cuda_like_capsule(t, kDLCUDA)


def _order_consumer_stream(t, stream):
    """Make the consumer's stream wait for the work rawdev has queued on the tensor's device."""
    from ..runtime.device import wait_foreign_stream
    from .cuda_io import runtime_device
    rdev = runtime_device(t.device)
    handle = 0 if stream in (1, 2) else int(stream)   # 1 legacy, 2 per-thread default: the null stream's handle
    wait_foreign_stream(rdev, handle, rdev.compute_stream.record_event())


def _cuda_like_capsule(t, device_type):
    shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
    strides = (ctypes.c_int64 * max(t.dim(), 1))(*t.stride())
    m = _DLManagedTensor()
    m.dl_tensor.data = t.data_ptr() or None
    m.dl_tensor.device = _DLDevice(device_type, (t.device.index or 0) if t.is_cuda else 0)
    m.dl_tensor.ndim = t.dim()
    m.dl_tensor.dtype = _dl_dtype(t.dtype)
    m.dl_tensor.shape = shape
    m.dl_tensor.strides = strides
    m.dl_tensor.byte_offset = 0
    m.deleter = _delete
    addr = ctypes.addressof(m)
    _alive[addr] = (m, shape, strides, t)
    return _api.PyCapsule_New(addr, b"dltensor", ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def from_dlpack(ext):
    """A rawdev tensor sharing the memory of ext (anything with __dlpack__, or a "dltensor" capsule).

    Example:
        >>> import numpy as np
        >>> a = np.arange(3.0)
        >>> t = rawdev.from_dlpack(a)          # shares a's memory
    """
    if hasattr(ext, "__dlpack_device__"):
        dev_type, dev_id = ext.__dlpack_device__()
        if int(dev_type) == kDLCUDA:
            from ..device import device as _device
            from .cuda_io import runtime_device
            rdev = runtime_device(_device("cuda", int(dev_id)))
            handle = rdev.compute_stream.handle
            capsule = ext.__dlpack__(stream=int(handle) if handle else 1)
            return _from_cuda_capsule(capsule)
        arr = np.from_dlpack(ext)
    elif _api.PyCapsule_IsValid(ext, b"dltensor"):
        addr = _api.PyCapsule_GetPointer(ext, b"dltensor")
        m = _DLManagedTensor.from_address(addr)
        if m.dl_tensor.device.device_type == kDLCUDA:
            return _from_cuda_capsule(ext)

        class _Holder:   # numpy takes objects with __dlpack__, not bare capsules
            def __dlpack__(self, stream=None):
                return ext

            def __dlpack_device__(self):
                return (kDLCPU, 0)
        arr = np.from_dlpack(_Holder())
    else:
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got {type(ext)}")
    from .factory import from_numpy
    return from_numpy(arr)


def _from_cuda_capsule(capsule):
    from ..device import device as _device
    from ..runtime.memory import ExternalBuffer
    from .cuda_io import runtime_device
    addr = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    m = _DLManagedTensor.from_address(addr)
    dl = m.dl_tensor
    dt = _dtype_of(dl.dtype)
    ndim = dl.ndim
    shape = tuple(dl.shape[i] for i in range(ndim))
    strides = tuple(dl.strides[i] for i in range(ndim)) if dl.strides else None
    if strides is None:
        from .layout import contiguous_strides
        strides = contiguous_strides(shape)
    numel = int(np.prod(shape)) if shape else 1
    # the span the tensor may touch, from its first element (negative strides are not in DLPack's rules)
    span = (1 + sum((s - 1) * st for s, st in zip(shape, strides))) * dt.itemsize if numel else 0
    dev = _device("cuda", dl.device.device_id)
    rdev = runtime_device(dev)
    ptr = (dl.data or 0) + dl.byte_offset
    deleter = m.deleter
    _api.PyCapsule_SetName(capsule, b"used_dltensor")   # consumed: the producer's deleter is ours to call
    keep = capsule

    def release(_m=addr, _d=deleter, _keep=keep):
        if _d:
            _d(ctypes.cast(_m, ctypes.POINTER(_DLManagedTensor)))
    buf = ExternalBuffer(rdev, ptr, span, release, owner="DLPack import")
    t = Tensor.__new__(Tensor)
    t._set_cuda(buf, 0, _size(shape), dt, dev, strides=strides, soff=0)
    t._vc, t._base, t._requires_grad, t._grad, t.grad_fn = [0], None, False, None, None
    return t


def _size(shape):
    from .size import Size
    return Size(shape)


def _dtype_of(dl):
    if dl.lanes != 1:
        raise TypeError(f"from_dlpack: vector dtypes (lanes={dl.lanes}) are not supported")
    if dl.code == kDLBfloat and dl.bits == 16:
        return _dt.bfloat16
    kinds = {0: "i", 1: "u", 2: "f", 6: "b"}
    if dl.code not in kinds:
        raise TypeError(f"from_dlpack: unsupported DLPack dtype code {dl.code}")
    kind = kinds[dl.code]
    np_dt = np.dtype(bool) if kind == "b" else np.dtype(f"{kind}{dl.bits // 8}")
    return _dt.from_numpy_dtype(np_dt)
