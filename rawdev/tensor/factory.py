"""Tensor constructors: rawdev.tensor, from_numpy, zeros, ones, empty, full, randn, rand, arange, *_like.

Values are made on the host (random ones from rawdev.random's generator, so a seed gives the same
numbers on every device) and then placed; cuda `empty` allocates without initializing and cuda `zeros`
is a device memset, so neither crosses the bus.
"""

import numpy as np

from .. import dtypes as _dt
from .. import random as _random
from ..device import as_device
from .core import Tensor
from .size import Size, parse_size

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "randn", "rand",
           "randint", "arange", "zeros_like", "ones_like", "empty_like", "full_like", "randn_like",
           "rand_like"]


def _finish(t, device, requires_grad):
    if requires_grad and not t.dtype.is_floating_point:   # the factories' wording (the setter's differs)
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    dev = as_device(device)
    if dev is not None and dev != t.device:
        t = t.to(dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data):
    """PyTorch's literal inference: bools -> bool, ints -> int64, floats -> the default float dtype."""
    a = np.asarray(data)
    if a.dtype == np.bool_:
        return _dt.bool
    if np.issubdtype(a.dtype, np.integer):
        return _dt.int64 if not isinstance(data, np.ndarray) else _dt.from_numpy_dtype(a.dtype)
    if np.issubdtype(a.dtype, np.floating):
        if isinstance(data, np.ndarray) or isinstance(data, np.generic):
            return _dt.from_numpy_dtype(a.dtype)
        return _dt.get_default_dtype()
    if a.dtype == object:
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    return _dt.from_numpy_dtype(a.dtype)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of data (nested lists, scalars, numpy arrays, Tensors)."""
    dt = _dt.as_dtype(dtype)
    if isinstance(data, Tensor):
        dt = dt or data.dtype
        t = data.detach().to(dtype=dt, copy=True) if data.is_cuda else Tensor._make_cpu(
            _dt.convert_storage(data._host_storage(), data.dtype, dt), dt)
    else:
        if isinstance(data, (list, tuple)):
            _check_nested(data)
        dt = dt or _infer_dtype(data)
        t = Tensor._make_cpu(_dt.to_storage(data, dt), dt)
    return _finish(t, device, requires_grad)


def _check_nested(data):
    for x in data:
        if not isinstance(x, (int, float, bool, list, tuple, np.generic, np.ndarray, Tensor)):
            raise TypeError(f"new(): invalid data type '{type(x).__name__}'")


def as_tensor(data, dtype=None, device=None):
    """Shares memory with a cpu Tensor or a numpy array when dtype/device already match."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=_dt.as_dtype(dtype)) if (device or dtype) else data
    if isinstance(data, np.ndarray) and dtype is None and data.flags.c_contiguous:
        try:
            return _finish(from_numpy(data), device, False)
        except TypeError:
            pass
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr):
    """A cpu tensor sharing arr's memory (writes show through both ways)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dt = _dt.from_numpy_dtype(arr.dtype)
    if arr.dtype.byteorder == ">":
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    if not arr.flags.c_contiguous:
        raise ValueError("rawdev tensors are contiguous; from_numpy needs a C-contiguous array "
                         "(np.ascontiguousarray(arr) makes one)")
    return Tensor._make_cpu(arr, dt)


def empty(*size, dtype=None, device=None, requires_grad=False):
    shape = parse_size(size)
    dt = _dt.as_dtype(dtype) or _dt.get_default_dtype()
    dev = as_device(device)
    if dev is not None and dev.type == "cuda":
        from . import cuda_io
        t = cuda_io.empty(shape, dt, dev)
    else:
        t = Tensor._make_cpu(np.empty(shape, dtype=dt.storage), dt)
    return _finish(t, None, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    t = empty(*size, dtype=dtype, device=device)
    t.zero_()
    t._vc[0] = 0
    return _finish(t, None, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    shape = parse_size((size,))
    if dtype is None:
        dt = _dt.bool if isinstance(fill_value, bool) else (
            _dt.int64 if isinstance(fill_value, int) else _dt.get_default_dtype())
    else:
        dt = _dt.as_dtype(dtype)
    arr = np.ascontiguousarray(np.broadcast_to(_dt.to_storage(fill_value, dt), tuple(shape)))
    return _finish(Tensor._make_cpu(arr, dt), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return full(parse_size(size), 1, dtype=_dt.as_dtype(dtype) or _dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def _random_floats(shape, dt, draw):
    dt = dt or _dt.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f'"normal_kernel_cpu" not implemented for \'{dt._legacy[:-6]}\'')
    vals = draw(_random.default_generator.np, tuple(shape))
    return Tensor._make_cpu(_dt.to_storage(vals, dt), dt)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    g = (generator or _random.default_generator).np
    t = _random_floats(parse_size(size), _dt.as_dtype(dtype),
                       lambda _, s: g.standard_normal(s, dtype=np.float32))
    return _finish(t, device, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    g = (generator or _random.default_generator).np
    t = _random_floats(parse_size(size), _dt.as_dtype(dtype), lambda _, s: g.random(s, dtype=np.float32))
    return _finish(t, device, requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    if size is None and isinstance(high, (tuple, list, Size)):
        low, high, size = 0, low, high    # PyTorch's randint(high, size) overload
    elif high is None:
        low, high = 0, low
    g = (generator or _random.default_generator).np
    dt = _dt.as_dtype(dtype) or _dt.int64
    vals = g.integers(low, high, size=tuple(parse_size((size,))))
    return _finish(Tensor._make_cpu(_dt.to_storage(vals, dt), dt), device, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    is_int = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, step))
    dt = _dt.as_dtype(dtype) or (_dt.int64 if is_int else _dt.get_default_dtype())
    vals = np.arange(start, end, step, dtype=np.float64 if not is_int else np.int64)
    return _finish(Tensor._make_cpu(_dt.to_storage(vals, dt), dt), device, requires_grad)


def _like(t, dtype, device):
    return (_dt.as_dtype(dtype) or t.dtype), (device if device is not None else t.device)


def empty_like(t, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like(t, dtype, device)
    return empty(t.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def zeros_like(t, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like(t, dtype, device)
    return zeros(t.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(t, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like(t, dtype, device)
    return ones(t.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(t, fill_value, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like(t, dtype, device)
    return full(t.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(t, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like(t, dtype, device)
    return randn(t.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def rand_like(t, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like(t, dtype, device)
    return rand(t.shape, dtype=dt, device=dev, requires_grad=requires_grad)
