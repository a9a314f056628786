"""Tensor constructors: rawdev.tensor, from_numpy, zeros, ones, empty, full, arange, linspace, eye, the random
ones (rand, randn, randint, randperm) and the *_like forms, with PyTorch's signatures.

`tensor`/`as_tensor`/`from_numpy` take host data. Everything else is made where it lives: on the cpu in
numpy, on cuda on the device — `empty` allocates, `zeros`/`full` are a memset or one element broadcast by
the strided copy, ramps (arange, linspace) and random numbers are kernels of ptx/src/random.cu (random ones
from the device's Philox generator, see rawdev.random) — so no values cross the bus.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import random as _random
from ..device import CPU, as_device
from .core import Tensor
from .host_alloc import check_host_request, host_empty
from .size import Size, parse_size

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full", "randn", "rand",
           "randint", "randperm", "arange", "linspace", "eye", "zeros_like", "ones_like", "empty_like",
           "full_like", "randn_like", "rand_like", "randint_like"]


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


def tensor(data, dtype: _dt.dtype | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
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


def as_tensor(data, dtype: _dt.dtype | None = None, device: Any = None) -> Tensor:
    """Shares memory with a cpu Tensor or a numpy array when dtype/device already match."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=_dt.as_dtype(dtype)) if (device or dtype) else data
    if isinstance(data, np.ndarray) and dtype is None and data.flags.c_contiguous:
        try:
            return _finish(from_numpy(data), device, False)
        except TypeError:
            pass
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr) -> Tensor:
    """A cpu tensor sharing arr's memory (writes show through both ways)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dt = _dt.from_numpy_dtype(arr.dtype)
    if arr.dtype.byteorder == ">":
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    if any(st < 0 for st in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if any(st % arr.itemsize for st in arr.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy "
                         "array to reallocate the memory.")
    return Tensor._make_cpu(arr, dt)


def asarray(obj, *, dtype: _dt.dtype | None = None, device: Any = None, copy=None,
            requires_grad: bool = False) -> Tensor:
    if copy:
        return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)
    return _finish(as_tensor(obj, dtype=dtype, device=device), None, requires_grad)


# ------------------------------------------------------------------ options shared by the factories
def _options(dtype, device, layout=None, pin_memory=False, default=None):
    if layout is not None and str(layout) not in ("strided", "torch.strided", "rawdev.strided"):
        raise NotImplementedError(f"layout={layout}: rawdev tensors are strided")
    dt = _dt.as_dtype(dtype) or default or _dt.get_default_dtype()
    dev = as_device(device) or CPU
    return dt, dev


def _on_cuda(dev):
    return dev.type == "cuda"


def empty(*size: Any, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
          requires_grad: bool = False, pin_memory=False,
          memory_format=None) -> Tensor:
    """An uninitialized tensor (a pool allocation on cuda: its bytes are whatever was there)."""
    shape = parse_size(size)
    dt, dev = _options(dtype, device, layout)
    if _on_cuda(dev):
        from . import cuda_io
        t = cuda_io.empty(shape, dt, dev)
    else:
        t = Tensor._make_cpu(host_empty(shape, dt.storage), dt)
    return _finish(t, None, requires_grad)


def zeros(*size: Any, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
          requires_grad: bool = False, pin_memory=False) -> Tensor:
    t = empty(*size, dtype=dtype, layout=layout, device=device)
    t.zero_()
    t._vc[0] = 0
    return _finish(t, None, requires_grad)


def _fill_dtype(fill_value):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if isinstance(fill_value, (bool, np.bool_)):
        return _dt.bool
    if isinstance(fill_value, (int, np.integer)):
        return _dt.int64
    if isinstance(fill_value, complex):
        raise NotImplementedError("rawdev has no complex dtypes")
    return _dt.get_default_dtype()


def full(size, fill_value, *, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
         requires_grad: bool = False,
         pin_memory=False) -> Tensor:
    """A tensor of size filled with fill_value (dtype inferred from it as PyTorch: bool, int64 or the default
    float dtype); on cuda a memset or one element broadcast by the strided copy."""
    shape = parse_size((size,))
    dt, dev = _options(dtype, device, layout, default=None if dtype is not None else _fill_dtype(fill_value))
    t = empty(shape, dtype=dt, device=dev)
    t.fill_(fill_value)
    t._vc[0] = 0
    return _finish(t, None, requires_grad)


def ones(*size: Any, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
         requires_grad: bool = False, pin_memory=False) -> Tensor:
    return full(parse_size(size), 1, dtype=_dt.as_dtype(dtype) or _dt.get_default_dtype(), layout=layout,
                device=device, requires_grad=requires_grad)


# ------------------------------------------------------------------ device helpers
def _device_cast(t, dt):
    """t converted to dt on the device (through float32 when no direct cast kernel is shipped)."""
    if t.dtype is dt:
        return t
    from ..runtime import kernels
    from . import cuda_io
    names = {_dt.bool: "bool", _dt.uint8: "u8", _dt.int32: "i32", _dt.int64: "i64", _dt.float16: "f16",
             _dt.bfloat16: "bf16", _dt.float32: "f32"}
    if t.dtype not in names or dt not in names:
        raise NotImplementedError(f"no cast kernel from {t.dtype} to {dt} is shipped")
    if _dt.float32 not in (t.dtype, dt):
        return _device_cast(_device_cast(t, _dt.float32), dt)
    rdev = cuda_io.runtime_device(t.device)
    out = cuda_io.empty(t.shape, dt, t.device)
    n = t.numel()
    if n:
        kernels.get_kernel(rdev, f"cast_{names[t.dtype]}_{names[dt]}").launch(
            min((n + 255) // 256, 65535), 256, [out.data_ptr(), t.data_ptr(), n], stream=rdev.compute_stream)
    return out


def _ramp(n, dt, dev, start, end, step, half):
    """The ramp kernel: y[i] = start + i*step for i < half, else end - (n-1-i)*step, as dt on dev."""
    from ..runtime import kernels
    from . import cuda_io
    native = dt if dt in (_dt.float32, _dt.float64, _dt.int64, _dt.int32) else _dt.float32
    t = cuda_io.empty(Size((n,)), native, dev)
    if n:
        rdev = cuda_io.runtime_device(dev)
        if native.is_floating_point:
            name = "ramp_f32" if native is _dt.float32 else "ramp_f64"
            args = [t.data_ptr(), n, half, float(start), float(end), float(step)]
        else:
            name = "ramp_i64" if native is _dt.int64 else "ramp_i32"
            args = [t.data_ptr(), n, int(start), int(step)]
        kernels.get_kernel(rdev, name).launch(min((n + 255) // 256, 65535), 256, args, stream=rdev.compute_stream)
    return _device_cast(t, dt)


def _scalar(v):
    if isinstance(v, Tensor):
        return v.item()
    return v


# ------------------------------------------------------------------ ramps
def arange(start, end=None, step=1, *, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values from start to end (exclusive) by step; int64 when every argument is an integer."""
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    is_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, end, step))
    dt, dev = _options(dtype, device, layout, default=_dt.int64 if is_int else None)
    n = int(np.ceil((end - start) / step))
    if _on_cuda(dev):
        if not dt.is_floating_point and not is_int:
            return _finish(_device_cast(_ramp(n, _dt.float32, dev, start, end, step, n), dt), None, requires_grad)
        return _finish(_ramp(n, dt, dev, start, end, step, n), None, requires_grad)
    check_host_request((max(n, 0),), dt.itemsize)
    if is_int or not dt.is_floating_point:
        vals = np.arange(start, end, step, dtype=np.float64 if not is_int else np.int64)
    else:
        vals = start + np.arange(n, dtype=np.float64) * step
    return _finish(Tensor._make_cpu(_dt.to_storage(vals, dt), dt), None, requires_grad)


