"""The cuda path of the normalization family: the launches of normalization.ptx (ptx/src/normalization.cu), one
section each: layer_norm / rms_norm (one warp per row, Welford statistics), group_norm / instance_norm (one block
per (n, group) row with the affine apply fused, one block per row for the input's gradient, one per channel for
the weight's and bias's) and batch_norm (one block per channel for the statistics and the backward's sums, one
thread per element for the apply and the input's gradient). The signatures are cpu.py's beside it.

Every kernel comes in several storages (normalization.cu): float32; `_f16`/`_bf16` for x, y, the gradients,
weight and bias all of one 16-bit dtype; `_f16_f32w`/`_bf16_f32w` for 16-bit x, y, dy, dx with float32 weight and
bias (and their gradients), PyTorch's mixed case. The statistics (mean, rstd, invstd, batch norm's sums) are
float32 throughout. Each function's `native_low` tells rawdev.ops.opmath when its 16-bit operands may pass
unwidened; any other mix is widened there and reaches the float32 kernels.
"""
from ... import dtypes as _dt
from ..cuda_cast import cast
from ..cuda_launch import _cols, _ew, _f32, _kernel, _rdev, _rows, empty

__all__ = ["row_norm", "row_norm_bwd", "group_norm_fwd", "group_norm_bwd", "bn_stats", "bn_apply", "bn_bwd"]

_MAX_GRID = 65535
_WB_CHUNK = 256   # rows per partial of the layer_norm weight/bias gradient: partials hold rows * D * 4 / 256 bytes


_LOW = {_dt.float16: "_f16", _dt.bfloat16: "_bf16"}


def _ptr(t):
    return t.data_ptr() if t is not None else 0


def _kind(xs, ws):
    """(kernel suffix, element dtype) for a 16-bit storage kernel, or None: xs (the input and its gradients) all of
    one 16-bit dtype, and ws (weight, bias; None skipped) all of that dtype ('_f16' | '_bf16') or all float32
    ('_f16_f32w' | '_bf16_f32w')."""
    dt = xs[0].dtype
    if dt not in _LOW or any(t.dtype is not dt for t in xs):
        return None
    ws = [t for t in ws if t is not None]
    if all(t.dtype is dt for t in ws):
        return _LOW[dt], dt
    if all(t.dtype is _dt.float32 for t in ws):
        return _LOW[dt] + "_f32w", dt
    return None


def _stats_f32(*ts):
    return all(t.dtype is _dt.float32 for t in ts)


def _native_fwd(x, w, b, *args, **kwargs):
    """A forward's input 16-bit, its weight and bias (None skipped) of the input's dtype or float32."""
    return _kind((x,), (w, b)) is not None


def _native_bwd(g, x, mean, rstd, w, *args, **kwargs):
    """A backward's g and x of one 16-bit dtype, w of that dtype or float32, the forward's float32 statistics."""
    return _kind((g, x), (w,)) is not None and _stats_f32(mean, rstd)


def _native_apply(x, mean, invstd, w, b, *args, **kwargs):
    return _kind((x,), (w, b)) is not None and _stats_f32(mean, invstd)


def _storage(op, xs, ws=()):
    """(kernel suffix, element dtype of xs): a 16-bit kind (_kind), else ('', float32) after the float32 check of
    every operand (its TypeError for any other mix)."""
    kind = _kind(xs, ws)
    if kind is not None:
        return kind
    _f32(op, *xs, *ws)
    return "", _dt.float32


# ------------------------------------------------------------------ layer_norm / rms_norm
def row_norm(x, w, b, eps, rms):
    """x: [rows, D] -> (y, mean[rows], rstd[rows]); w, b: [D] or None. x, w, b, y float32 or all of one 16-bit
    dtype; mean and rstd float32."""
    sfx, dt = _storage("rms_norm" if rms else "layer_norm", (x,), (w, b))
    rows, D = x.shape
    y = empty((rows, D), dt, x.device, "layer_norm output")
    mean = empty((rows,), _dt.float32, x.device, "layer_norm mean")
    rstd = empty((rows,), _dt.float32, x.device, "layer_norm rstd")
    _rows(_rdev(x), "row_norm_fwd" + sfx, [y.data_ptr(), mean.data_ptr(), rstd.data_ptr(), x.data_ptr(), _ptr(w),
                                           _ptr(b), rows, D, float(eps), int(rms)], rows, "layer_norm")
    return y, mean, rstd


