"""The cpu path of the convolution family (numpy, in the tensor's dtype): the signatures of cuda.py beside it."""
import numpy as np

from ..cpu_values import v, wrap

__all__ = ["im2col", "col2im", "max_pool2d", "max_pool2d_bwd", "avg_pool2d", "avg_pool2d_bwd"]


def _far(n, p, k, s, d, o):
    """Padding needed after the input so the last window (o-1)*s + d*(k-1) fits: padding='same' with an even
    kernel pads one more cell after than before, and ceil_mode's last window may pass the input's end."""
    return max(0, (o - 1) * s + d * (k - 1) + 1 - (n + p))


def _padded(xv, geom, fill=0.0):
    N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW = geom
    return np.pad(xv, ((0, 0), (0, 0), (PH, _far(H, PH, KH, SH, DH, OH)), (PW, _far(W, PW, KW, SW, DW, OW))),
                  constant_values=fill)


def _window(xp, i, j, SH, SW, DH, DW, OH, OW):
    return xp[:, :, i * DH: i * DH + SH * (OH - 1) + 1: SH, j * DW: j * DW + SW * (OW - 1) + 1: SW]


def im2col(x, geom):
    N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW = geom
    xp = _padded(v(x), geom)
    cols = np.empty((C, KH, KW, N, OH, OW), xp.dtype)
    for i in range(KH):
        for j in range(KW):
            cols[:, i, j] = _window(xp, i, j, SH, SW, DH, DW, OH, OW).transpose(1, 0, 2, 3)
    return wrap(cols.reshape(C * KH * KW, N * OH * OW), x.dtype)


def col2im(dcols, geom):
    N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW = geom
    d = v(dcols).reshape(C, KH, KW, N, OH, OW)
    dxp = np.zeros((N, C, H + PH + _far(H, PH, KH, SH, DH, OH), W + PW + _far(W, PW, KW, SW, DW, OW)), d.dtype)
    for i in range(KH):
        for j in range(KW):
            _window(dxp, i, j, SH, SW, DH, DW, OH, OW)[...] += d[:, i, j].transpose(1, 0, 2, 3)
    return wrap(dxp[:, :, PH:PH + H, PW:PW + W], dcols.dtype)


def max_pool2d(x, geom, adaptive=False):
    N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW = geom
    xv = v(x)
    if adaptive:
        best = np.empty((N, C, OH, OW), xv.dtype)
        arg = np.empty((N, C, OH, OW), np.int64)
        for oh, ow, h0, h1, w0, w1, _ in _avg_windows(geom, True, False):
            win = xv[:, :, h0:h1, w0:w1].reshape(N, C, -1)
            k = np.where(np.isnan(win).any(-1), np.isnan(win).argmax(-1), win.argmax(-1))
            best[:, :, oh, ow] = np.take_along_axis(win, k[..., None], -1)[..., 0]
            arg[:, :, oh, ow] = (h0 + k // (w1 - w0)) * W + w0 + k % (w1 - w0)
        return wrap(best, x.dtype), wrap(arg)
    xp = _padded(xv, geom, -np.inf)
    best = np.full((N, C, OH, OW), -np.inf, xv.dtype)
    arg = np.full((N, C, OH, OW), -1, np.int64)
    oh = np.arange(OH)[:, None] * SH - PH
    ow = np.arange(OW)[None, :] * SW - PW
    for i in range(KH):
        for j in range(KW):
            w = _window(xp, i, j, SH, SW, DH, DW, OH, OW)
            h, ww = oh + i * DH, ow + j * DW
            inside = (h >= 0) & (h < H) & (ww >= 0) & (ww < W)
            take = inside & ((w > best) | (np.isnan(w) & ~np.isnan(best)) | (arg < 0))
            best = np.where(take, w, best)
            arg = np.where(take, h * W + ww, arg)
    return wrap(best, x.dtype), wrap(arg)


def max_pool2d_bwd(g, idx, geom):
    N, C, H, W = geom[:4]
    dx = np.zeros((N * C, H * W), v(g).dtype)
    gi, ii = v(g).reshape(N * C, -1), v(idx).reshape(N * C, -1)
    rows = np.repeat(np.arange(N * C), gi.shape[1])
    np.add.at(dx, (rows, ii.reshape(-1)), gi.reshape(-1))
    return wrap(dx.reshape(N, C, H, W), g.dtype)


def _avg_windows(geom, adaptive, count_pad):
    """[(oh, ow, h0, h1, w0, w1, divisor)] for every output position."""
    N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW = geom
    out = []
    for oh in range(OH):
        for ow in range(OW):
            if adaptive:
                h0, h1 = oh * H // OH, -(-(oh + 1) * H // OH)
                w0, w1 = ow * W // OW, -(-(ow + 1) * W // OW)
                div = (h1 - h0) * (w1 - w0)
            else:
                h0, w0 = oh * SH - PH, ow * SW - PW
                h1, w1 = h0 + KH, w0 + KW
                pool = (min(h1, H + PH) - h0) * (min(w1, W + PW) - w0)
                h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
                div = pool if count_pad else (h1 - h0) * (w1 - w0)
            out.append((oh, ow, h0, h1, w0, w1, div))
    return out


def avg_pool2d(x, geom, adaptive, count_pad):
    N, C, OH, OW = geom[0], geom[1], geom[12], geom[13]
    xv = v(x)
    y = np.empty((N, C, OH, OW), xv.dtype)
    for oh, ow, h0, h1, w0, w1, div in _avg_windows(geom, adaptive, count_pad):
        y[:, :, oh, ow] = xv[:, :, h0:h1, w0:w1].sum(axis=(2, 3)) / div
    return wrap(y, x.dtype)


def avg_pool2d_bwd(g, geom, adaptive, count_pad):
    N, C, H, W = geom[:4]
    gv = v(g)
    dx = np.zeros((N, C, H, W), gv.dtype)
    for oh, ow, h0, h1, w0, w1, div in _avg_windows(geom, adaptive, count_pad):
        dx[:, :, h0:h1, w0:w1] += (gv[:, :, oh, ow] / div)[:, :, None, None]
    return wrap(dx, g.dtype)