def linspace(start, end, steps, *, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """steps values evenly spaced from start to end (both included), computed as PyTorch does: the first half
    from start, the second from end, so both ends are exact."""
    start, end = _scalar(start), _scalar(end)
    steps = operator.index(_scalar(steps))
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    dt, dev = _options(dtype, device, layout)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    half = steps // 2 if steps > 1 else steps
    if _on_cuda(dev):
        if not dt.is_floating_point:
            t = _ramp(steps, _dt.float32, dev, start, end, step, half)
            return _finish(_device_cast(t, dt), None, requires_grad)
        return _finish(_ramp(steps, dt, dev, start, end, step, half), None, requires_grad)
    i = np.arange(steps, dtype=np.float64)
    vals = np.where(i < half, start + i * step, end - (steps - 1 - i) * step)
    if steps == 1:
        vals = np.array([start], np.float64)
    if not dt.is_floating_point:
        vals = np.trunc(vals)
    return _finish(Tensor._make_cpu(_dt.to_storage(vals, dt), dt), None, requires_grad)


def eye(n, m=None, *, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """The n x m identity: zeros with ones on the diagonal (a strided fill of the diagonal view on cuda)."""
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    t = zeros(n, m, dtype=dtype, layout=layout, device=device)
    k = min(n, m)
    if k:
        t._view((k,), (m + 1,), t.storage_offset()).fill_(1)
    t._vc[0] = 0
    return _finish(t, None, requires_grad)


# ------------------------------------------------------------------ random
def _gen(dev, generator):
    return _random.generator_for(dev, generator)


def _float_dtype(dt, what):
    if not dt.is_floating_point:
        raise RuntimeError(f'"{what}" not implemented for \'{dt._legacy[:-6]}\'')


def _device_floats(shape, dt, dev, fill, *args):
    """A new cuda tensor of dt filled by a device kernel (float32/float64 native, else cast from float32)."""
    from . import cuda_io
    native = dt if dt in (_dt.float32, _dt.float64) else _dt.float32
    t = cuda_io.empty(shape, native, dev)
    fill(t, *args)
    return _device_cast(t, dt)


def randn(*size: Any, generator=None, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
          requires_grad: bool = False,
          pin_memory=False) -> Tensor:
    """Standard normal samples: cpu from the cpu generator, cuda from the device's Philox (Box-Muller)."""
    shape = parse_size(size)
    dt, dev = _options(dtype, device, layout)
    _float_dtype(dt, "normal_kernel_cpu" if not _on_cuda(dev) else "normal_kernel_cuda")
    g = _gen(dev, generator)
    if _on_cuda(dev):
        t = _device_floats(shape, dt, dev, _random.fill_normal, 0.0, 1.0, g)
    else:
        check_host_request(shape, dt.itemsize)
        vals = g.np.standard_normal(tuple(shape), dtype=np.float64 if dt is _dt.float64 else np.float32)
        t = Tensor._make_cpu(_dt.to_storage(vals, dt), dt)
    return _finish(t, None, requires_grad)


def rand(*size: Any, generator=None, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
         requires_grad: bool = False,
         pin_memory=False) -> Tensor:
    """Uniform samples in [0, 1)."""
    shape = parse_size(size)
    dt, dev = _options(dtype, device, layout)
    _float_dtype(dt, "check_uniform_bounds")
    g = _gen(dev, generator)
    if _on_cuda(dev):
        t = _device_floats(shape, dt, dev, _random.fill_uniform, 0.0, 1.0, g)
    else:
        check_host_request(shape, dt.itemsize)
        vals = g.np.random(tuple(shape), dtype=np.float64 if dt is _dt.float64 else np.float32)
        t = Tensor._make_cpu(_dt.to_storage(vals, dt), dt)
    return _finish(t, None, requires_grad)


def _device_integers(shape, dt, dev, low, high, g):
    from . import cuda_io
    native = dt if dt in (_dt.int64, _dt.int32, _dt.float32, _dt.float64) else _dt.float32
    t = cuda_io.empty(shape, native, dev)
    _random.fill_integers(t, low, high, g)
    return _device_cast(t, dt)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype: _dt.dtype | None = None, layout=None,
            device: Any = None,
            requires_grad: bool = False, pin_memory=False) -> Tensor:
    """Integers uniform in [low, high): randint(high, size) or randint(low, high, size)."""
    if size is None and isinstance(high, (tuple, list, Size)):
        low, high, size = 0, low, high    # PyTorch's randint(high, size) overload
    elif high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing 1 required positional arguments: \"size\"")
    low, high = int(_scalar(low)), int(_scalar(high))
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = parse_size((size,))
    dt, dev = _options(dtype, device, layout, default=_dt.int64)
    g = _gen(dev, generator)
    if _on_cuda(dev):
        t = _device_integers(shape, dt, dev, low, high, g)
    else:
        check_host_request(shape, dt.itemsize)
        vals = g.np.integers(low, high, size=tuple(shape))
        t = Tensor._make_cpu(_dt.to_storage(vals, dt), dt)
    return _finish(t, None, requires_grad)


