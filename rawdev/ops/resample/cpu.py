"""The cpu path (numpy, in the tensor's dtype) of interpolate: the signatures of cuda.py beside it (the index
arithmetic of resample.cu)."""
import numpy as np

from ..cpu_values import v, wrap

__all__ = ["interp_fwd", "interp_bwd"]


# ------------------------------------------------------------------ interpolate (resample.cu's index rules)
def _nearest_src(out, inp, scale, exact, ft=np.float32):
    d = np.arange(out, dtype=ft)
    s = (d + ft(0.5)) * ft(scale) if exact else d * ft(scale)
    return np.minimum(np.floor(s).astype(np.int64), inp - 1)


def _linear_src(out, inp, scale, align, ft):
    d = np.arange(out, dtype=ft)
    s = d * ft(scale) if align else (d + ft(0.5)) * ft(scale) - ft(0.5)
    s = np.maximum(s, ft(0))
    i0 = np.minimum(s.astype(np.int64), inp - 1)
    i1 = i0 + (i0 < inp - 1)
    lam = np.maximum(s - i0.astype(ft), ft(0))
    return i0, i1, lam


def _interp_taps(H, W, OH, OW, sh, sw, mode, flag, ft=np.float32):
    """[(flat source index [OH, OW], weight [OH, OW] | None)] for each tap."""
    if mode == "nearest":
        h, w = _nearest_src(OH, H, sh, flag, ft), _nearest_src(OW, W, sw, flag, ft)
        return [(h[:, None] * W + w[None, :], None)]
    h0, h1, lh = _linear_src(OH, H, sh, flag, ft)
    w0, w1, lw = _linear_src(OW, W, sw, flag, ft)
    lh, lw = lh.astype(np.float64)[:, None], lw.astype(np.float64)[None, :]
    return [(h0[:, None] * W + w0[None, :], (1 - lh) * (1 - lw)), (h0[:, None] * W + w1[None, :], (1 - lh) * lw),
            (h1[:, None] * W + w0[None, :], lh * (1 - lw)), (h1[:, None] * W + w1[None, :], lh * lw)]


def _coord_type(a):
    return np.float64 if a.dtype == np.float64 else np.float32


def interp_fwd(x3, OH, OW, sh, sw, mode, flag):
    """x3: [P, H, W] -> [P, OH, OW]."""
    xv = v(x3)
    P, H, W = xv.shape
    flat = xv.reshape(P, H * W)
    y = np.zeros((P, OH, OW), np.float64 if xv.dtype == np.float64 else np.float32)
    for idx, wt in _interp_taps(H, W, OH, OW, sh, sw, mode, flag, _coord_type(xv)):
        y += flat[:, idx] if wt is None else flat[:, idx] * wt.astype(y.dtype)
    return wrap(y.astype(xv.dtype, copy=False), x3.dtype)


def interp_bwd(g3, H, W, sh, sw, mode, flag):
    gv = v(g3)
    P, OH, OW = gv.shape
    dx = np.zeros((P, H * W), gv.dtype)
    for idx, wt in _interp_taps(H, W, OH, OW, sh, sw, mode, flag, _coord_type(gv)):
        np.add.at(dx, (slice(None), idx), gv if wt is None else gv * wt.astype(gv.dtype))
    return wrap(dx.reshape(P, H, W), g3.dtype)
