"""The cuda path of the row normalizations (norm.ptx): LayerNorm and RMSNorm forward and backward over the
last D elements of each row, one warp per row, Welford statistics."""
from .. import dtypes as _dt
from .cuda_launch import _f32, _rdev, _rows, empty

__all__ = ["row_norm", "row_norm_bwd"]


def row_norm(x, w, b, eps, rms):
    """x: [rows, D] float32 -> (y, mean[rows], rstd[rows]); w, b: [D] or None."""
    _f32("rms_norm" if rms else "layer_norm", x, *[t for t in (w, b) if t is not None])
    rows, D = x.shape
    y = empty((rows, D), _dt.float32, x.device, "layer_norm output")
    mean = empty((rows,), _dt.float32, x.device, "layer_norm mean")
    rstd = empty((rows,), _dt.float32, x.device, "layer_norm rstd")
    _rows(_rdev(x), "row_norm_fwd", [y.data_ptr(), mean.data_ptr(), rstd.data_ptr(), x.data_ptr(),
                                     w.data_ptr() if w is not None else 0, b.data_ptr() if b is not None else 0,
                                     rows, D, float(eps), int(rms)], rows, "layer_norm")
    return y, mean, rstd


def row_norm_bwd(g, x, mean, rstd, w, rms):
    """(dx, dy*xhat): the input's gradient and the products whose column sums are the weight's gradient."""
    rows, D = x.shape
    dx = empty((rows, D), _dt.float32, x.device, "layer_norm grad")
    gxhat = empty((rows, D), _dt.float32, x.device, "layer_norm weight grad rows")
    _rows(_rdev(x), "row_norm_bwd", [dx.data_ptr(), gxhat.data_ptr(), g.data_ptr(), x.data_ptr(), mean.data_ptr(),
                                     rstd.data_ptr(), w.data_ptr() if w is not None else 0, rows, D, int(rms)],
          rows, "layer_norm backward")
    return dx, gxhat
