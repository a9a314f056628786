"""The cuda path of integer math (intops.ptx): conversions between integer dtypes, int64 unary math and
int64 reductions. Narrower integers reach these through rawdev.ops.opmath (widened to int64, the values
cast back)."""

from .. import dtypes as _dt
from .cuda_launch import _ew, _kernel, _rdev, dense, empty, reduce_layout

__all__ = ["INT_CODES", "int_cast", "int_unary", "reduce_i64", "sum_dims_i64", "I64_MIN", "I64_MAX"]

INT_CODES = {_dt.uint8: 0, _dt.int8: 1, _dt.int16: 2, _dt.int32: 3, _dt.int64: 4, _dt.bool: 5}
I64_MAX = 2 ** 63 - 1
I64_MIN = -2 ** 63
_UNARY = {"abs": 0, "neg": 1, "clamp": 2, "sign": 3, "bitwise_not": 4}
_REDUCE = {"sum": 0, "max": 1, "min": 2}


def int_cast(x, dt):
    """x (an integer or bool tensor) converted to another integer dtype or bool: one cast_int launch."""
    x = dense(x)
    y = empty(x.shape, dt, x.device, "cast output")
    _ew(_rdev(x), "cast_int", [y.data_ptr(), x.data_ptr(), INT_CODES[x.dtype], INT_CODES[dt], x.numel()],
        x.numel(), f"to({dt})")
    return y


def int_unary(x, op, lo=I64_MIN, hi=I64_MAX):
    """int64 abs / neg / clamp(lo, hi) / sign / bitwise_not of x."""
    if x.dtype is not _dt.int64:
        raise TypeError(f"{op} on cuda: the integer kernels take int64, got {x.dtype}")
    x = dense(x)
    y = empty(x.shape, _dt.int64, x.device, f"{op} output")
    _ew(_rdev(x), "unary_i64", [y.data_ptr(), x.data_ptr(), _UNARY[op], int(lo), int(hi), x.numel()],
        x.numel(), op)
    return y


def reduce_i64(x, outer, red, inner, op, indices=False):
    """op ("sum", "max", "min") over axis 1 of int64 x viewed as [outer, red, inner] (red >= 1) -> flat
    [outer*inner] values and, with indices, the int64 index of the first extreme."""
    x = dense(x)
    n = outer * inner
    vals = empty((n,), _dt.int64, x.device, f"{op} output")
    idx = empty((n,), _dt.int64, x.device, f"{op} indices") if indices else None
    if n:
        # the kernel's two shapes: a block per output for rows of 32 or more, else a thread per output
        grid = min(n, 65535) if inner == 1 and red >= 32 else min(-(-n // 256), 65535)
        _kernel(_rdev(x), "reduce_i64", op).launch(grid, 256, [
            vals.data_ptr(), idx.data_ptr() if indices else 0, x.data_ptr(), outer, red, inner, _REDUCE[op]])
    return vals, idx


def sum_dims_i64(x, dims, keepdim):
    """int64 sum of x over dims (wrapping as PyTorch's): the reduced axes moved last, one reduce_i64 launch."""
    shape = tuple(x.shape)
    dims, keep, out_shape, red, rows = reduce_layout(shape, dims, keepdim)
    if red == 0 or rows == 0:
        from .cuda_launch import full
        return full(out_shape, 0, _dt.int64, x.device, "sum output")
    moved = x.permute(*keep, *dims) if dims != list(range(len(shape)))[-len(dims):] else x
    vals, _ = reduce_i64(moved, rows, red, 1, "sum")
    return vals.reshape(out_shape)
