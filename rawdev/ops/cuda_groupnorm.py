"""The cuda path of group_norm / instance_norm (groupnorm.ptx): one block per (n, group) row with Welford
statistics and the affine apply fused, one block per row for the input's gradient, one per channel for the
weight's and bias's gradients."""
from .. import dtypes as _dt
from .cuda_launch import _f32, _kernel, _rdev, empty

__all__ = ["group_norm_fwd", "group_norm_bwd"]

_MAX_GRID = 65535


def _ptr(t):
    return t.data_ptr() if t is not None else 0


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
