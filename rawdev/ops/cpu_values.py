"""The cpu backend's two conversions between a Tensor and its numpy values (v, wrap), apart from ops/cpu.py so that
the cpu files of the op families (ops/<family>/cpu.py) use them without importing the backend that imports them."""
import numpy as np

from .. import dtypes as _dt
from ..tensor.core import Tensor

__all__ = ["v", "wrap"]


def _vdt(dt):
    """numpy dtype the values of dt are computed in."""
    return np.dtype(np.float32) if dt is _dt.bfloat16 else dt.storage


def v(t):
    """numpy values of a cpu tensor (shared when the dtype allows)."""
    d = t._data
    if d is not None and t._pending is None and t._dtype is not _dt.bfloat16:   # _values() without its calls
        return d
    return t._values()


def wrap(arr, dt=None):
    if type(arr) is not np.ndarray:
        arr = np.asarray(arr)
    if dt is None:
        dt = _dt.from_numpy_dtype_fast(arr.dtype)
    if dt is _dt.bfloat16:
        return Tensor._make_cpu(_dt.to_storage(arr, dt), dt)
    if dt.is_quantized:   # an op computed on a quantized tensor's integers (through a view, which has no guard)
        from ..errors import quantized_cpu_error
        raise quantized_cpu_error(None)
    if arr.dtype != dt.storage or not arr.flags.c_contiguous:
        arr = np.array(arr, dtype=dt.storage, order="C")
    return Tensor._make_cpu_contiguous(arr, dt)
