"""The cpu path (numpy) of the binary_math family (binary_math.py), with the signatures of cuda_math.py."""
import numpy as np

from .. import dtypes as _dt
from .cpu_values import v, wrap

__all__ = ["binary_math", "logical", "logical_not", "classify", "nan_to_num"]


def _floor_divide(a, b):
    if np.issubdtype(np.result_type(a, b), np.integer):
        if np.any(b == 0):
            raise RuntimeError("ZeroDivisionError")
        return np.floor_divide(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.floor_divide(a, b)


_BINARY = {"pow": np.power, "atan2": np.arctan2, "fmod": np.fmod, "remainder": np.remainder,
           "floor_divide": _floor_divide, "copysign": np.copysign, "hypot": np.hypot}
_LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
            "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}


def binary_math(a, b, op):
    av, bv = v(a), v(b)
    if op == "pow" and np.issubdtype(bv.dtype, np.integer) and np.issubdtype(av.dtype, np.integer) \
            and np.any(bv < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    with np.errstate(all="ignore"):
        r = _BINARY[op](av, bv)
    return wrap(np.asarray(r).astype(av.dtype, copy=False), a.dtype)


def logical(a, b, op, out_dt):
    r = _LOGICAL[op](v(a), v(b))
    return wrap(np.asarray(r).astype(out_dt.storage if out_dt is not _dt.bfloat16 else np.float32), out_dt)


def logical_not(x, bitwise):
    xv = v(x)
    if not bitwise:
        return wrap(np.logical_not(xv), _dt.bool)
    return wrap(np.logical_not(xv) if x.dtype is _dt.bool else np.invert(xv), x.dtype)


def classify(x, op):
    xv = v(x)
    f = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "isposinf": np.isposinf,
         "isneginf": np.isneginf, "signbit": np.signbit, "nonzero": lambda a: a != 0}[op]
    return wrap(np.asarray(f(xv)), _dt.bool)


def nan_to_num(x, nan, posinf, neginf):
    return wrap(np.nan_to_num(v(x), nan=nan, posinf=posinf, neginf=neginf), x.dtype)
