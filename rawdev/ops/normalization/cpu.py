"""The cpu path of the normalization family (numpy, in the tensor's dtype): the signatures of cuda.py beside it.

The row norms compute float16 in float32 with the statistics kept in float32, as PyTorch's opmath and the cuda
path; group and batch norm compute in the tensor's dtype.
"""
import numpy as np

from ... import dtypes as _dt
from ..cpu_values import v, wrap

__all__ = ["row_norm", "row_norm_bwd", "group_norm_fwd", "group_norm_bwd", "bn_stats", "bn_apply", "bn_bwd"]


def _opmath(a):
    return a.astype(np.float32) if a.dtype == np.float16 else a


# ------------------------------------------------------------------ layer_norm / rms_norm
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


def row_norm_bwd(g, x, mean, rstd, w, rms, need_dx=True, need_dw=False, need_db=False):
    xv, gv, m, r = _opmath(v(x)), _opmath(v(g)), v(mean), v(rstd)
    xh = (xv - m[:, None]) * r[:, None]
    dx = dw = db = None
    if need_dx:
        gw = gv * v(w) if w is not None else gv
        D = xv.shape[1]
        sgx = (gw * xh).sum(axis=1, keepdims=True) / D
        if rms:
            dx = wrap(r[:, None] * (gw - xh * sgx), g.dtype)
        else:
            dx = wrap(r[:, None] * (gw - gw.sum(axis=1, keepdims=True) / D - xh * sgx), g.dtype)
    acc = _dt.float32 if g.dtype in (_dt.float16, _dt.bfloat16) else g.dtype   # the sums unrounded, as cuda's
    if need_dw:
        dw = wrap((gv * xh).sum(axis=0), acc)
    if need_db:
        db = wrap(gv.sum(axis=0), acc)
    return dx, dw, db


# ------------------------------------------------------------------ group_norm / instance_norm
def group_norm_fwd(x3, w, b, G, eps):
    xv = v(x3)
    N, C, S = xv.shape
    xr = xv.reshape(N * G, (C // G) * S)
    mean = xr.mean(axis=1) if xr.shape[1] else np.full(N * G, np.nan, xv.dtype)
    var = ((xr - mean[:, None]) ** 2).mean(axis=1) if xr.shape[1] else mean
    rstd = (1.0 / np.sqrt(var + eps)).astype(xv.dtype)
    y = ((xr - mean[:, None]) * rstd[:, None]).reshape(N, C, S)
    if w is not None:
        y = y * v(w)[:, None]
    if b is not None:
        y = y + v(b)[:, None]
    return wrap(y.astype(xv.dtype, copy=False), x3.dtype), wrap(mean, x3.dtype), wrap(rstd, x3.dtype)


def group_norm_bwd(g3, x3, mean, rstd, w, G, need_dx, need_dw, need_db):
    xv, gv, m, r = v(x3), v(g3), v(mean), v(rstd)
    N, C, S = xv.shape
    xh = ((xv.reshape(N * G, (C // G) * S) - m[:, None]) * r[:, None]).reshape(N, C, S)
    dx = dw = db = None
    if need_dx:
        gw = gv * v(w)[:, None] if w is not None else gv
        K = (C // G) * S
        gw2, xh2 = gw.reshape(N * G, K), xh.reshape(N * G, K)
        a = gw2.sum(axis=1, keepdims=True)
        bs = (gw2 * xh2).sum(axis=1, keepdims=True)
        dx = wrap((r[:, None] * (gw2 - (a + xh2 * bs) / max(K, 1))).reshape(N, C, S).astype(xv.dtype), g3.dtype)
    if need_dw:
        dw = wrap((gv * xh).sum(axis=(0, 2)).astype(xv.dtype), g3.dtype)
    if need_db:
        db = wrap(gv.sum(axis=(0, 2)).astype(xv.dtype), g3.dtype)
    return dx, dw, db


# ------------------------------------------------------------------ batch norm
def bn_stats(x3):
    xv = v(x3)
    return wrap(xv.mean(axis=(0, 2)), x3.dtype), wrap(xv.var(axis=(0, 2)), x3.dtype)


def bn_apply(x3, mean, invstd, w, b):
    y = (v(x3) - v(mean)[:, None]) * v(invstd)[:, None]
    if w is not None:
        y = y * v(w)[:, None]
    if b is not None:
        y = y + v(b)[:, None]
    return wrap(y, x3.dtype)


def bn_bwd(g3, x3, mean, invstd, w, training):
    gv, xv = v(g3), v(x3)
    istd = v(invstd)[:, None]
    xhat = (xv - v(mean)[:, None]) * istd
    sdy, sdx = gv.sum(axis=(0, 2)), (gv * xhat).sum(axis=(0, 2))
    M = max(xv.shape[0] * xv.shape[2], 1)
    g = gv - (sdy[:, None] + xhat * sdx[:, None]) / M if training else gv
    scale = istd * (v(w)[:, None] if w is not None else 1)
    return wrap(g * scale, g3.dtype), wrap(sdy, g3.dtype), wrap(sdx, g3.dtype)