def randperm(n, *, generator=None, out=None, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
             requires_grad: bool = False,
             pin_memory=False) -> Tensor:
    """A random permutation of 0..n-1. cuda: 64 random bits per element ranked on the device (rank_select)."""
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    dt, dev = _options(dtype, device, layout, default=_dt.int64)
    g = _gen(dev, generator)
    if _on_cuda(dev):
        from . import cuda_io
        keys = cuda_io.empty(Size((n,)), _dt.int64, dev)
        _random.race_keys(keys, None, n, g)
        out_t = cuda_io.empty(Size((n,)), _dt.int64, dev)
        _random.rank_select(out_t, keys, 1, n, n)
        t = _device_cast(out_t, dt) if dt is not _dt.int64 else out_t
    else:
        t = Tensor._make_cpu(_dt.to_storage(g.np.permutation(n), dt), dt)
    return _finish(t, None, requires_grad)


# ------------------------------------------------------------------ *_like
def _like(t, dtype, device):
    return (_dt.as_dtype(dtype) or t.dtype), (device if device is not None else t.device)


def empty_like(input, *, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
               requires_grad: bool = False, memory_format=None) -> Tensor:  # noqa: A002
    dt, dev = _like(input, dtype, device)
    return empty(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def zeros_like(input, *, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
               requires_grad: bool = False, memory_format=None) -> Tensor:  # noqa: A002
    dt, dev = _like(input, dtype, device)
    return zeros(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(input, *, dtype: _dt.dtype | None = None, layout=None, device: Any = None, requires_grad: bool = False,
              memory_format=None) -> Tensor:  # noqa: A002
    dt, dev = _like(input, dtype, device)
    return ones(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
              requires_grad: bool = False,  # noqa: A002
              memory_format=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return full(input.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input, *, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
               requires_grad: bool = False, memory_format=None) -> Tensor:  # noqa: A002
    dt, dev = _like(input, dtype, device)
    return randn(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def rand_like(input, *, dtype: _dt.dtype | None = None, layout=None, device: Any = None, requires_grad: bool = False,
              memory_format=None) -> Tensor:  # noqa: A002
    dt, dev = _like(input, dtype, device)
    return rand(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype: _dt.dtype | None = None, layout=None, device: Any = None,
                 requires_grad: bool = False,  # noqa: A002
                 memory_format=None) -> Tensor:
    if high is None:
        low, high = 0, low
    dt, dev = _like(input, dtype, device)
    return randint(low, high, tuple(input.shape), dtype=dt, device=dev, requires_grad=requires_grad)
