"""The cuda path of the normalization family: the launches of normalization.ptx (ptx/src/normalization.cu), one
section each: layer_norm / rms_norm (one warp per row, Welford statistics), group_norm / instance_norm (one block
per (n, group) row with the affine apply fused, one block per row for the input's gradient, one per channel for
the weight's and bias's) and batch_norm (one block per channel for the statistics and the backward's sums, one
thread per element for the apply and the input's gradient). float32 only; the signatures are cpu.py's beside it.
"""
from ... import dtypes as _dt
from ..cuda_launch import _ew, _f32, _kernel, _rdev, _rows, empty

__all__ = ["row_norm", "row_norm_bwd", "group_norm_fwd", "group_norm_bwd", "bn_stats", "bn_apply", "bn_bwd"]

_MAX_GRID = 65535


def _ptr(t):
    return t.data_ptr() if t is not None else 0


# ------------------------------------------------------------------ layer_norm / rms_norm
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


# ------------------------------------------------------------------ group_norm / instance_norm
def group_norm_fwd(x3, w, b, G, eps):
    """x3: contiguous [N, C, S] float32 -> (y [N, C, S], mean [N*G], rstd [N*G]); w, b: [C] or None."""
    _f32("group_norm", x3, w, b)
    N, C, S = x3.shape
    rows = N * G
    y = empty((N, C, S), _dt.float32, x3.device, "group_norm output")
    mean = empty((rows,), _dt.float32, x3.device, "group_norm mean")
    rstd = empty((rows,), _dt.float32, x3.device, "group_norm rstd")
    if rows:
        _kernel(_rdev(x3), "gn_fwd_f32", "group_norm").launch(
            min(rows, _MAX_GRID), 256, [y.data_ptr(), mean.data_ptr(), rstd.data_ptr(), x3.data_ptr(), _ptr(w),
                                        _ptr(b), rows, G, C // G, S, float(eps)])
    return y, mean, rstd


def group_norm_bwd(g3, x3, mean, rstd, w, G, need_dx, need_dw, need_db):
    """(dx [N, C, S] | None, dw [C] | None, db [C] | None)."""
    N, C, S = x3.shape
    rdev = _rdev(g3)
    dx = dw = db = None
    if need_dx:
        dx = empty((N, C, S), _dt.float32, g3.device, "group_norm input grad")
        if N * G:
            _kernel(rdev, "gn_bwd_dx_f32", "group_norm backward").launch(
                min(N * G, _MAX_GRID), 256, [dx.data_ptr(), g3.data_ptr(), x3.data_ptr(), mean.data_ptr(),
                                             rstd.data_ptr(), _ptr(w), N * G, G, C // G, S])
    if need_dw or need_db:
        dw = empty((C,), _dt.float32, g3.device, "group_norm weight grad") if need_dw else None
        db = empty((C,), _dt.float32, g3.device, "group_norm bias grad") if need_db else None
        if C:
            _kernel(rdev, "gn_bwd_wb_f32", "group_norm backward").launch(
                min(C, _MAX_GRID), 256, [_ptr(dw), _ptr(db), g3.data_ptr(), x3.data_ptr(), mean.data_ptr(),
                                         rstd.data_ptr(), N, C, C // G, S])
    return dx, dw, db


# ------------------------------------------------------------------ batch_norm
def bn_stats(x3):
    """(mean[C], biased var[C]) of x3 [N, C, S] over N and S: one block per channel, Welford."""
    _f32("batch_norm", x3)
    N, C, S = x3.shape
    mean = empty((C,), _dt.float32, x3.device, "batch_norm mean")
    var = empty((C,), _dt.float32, x3.device, "batch_norm var")
    if C:
        _kernel(_rdev(x3), "bn_stats_f32", "batch_norm").launch(C, 256, [mean.data_ptr(), var.data_ptr(),
                                                                       x3.data_ptr(), N, C, S])
    return mean, var


def bn_apply(x3, mean, invstd, w, b):
    N, C, S = x3.shape
    y = empty(tuple(x3.shape), _dt.float32, x3.device, "batch_norm output")
    _ew(_rdev(x3), "bn_apply_f32", [y.data_ptr(), x3.data_ptr(), mean.data_ptr(), invstd.data_ptr(), _ptr(w),
                                    _ptr(b), C, S, y.numel()], y.numel(), "batch_norm")
    return y


def bn_bwd(g3, x3, mean, invstd, w, training):
    """(dx, sum of dy per channel, sum of dy*xhat per channel)."""
    N, C, S = x3.shape
    rdev = _rdev(g3)
    sdy = empty((C,), _dt.float32, g3.device, "batch_norm grad sum")
    sdx = empty((C,), _dt.float32, g3.device, "batch_norm grad sum")
    if C:
        _kernel(rdev, "bn_bwd_reduce_f32", "batch_norm backward").launch(
            C, 256, [sdy.data_ptr(), sdx.data_ptr(), g3.data_ptr(), x3.data_ptr(), mean.data_ptr(),
                     invstd.data_ptr(), N, C, S])
    dx = empty(tuple(x3.shape), _dt.float32, g3.device, "batch_norm input grad")
    _ew(rdev, "bn_bwd_dx_f32", [dx.data_ptr(), g3.data_ptr(), x3.data_ptr(), mean.data_ptr(), invstd.data_ptr(),
                                _ptr(w), sdy.data_ptr(), sdx.data_ptr(), C, S, dx.numel(), float(max(N * S, 1)),
                                int(training)], dx.numel(), "batch_norm backward")
    return dx, sdy, sdx
