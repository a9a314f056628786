"""The cpu path of the reduction family (numpy, in the tensor's dtype): the signatures of cuda.py beside it."""
import numpy as np

from ... import dtypes as _dt
from ..cpu_values import _vdt, v, wrap

__all__ = ["sum_dims", "mean_dims", "arg_reduce", "arg_reduce_bwd"]


def sum_dims(x, dims, keepdim=False, dt=None):
    xv = v(x)
    r = np.sum(xv, axis=tuple(dims), keepdims=keepdim, dtype=xv.dtype if dt is None else _vdt(dt))
    return wrap(r, dt or x.dtype)


def mean_dims(x, dims, keepdim, n):
    """The sum over dims (n elements each) in x's dtype, then divided by n (0 / 0 is NaN: the empty mean)."""
    s = sum_dims(x, dims, keepdim)
    sv = v(s)
    return wrap(sv / np.asarray(n, sv.dtype), s.dtype)


def arg_reduce(x, outer, red, inner, is_max, values=True):
    """max/min over axis 1 of x viewed as [outer, red, inner] -> (values or None, int64 indices), both flat
    [outer*inner]. numpy's argmax/argmin already have PyTorch's semantics: first index on ties, NaN wins."""
    xv = v(x).reshape(outer, red, inner)
    idx = (np.argmax if is_max else np.argmin)(xv, axis=1)
    vals = wrap(np.take_along_axis(xv, idx[:, None, :], 1).reshape(-1), x.dtype) if values else None
    return vals, wrap(idx.reshape(-1).astype(np.int64), _dt.int64)


def arg_reduce_bwd(g, idx, outer, red, inner):
    """Gradient of arg_reduce's values: g[o] lands at x[p, idx[o], q], zero elsewhere (flat [outer*red*inner])."""
    gx = np.zeros((outer, red, inner), v(g).dtype)
    np.put_along_axis(gx, v(idx).reshape(outer, 1, inner), v(g).reshape(outer, 1, inner), 1)
    return wrap(gx.reshape(-1), g.dtype)