def row_norm_bwd(g, x, mean, rstd, w, rms, need_dx=True, need_dw=False, need_db=False):
    """(dx | None, dw | None, db | None): the input's gradient in g's dtype (float32, or g, x, w all of one 16-bit
    dtype; mean and rstd float32), and the weight's and bias's gradients as float32 column sums of dy*xhat and dy
    (unrounded: the caller rounds them to the parameters' dtype)."""
    sfx, dt = _storage("layer_norm backward", (g, x), (w,))
    rows, D = x.shape
    rdev = _rdev(x)
    dx = dw = db = None
    if need_dx:
        dx = empty((rows, D), dt, x.device, "layer_norm grad")
        _rows(rdev, "row_norm_bwd" + sfx, [dx.data_ptr(), g.data_ptr(), x.data_ptr(), mean.data_ptr(),
                                           rstd.data_ptr(), _ptr(w), rows, D, int(rms)], rows, "layer_norm backward")
    if need_dw or need_db:
        dw, db = _row_norm_wb(rdev, g, x, mean, rstd, need_dw, need_db, _LOW.get(dt, ""))
    return dx, dw, db


def _row_norm_wb(rdev, g, x, mean, rstd, need_dw, need_db, sfx):
    """The column sums of dy*xhat and dy over the rows, float32 [D] each: row_norm_bwd_wb writes one partial per
    chunk of rows (a few columns still fill the GPU), summed here when there is more than one chunk."""
    rows, D = x.shape
    chunk = max(_WB_CHUNK, (-(-rows // _MAX_GRID) + 7) & ~7)   # grid.y at most 65535; whole warps of rows
    nb = max(1, -(-rows // chunk))
    shape = (D,) if nb == 1 else (nb, D)
    part = "" if nb == 1 else " partials"
    pw = empty(shape, _dt.float32, x.device, "layer_norm weight grad" + part) if need_dw else None
    pb = empty(shape, _dt.float32, x.device, "layer_norm bias grad" + part) if need_db else None
    if D:
        _kernel(rdev, "row_norm_bwd_wb" + sfx, "layer_norm backward").launch(
            ((D + 31) // 32, nb), 256, [_ptr(pw), _ptr(pb), g.data_ptr(), x.data_ptr(), mean.data_ptr(),
                                        rstd.data_ptr(), rows, D, chunk])
    if nb == 1:
        return pw, pb
    return tuple(_col_sums(rdev, p, owner) if p is not None else None
                 for p, owner in ((pw, "layer_norm weight grad"), (pb, "layer_norm bias grad")))


def _col_sums(rdev, p, owner):
    """float32 [D]: the column sums of the partials p [nb, D] (the sum family's sum_axis0)."""
    nb, D = p.shape
    out = empty((D,), _dt.float32, p.device, owner)
    _cols(rdev, "sum_axis0", [out.data_ptr(), p.data_ptr(), nb, D, 0.0], D, "layer_norm backward")
    return out


# ------------------------------------------------------------------ group_norm / instance_norm
def group_norm_fwd(x3, w, b, G, eps):
    """x3: contiguous [N, C, S] -> (y [N, C, S], mean [N*G], rstd [N*G]); w, b: [C] or None. x3, w, b, y float32
    or all of one 16-bit dtype; mean and rstd float32."""
    sfx, dt = _storage("group_norm", (x3,), (w, b))
    N, C, S = x3.shape
    rows = N * G
    y = empty((N, C, S), dt, x3.device, "group_norm output")
    mean = empty((rows,), _dt.float32, x3.device, "group_norm mean")
    rstd = empty((rows,), _dt.float32, x3.device, "group_norm rstd")
    if rows:
        _kernel(_rdev(x3), "gn_fwd" + (sfx or "_f32"), "group_norm").launch(
            min(rows, _MAX_GRID), 256, [y.data_ptr(), mean.data_ptr(), rstd.data_ptr(), x3.data_ptr(), _ptr(w),
                                        _ptr(b), rows, G, C // G, S, float(eps)])
    return y, mean, rstd


def group_norm_bwd(g3, x3, mean, rstd, w, G, need_dx, need_dw, need_db):
    """(dx [N, C, S] | None, dw [C] | None, db [C] | None), in g3's dtype (float32, or g3, x3, w all of one 16-bit
    dtype; mean and rstd float32)."""
    sfx, dt = _storage("group_norm backward", (g3, x3), (w,))
    sfx = sfx or "_f32"
    N, C, S = x3.shape
    rdev = _rdev(g3)
    dx = dw = db = None
    if need_dx:
        dx = empty((N, C, S), dt, g3.device, "group_norm input grad")
        if N * G:
            _kernel(rdev, "gn_bwd_dx" + sfx, "group_norm backward").launch(
                min(N * G, _MAX_GRID), 256, [dx.data_ptr(), g3.data_ptr(), x3.data_ptr(), mean.data_ptr(),
                                             rstd.data_ptr(), _ptr(w), N * G, G, C // G, S])
    if need_dw or need_db:
        wdt = w.dtype if w is not None else dt   # the weight's and bias's gradients: the parameters' dtype
        dw = empty((C,), wdt, g3.device, "group_norm weight grad") if need_dw else None
        db = empty((C,), wdt, g3.device, "group_norm bias grad") if need_db else None
        if C:
            _kernel(rdev, "gn_bwd_wb" + sfx, "group_norm backward").launch(
                min(C, _MAX_GRID), 256, [_ptr(dw), _ptr(db), g3.data_ptr(), x3.data_ptr(), mean.data_ptr(),
                                         rstd.data_ptr(), N, C, C // G, S])
    return dx, dw, db


# ------------------------------------------------------------------ batch_norm
def bn_stats(x3):
    """(mean[C], biased var[C]) of x3 [N, C, S] over N and S: one block per channel, Welford. x3 float32 or
    16-bit; the statistics float32."""
    sfx = _storage("batch_norm", (x3,))[0] or "_f32"
    N, C, S = x3.shape
    mean = empty((C,), _dt.float32, x3.device, "batch_norm mean")
    var = empty((C,), _dt.float32, x3.device, "batch_norm var")
    if C:
        _kernel(_rdev(x3), "bn_stats" + sfx, "batch_norm").launch(C, 256, [mean.data_ptr(), var.data_ptr(),
                                                                       x3.data_ptr(), N, C, S])
    return mean, var


def bn_apply(x3, mean, invstd, w, b):
    """y = (x3 - mean) * invstd * w + b per channel of x3 [N, C, S]; x3, w, b, y float32 or all of one 16-bit
    dtype, mean and invstd [C] float32 (or all float32)."""
    sfx, dt = _storage("batch_norm", (x3,), (w, b))
    if sfx:
        _f32("batch_norm", mean, invstd)
    N, C, S = x3.shape
    y = empty(tuple(x3.shape), dt, x3.device, "batch_norm output")
    _ew(_rdev(x3), "bn_apply" + (sfx or "_f32"), [y.data_ptr(), x3.data_ptr(), mean.data_ptr(), invstd.data_ptr(),
                                                  _ptr(w), _ptr(b), C, S, y.numel()], y.numel(), "batch_norm")
    return y


def bn_bwd(g3, x3, mean, invstd, w, training):
    """(dx, sum of dy per channel, sum of dy*xhat per channel): the sums are the bias's and the weight's
    gradients, in g3's dtype (float32, or g3, x3, w of one 16-bit dtype with float32 mean and invstd: the float32
    sums feed dx, then are rounded once)."""
    sfx, dt = _storage("batch_norm backward", (g3, x3), (w,))
    if sfx:
        _f32("batch_norm backward", mean, invstd)
    sfx = sfx or "_f32"
    N, C, S = x3.shape
    rdev = _rdev(g3)
    sdy = empty((C,), _dt.float32, g3.device, "batch_norm grad sum")
    sdx = empty((C,), _dt.float32, g3.device, "batch_norm grad sum")
    if C:
        _kernel(rdev, "bn_bwd_reduce" + _LOW.get(dt, "_f32"), "batch_norm backward").launch(
            C, 256, [sdy.data_ptr(), sdx.data_ptr(), g3.data_ptr(), x3.data_ptr(), mean.data_ptr(),
                     invstd.data_ptr(), N, C, S])
    dx = empty(tuple(x3.shape), dt, g3.device, "batch_norm input grad")
    _ew(rdev, "bn_bwd_dx" + sfx, [dx.data_ptr(), g3.data_ptr(), x3.data_ptr(), mean.data_ptr(), invstd.data_ptr(),
                                _ptr(w), sdy.data_ptr(), sdx.data_ptr(), C, S, dx.numel(), float(max(N * S, 1)),
                                int(training)], dx.numel(), "batch_norm backward")
    wdt = w.dtype if w is not None else dt   # the weight's and bias's gradients: the parameters' dtype
    if wdt is not _dt.float32:
        sdy, sdx = cast(sdy, wdt), cast(sdx, wdt)
    return dx, sdy, sdx


# opmath passes 16-bit operands unwidened where these say so (rawdev.ops.opmath, "native_low")
row_norm.native_low = _native_fwd  # type: ignore[attr-defined]
row_norm_bwd.native_low = _native_bwd  # type: ignore[attr-defined]
group_norm_fwd.native_low = _native_fwd  # type: ignore[attr-defined]
group_norm_bwd.native_low = _native_bwd  # type: ignore[attr-defined]
bn_stats.native_low = lambda x3, *args, **kwargs: _kind((x3,), ()) is not None  # type: ignore[attr-defined]
bn_apply.native_low = _native_apply  # type: ignore[attr-defined]
bn_bwd.native_low = _native_bwd  # type: ignore[attr-defined]
