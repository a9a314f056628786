"""The cpu path of the row normalizations (numpy, in the tensor's dtype; float16 in float32 with the statistics
kept in float32, as PyTorch's opmath and the cuda path): the signatures of cuda_norm.py."""
import numpy as np

from .. import dtypes as _dt
from .cpu import v, wrap


def _opmath(a):
    return a.astype(np.float32) if a.dtype == np.float16 else a

__all__ = ["row_norm", "row_norm_bwd"]


def row_norm(x, w, b, eps, rms):
    xv = _opmath(v(x))
    mean = np.zeros(xv.shape[0], xv.dtype) if rms else xv.mean(axis=1)
    d = xv - mean[:, None]
    var = (d * d).mean(axis=1)
    rstd = (1.0 / np.sqrt(var + eps)).astype(xv.dtype)
    y = d * rstd[:, None]
    if w is not None:
        y = y * v(w)
    if b is not None:
        y = y + v(b)
    stat = _dt.float32 if x.dtype is _dt.float16 else x.dtype
    return wrap(y, x.dtype), wrap(mean, stat), wrap(rstd, stat)


def row_norm_bwd(g, x, mean, rstd, w, rms):
    xv, gv, m, r = _opmath(v(x)), _opmath(v(g)), v(mean), v(rstd)
    xh = (xv - m[:, None]) * r[:, None]
    gw = gv * v(w) if w is not None else gv
    D = xv.shape[1]
    sgx = (gw * xh).sum(axis=1, keepdims=True) / D
    if rms:
        dx = r[:, None] * (gw - xh * sgx)
    else:
        dx = r[:, None] * (gw - gw.sum(axis=1, keepdims=True) / D - xh * sgx)
    return wrap(dx, g.dtype), wrap(gv * xh, g.dtype)
