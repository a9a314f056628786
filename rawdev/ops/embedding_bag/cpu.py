"""The cpu path (numpy, in the tensor's dtype) of embedding_bag: the signatures of cuda.py beside it (the
index arithmetic of embedding_bag.cu)."""
import numpy as np

from ..cpu_values import v, wrap

__all__ = ["embedding_bag_fwd", "embedding_bag_bwd"]


# ------------------------------------------------------------------ embedding_bag (embedding_bag.cu's rules)
def embedding_bag_fwd(w, idx, bounds, psw, mode, pad):
    """(out [B, D], argmax [B, D] int64 | None, cnt [B]); bounds: an int64 [B + 1] tensor."""
    wv, iv, bounds = v(w), v(idx), v(bounds)
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
    bag_of = v(bag_of)
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
