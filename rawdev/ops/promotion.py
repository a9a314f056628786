"""Type promotion and broadcasting rules the families share (PyTorch's result_type for tensors and
Python scalars, and its broadcast error)."""
import builtins
import numbers

import numpy as np

from .. import dtypes as _dt


def _is_scalar(x):
    return isinstance(x, numbers.Number) and not isinstance(x, bool) or isinstance(x, (bool, np.generic))


def _result_dt(a, b):
    """PyTorch's promotion for two tensors (float beats int; wider float wins)."""
    da, db = a.dtype, b.dtype
    if da is db:
        return da
    fa, fb = da.is_floating_point, db.is_floating_point
    if fa and not fb:
        return da
    if fb and not fa:
        return db
    if fa and fb and a.ndim == 0 and b.ndim > 0:
        return db
    if fa and fb and b.ndim == 0 and a.ndim > 0:
        return da
    if fa and fb and _dt.bfloat16 in (da, db):   # numpy has no bfloat16: PyTorch's table for it
        other = db if da is _dt.bfloat16 else da
        return _dt.float32 if other is _dt.float16 else other
    return _dt.from_numpy_dtype(np.result_type(da.storage, db.storage))


def _scalar_dt(x, s):
    """Result dtype of tensor x with Python scalar s: a scalar of a higher kind (bool < int < float) lifts
    the result to that kind's default (int tensor * 2.5 -> default float, bool tensor + 1 -> int64)."""
    if not x.dtype.is_floating_point and isinstance(s, (float, np.floating)):
        return _dt.get_default_dtype()
    if x.dtype is _dt.bool and isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)):
        return _dt.int64
    return x.dtype


def _for_scalar(x, s):
    dt = _scalar_dt(x, s)
    return x if dt is x.dtype else x.to(dtype=dt)


def _bcast_shape(a, b):
    sa = a.shape
    if sa == b.shape:   # the common case, without numpy's general broadcast
        return tuple(sa)
    try:
        return tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    except ValueError:
        sa, sb = tuple(a.shape), tuple(b.shape)
        n = builtins.max(len(sa), len(sb))   # this module defines its own max
        pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
        for i in range(n - 1, -1, -1):
            if pa[i] != pb[i] and 1 not in (pa[i], pb[i]):
                raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) at "
                                   f"non-singleton dimension {i}") from None
        raise


def _to_tensor(x, like):
    from ..tensor.factory import tensor
    return tensor(x, dtype=like.dtype, device=like.device)


def _scalar_dtype(s, like):
    """A Python number joins a tensor as PyTorch's wrapped numbers do: it keeps the tensor's dtype unless it
    is a float meeting an integer tensor (then the default float dtype)."""
    if isinstance(s, bool):
        return like.dtype
    if isinstance(s, float) and not like.dtype.is_floating_point:
        return _dt.get_default_dtype()
    return like.dtype
