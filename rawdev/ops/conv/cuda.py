"""The cuda path of the convolution family (conv.ptx): im2col / col2im around the GEMM, max / average /
adaptive-average pooling with their backward. Geometry travels as one struct argument (14 int64)."""
import numpy as np

from ... import dtypes as _dt
from ...runtime import memory
from ..cuda_launch import _ew, _f32, _rdev, empty

__all__ = ["im2col", "col2im", "max_pool2d", "max_pool2d_bwd", "avg_pool2d", "avg_pool2d_bwd"]


def _geom(g):
    return np.array(g, dtype=np.int64).tobytes()


def im2col(x, geom):
    """x [N, C, H, W] -> cols [C*KH*KW, N*OH*OW]; geom = (N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW)."""
    _f32("conv2d", x)
    N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW = geom
    cols = empty((C * KH * KW, N * OH * OW), _dt.float32, x.device, "im2col columns")
    _ew(_rdev(x), "im2col_f32", [cols.data_ptr(), x.data_ptr(), _geom(geom)], cols.numel(), "conv2d")
    return cols


def col2im(dcols, geom):
    N, C, H, W = geom[:4]
    dx = empty((N, C, H, W), _dt.float32, dcols.device, "conv2d input grad")
    _ew(_rdev(dcols), "col2im_f32", [dx.data_ptr(), dcols.data_ptr(), _geom(geom)], dx.numel(), "conv2d backward")
    return dx


def _zeros(shape, like, owner):
    out = empty(shape, _dt.float32, like.device, owner)
    if out.nbytes:
        memory.memset_d8(out.data_ptr(), 0, out.nbytes, _rdev(like).compute_stream)
    return out


def max_pool2d(x, geom, adaptive=False):
    _f32("max_pool2d", x)
    N, C, OH, OW = geom[0], geom[1], geom[12], geom[13]
    y = empty((N, C, OH, OW), _dt.float32, x.device, "max_pool2d output")
    idx = empty((N, C, OH, OW), _dt.int64, x.device, "max_pool2d indices")
    _ew(_rdev(x), "max_pool2d_f32", [y.data_ptr(), idx.data_ptr(), x.data_ptr(), _geom(geom), int(adaptive)],
        y.numel(), "max_pool2d")
    return y, idx


def max_pool2d_bwd(g, idx, geom):
    N, C, H, W = geom[:4]
    dx = _zeros((N, C, H, W), g, "max_pool2d grad")
    _ew(_rdev(g), "max_pool2d_bwd_f32", [dx.data_ptr(), g.data_ptr(), idx.data_ptr(), _geom(geom)], g.numel(),
        "max_pool2d backward")
    return dx


def avg_pool2d(x, geom, adaptive, count_pad):
    _f32("avg_pool2d", x)
    N, C, OH, OW = geom[0], geom[1], geom[12], geom[13]
    y = empty((N, C, OH, OW), _dt.float32, x.device, "avg_pool2d output")
    _ew(_rdev(x), "avg_pool2d_f32", [y.data_ptr(), x.data_ptr(), _geom(geom), int(adaptive), int(count_pad)],
        y.numel(), "avg_pool2d")
    return y


def avg_pool2d_bwd(g, geom, adaptive, count_pad):
    N, C, H, W = geom[:4]
    dx = _zeros((N, C, H, W), g, "avg_pool2d grad")
    _ew(_rdev(g), "avg_pool2d_bwd_f32", [dx.data_ptr(), g.data_ptr(), _geom(geom), int(adaptive), int(count_pad)],
        g.numel(), "avg_pool2d backward")
    return dx
