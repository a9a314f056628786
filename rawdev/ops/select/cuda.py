"""The cuda path of the selection family (select.ptx): where / masked_fill for every dtype (by element
size), float32 clamp and maximum/minimum with their gradients. Operands arrive contiguous (the dispatcher
makes strided views contiguous) and are broadcast here to the output's shape."""
import math

import numpy as np

from ... import dtypes as _dt
from ..cuda_launch import _bcast, _ew, _f32, _rdev, empty

__all__ = ["where", "fill_where", "clamp", "clamp_bwd", "max_min", "max_min_bwd"]

_BITS = {1: 8, 2: 16, 4: 32, 8: 64}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def value_bits(value, dt):
    """The storage bits of a Python scalar in dtype dt, as an unsigned int (the kernels move bits)."""
    arr = _dt.to_storage(np.asarray([value]), dt)
    return int(arr.view(_UINT[dt.itemsize])[0])


def where(cond, a, b):
    """y = cond ? a : b; a and b of one dtype; all three broadcast together."""
    shape = tuple(np.broadcast_shapes(tuple(cond.shape), tuple(a.shape), tuple(b.shape)))
    cond, a, b = (_bcast(t, shape) for t in (_as_bool(cond), a, b))
    y = empty(shape, a.dtype, a.device, "where output")
    n = y.numel()
    _ew(_rdev(a), f"select_b{_BITS[a.dtype.itemsize]}", [y.data_ptr(), cond.data_ptr(), a.data_ptr(), b.data_ptr(), n],
        n, "where")
    return y


def fill_where(x, cond, value, invert=False):
    """y = (cond != invert) ? value : x, the result in x's dtype and the broadcast shape of x and cond."""
    shape = tuple(np.broadcast_shapes(tuple(cond.shape), tuple(x.shape)))
    cond, x = _bcast(_as_bool(cond), shape), _bcast(x, shape)
    y = empty(shape, x.dtype, x.device, "masked_fill output")
    n = y.numel()
    _ew(_rdev(x), f"fill_where_b{_BITS[x.dtype.itemsize]}",
        [y.data_ptr(), cond.data_ptr(), x.data_ptr(), value_bits(value, x.dtype), int(bool(invert)), n], n,
        "masked_fill")
    return y


def _as_bool(c):
    if c.dtype is _dt.bool:
        return c
    if c.dtype is _dt.uint8:   # one byte each, nonzero = true: the kernels read it as a bool mask
        return c
    raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                       f"{str(c.dtype).split('.')[-1].capitalize()}")


def clamp(x, lo, hi):
    if x.dtype is _dt.int64:
        from ..cuda_int import I64_MAX, I64_MIN, int_unary
        return int_unary(x, "clamp", I64_MIN if lo == -math.inf else int(lo), I64_MAX if hi == math.inf else int(hi))
    _f32("clamp", x)
    y = empty(x.shape, x.dtype, x.device, "clamp output")
    _ew(_rdev(x), "clamp_f32", [y.data_ptr(), x.data_ptr(), float(lo), float(hi), x.numel()], x.numel(), "clamp")
    return y


def clamp_bwd(g, x, lo, hi):
    dx = empty(x.shape, g.dtype, g.device, "clamp backward output")
    _ew(_rdev(x), "clamp_bwd_f32", [dx.data_ptr(), g.data_ptr(), x.data_ptr(), float(lo), float(hi), x.numel()],
        x.numel(), "clamp backward")
    return dx


def max_min(a, b, is_max):
    if a.dtype is _dt.int64 and b.dtype is _dt.int64:
        from ..cuda_math import binary_i64
        return binary_i64(a, b, "maximum" if is_max else "minimum")
    _f32("maximum" if is_max else "minimum", a, b)
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    a, b = _bcast(a, shape), _bcast(b, shape)
    y = empty(shape, a.dtype, a.device, "maximum output" if is_max else "minimum output")
    n = y.numel()
    _ew(_rdev(a), "max_min_f32", [y.data_ptr(), a.data_ptr(), b.data_ptr(), 0 if is_max else 1, n], n, "maximum")
    return y


def max_min_bwd(g, a, b, is_max):
    """(da, db) at the broadcast shape (the caller sums them back to each operand's shape)."""
    shape = tuple(g.shape)
    a, b = _bcast(a, shape), _bcast(b, shape)
    da, db = (empty(shape, g.dtype, g.device, f"maximum backward output {i}") for i in (0, 1))
    n = g.numel()
    _ew(_rdev(a), "max_min_bwd_f32", [da.data_ptr(), db.data_ptr(), g.data_ptr(), a.data_ptr(), b.data_ptr(),
                                      0 if is_max else 1, n], n, "maximum backward")
    return da, db
