"""The cpu path of the selection family (numpy): the same signatures as cuda.py beside it."""
import numpy as np

from ... import dtypes as _dt
from ..cpu_values import _vdt, v, wrap

__all__ = ["where", "fill_where", "clamp", "clamp_bwd", "max_min", "max_min_bwd"]


def _mask(c):
    if c.dtype not in (_dt.bool, _dt.uint8):
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{str(c.dtype).split('.')[-1].capitalize()}")
    return v(c).astype(bool)


def where(cond, a, b):
    return wrap(np.where(_mask(cond), v(a), v(b)), a.dtype)


def fill_where(x, cond, value, invert=False):
    m = _mask(cond)
    return wrap(np.where(~m if invert else m, np.asarray(value, _vdt(x.dtype)), v(x)), x.dtype)


def clamp(x, lo, hi):
    xv = v(x)
    with np.errstate(invalid="ignore"):
        y = np.where(xv < lo, np.asarray(lo, xv.dtype), xv)
        y = np.where(y > hi, np.asarray(hi, xv.dtype), y)
    return wrap(y, x.dtype)


def clamp_bwd(g, x, lo, hi):
    xv = v(x)
    return wrap(np.where((xv >= lo) & (xv <= hi), v(g), np.zeros((), _vdt(g.dtype))), g.dtype)


def max_min(a, b, is_max):
    return wrap((np.maximum if is_max else np.minimum)(v(a), v(b)), a.dtype)


def max_min_bwd(g, a, b, is_max):
    av, bv, gv = v(a), v(b), v(g)
    w = np.where(av == bv, 0.5, np.where((av > bv) == is_max, 1.0, 0.0)).astype(gv.dtype)
    return wrap(gv * w, g.dtype), wrap(gv * (1 - w), g.dtype)
