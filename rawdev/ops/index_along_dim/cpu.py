"""The cpu path of indexing along a dim (numpy): the tensor viewed as [outer, size, inner], whole [inner] rows
moved; an index out of range is an IndexError before anything is written. The signatures of cuda.py beside it."""
import numpy as np

from ... import dtypes as _dt
from ..cpu_values import v, wrap

__all__ = ["index_select", "index_copy_", "index_add_", "check_int32_index"]


def _checked_index(idx, size):
    i = v(idx)
    bad = (i < -size) | (i >= size)
    if bad.any():
        raise IndexError(f"index {int(i[bad][0])} is out of bounds for dimension with size {size}")
    return np.where(i < 0, i + size, i)


def index_select(x, outer, size, inner, idx):
    """x viewed as [outer, size, inner] -> [outer, len(idx), inner]."""
    return wrap(np.take(v(x).reshape(outer, size, inner), _checked_index(idx, size), axis=1), x.dtype)


def index_copy_(dst, outer, size, inner, idx, src):
    d = dst._host_storage().reshape(outer, size, inner)
    d[:, _checked_index(idx, size), :] = src._host_storage().reshape(outer, -1, inner)
    dst._bump_version()
    return dst


def index_add_(dst, outer, size, inner, idx, src):
    if dst.dtype is _dt.bfloat16:
        vals = v(dst).reshape(outer, size, inner).copy()
        np.add.at(vals, (slice(None), _checked_index(idx, size), slice(None)),
                  np.asarray(v(src), vals.dtype).reshape(outer, -1, inner))
        dst._write(wrap(vals.reshape(tuple(dst.shape)), dst.dtype))
        return dst
    d = dst._host_storage().reshape(outer, size, inner)
    np.add.at(d, (slice(None), _checked_index(idx, size), slice(None)), v(src).reshape(outer, -1, inner))
    dst._bump_version()
    return dst


def check_int32_index(op):
    """An int32 index is taken on the cpu (the caller widens it to int64 first)."""
