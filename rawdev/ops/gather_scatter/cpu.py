"""The cpu path of gather / scatter / scatter_add / scatter_reduce (numpy): the same signatures as
cuda.py beside it, with PyTorch's error for an index out of range."""
import numpy as np

from ... import dtypes as _dt
from ..cpu_values import v, wrap

__all__ = ["gather_dim", "scatter_dim_", "linear_index", "first_out_of_range", "floor_divide_int"]


def _checked(idx, outer, nidx, inner, size, d):
    i = v(idx).reshape(outer, nidx, inner)
    bad = (i < 0) | (i >= size)
    if bad.any():
        raise RuntimeError(f"index {int(i[bad][0])} is out of bounds for dimension {d} with size {size}")
    return i


def gather_dim(x, outer, size, inner, idx, nidx, d=0):
    i = _checked(idx, outer, nidx, inner, size, d)
    return wrap(np.take_along_axis(v(x).reshape(outer, size, inner), i, 1), x.dtype)


_UFUNC = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def scatter_dim_(dst, outer, size, inner, idx, nidx, src, reduce=None, d=0):
    i = _checked(idx, outer, nidx, inner, size, d)
    where = (np.arange(outer)[:, None, None], i, np.arange(inner)[None, None, :])
    if reduce is None:              # the storage's bits move (src has dst's dtype)
        dv = dst._host_storage().reshape(outer, size, inner)
        dv[where] = src._host_storage().reshape(outer, nidx, inner)
        dst._bump_version()
        return dst
    if dst.dtype is _dt.bfloat16:   # combined in float32 values, stored back as bfloat16
        vals = v(dst).reshape(outer, size, inner).copy()
        _UFUNC[reduce].at(vals, where, np.asarray(v(src), vals.dtype).reshape(outer, nidx, inner))
        dst._write(wrap(vals.reshape(tuple(dst.shape)), dst.dtype))
        return dst
    dv = dst._host_storage().reshape(outer, size, inner)
    _UFUNC[reduce].at(dv, where, np.asarray(v(src)).reshape(outer, nidx, inner).astype(dv.dtype, copy=False))
    dst._bump_version()
    return dst


def linear_index(idx, sizes, dims=None):
    """idx [k, n] (int64) -> [n]: the row-major position of each column in a block of `sizes` (negative entries
    wrap; IndexError naming the dim for one out of range)."""
    iv = v(idx)
    lin = np.zeros(iv.shape[1], np.int64)
    for j, size in enumerate(sizes):
        col = iv[j]
        bad = (col < -size) | (col >= size)
        if bad.any():
            dim = dims[j] if dims is not None else j
            raise IndexError(f"index {int(col[bad][0])} is out of bounds for dimension {dim} with size {size}")
        lin = lin * size + np.where(col < 0, col + size, col)
    return wrap(lin, idx.dtype)


def first_out_of_range(idx, size):
    """The first entry of idx outside [-size, size), or None (the host checks before the op, as PyTorch's cpu)."""
    iv = v(idx)
    bad = (iv < -size) | (iv >= size)
    return int(iv[bad].flat[0]) if bad.any() else None


def floor_divide_int(a, b):
    """a // b of integer tensors, rounding toward negative infinity (scatter_reduce's integer mean)."""
    return wrap(np.floor_divide(v(a), v(b)), a.dtype)
