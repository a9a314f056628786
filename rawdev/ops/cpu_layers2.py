"""The cpu path (numpy, in the tensor's dtype) of group_norm / instance_norm: the signatures of
cuda_groupnorm.py."""
import numpy as np

from .cpu import v, wrap

__all__ = ["group_norm_fwd", "group_norm_bwd"]


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
