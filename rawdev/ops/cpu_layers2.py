"""The cpu path (numpy, in the tensor's dtype) of interpolate and embedding_bag: the signatures of cuda_layers2.py
(the index arithmetic of interp.cu and embbag.cu)."""
import numpy as np

from .cpu import v, wrap

__all__ = ["interp_fwd", "interp_bwd", "embedding_bag_fwd", "embedding_bag_bwd"]


# ------------------------------------------------------------------ interpolate (interp.cu's index rules)
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


# ------------------------------------------------------------------ embedding_bag (embbag.cu's rules)
def embedding_bag_fwd(w, idx, bounds, psw, mode, pad):
    """(out [B, D], argmax [B, D] int64 | None, cnt [B]); bounds: host int64 array [B + 1]."""
    wv, iv = v(w), v(idx)
    V, D = wv.shape
    if iv.size and (iv.min() < 0 or iv.max() >= V):
        bad = int(iv[(iv < 0) | (iv >= V)][0])
        raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {V}")
    pv = v(psw) if psw is not None else None
    B = len(bounds) - 1
    out = np.zeros((B, D), wv.dtype)
    am = np.full((B, D), -1, np.int64) if mode == 2 else None
    cnt = np.zeros(B, wv.dtype)
    for b in range(B):
        j = np.arange(bounds[b], bounds[b + 1])
        j = j[iv[j] != pad]
        cnt[b] = len(j)
        if not len(j):
            continue
        rows = wv[iv[j]]
        if mode == 2:
            k = rows.argmax(axis=0)
            out[b], am[b] = rows[k, np.arange(D)], iv[j][k]
        else:
            out[b] = (rows * pv[j][:, None]).sum(0) if pv is not None else rows.sum(0)
            if mode == 1:
                out[b] /= len(j)
    return wrap(out, w.dtype), (wrap(am, None) if am is not None else None), wrap(cnt, w.dtype)


def embedding_bag_bwd(g, w, idx, bounds, bag_of, psw, argmax, cnt, mode, pad, need_w, need_psw):
    gv, iv, wv = v(g), v(idx), v(w)
    bag_of = np.asarray(bag_of, np.int64)
    V, D = wv.shape
    gw = gpsw = None
    if need_w:
        acc = np.zeros((V, D), gv.dtype)
        if mode == 2:
            a = v(argmax)
            ok = a >= 0
            np.add.at(acc, (a[ok], np.nonzero(ok)[1]), gv[ok])
        else:
            keep = iv != pad
            scale = np.ones(len(iv), gv.dtype) if psw is None else v(psw).astype(gv.dtype)
            if mode == 1:
                c = v(cnt)[bag_of]
                scale = scale / np.where(c > 0, c, 1)
            np.add.at(acc, iv[keep], gv[bag_of[keep]] * scale[keep][:, None])
        gw = wrap(acc, g.dtype)
    if need_psw:
        gp = (gv[bag_of] * wv[iv]).sum(1) * (iv != pad)
        gpsw = wrap(gp.astype(gv.dtype), g.dtype)
    return gw, gpsw
