"""The cuda path of the reduction family (reduce.ptx): sums over any dims of float32 and float16/bfloat16 storage
(float32 accumulation), the mean's scaled sum, and max/min along a dim with their gradient; int64 and bool
operands go to the int64 kernels of ops/cuda_int.py. Operands arrive contiguous (the dispatcher makes strided
views contiguous)."""
import math

from ... import dtypes as _dt
from ...runtime import memory
from ..cuda_cast import cast
from ..cuda_launch import (
    _SUFFIX,
    _cols,
    _ew,
    _f32,
    _kernel,
    _low,
    _rdev,
    _rows,
    _storage,
    dense,
    empty,
    full,
    reduce_layout,
)

__all__ = ["sum_dims", "mean_dims", "arg_reduce", "arg_reduce_bwd"]


# ------------------------------------------------------------------ sums over dims
def sum_dims(x, dims, keepdim=False, dt=None):
    """Sum of x over dims in one reduction launch (two for everything): the reduced axes are moved last (a
    permuted view, copied once when that is not already contiguous) and each row is summed by a warp; reducing
    only leading axes sums columns in place (sum_axis0). A float16/bfloat16 x is read in its own storage (the
    _f16/_bf16 sums: float32 accumulation into a float32 result), which is rounded once to x's dtype unless dt is
    float32."""
    return _scaled_sum(x, dims, keepdim, dt, 1.0)


def _native_sum(x, dims, keepdim=False, dt=None, *args, **kwargs):
    return _low(x) is not None and dt in (None, x.dtype, _dt.float32)


sum_dims.native_low = _native_sum  # type: ignore[attr-defined]


def _scaled_sum(x, dims, keepdim, dt, alpha):
    """sum_dims times alpha (the float32 sum scaled before a 16-bit result is rounded)."""
    if x.dtype is _dt.int64 and dt in (None, _dt.int64) and alpha == 1.0:
        from ..cuda_int import sum_dims_i64
        return sum_dims_i64(x, dims, keepdim)
    if x.dtype is _dt.bool and dt is _dt.int64 and alpha == 1.0:
        return _count(x, dims, keepdim)
    low = _low(x)
    if low is None:
        _f32("sum", x)
    if dt not in (None, x.dtype, _dt.float32):
        raise TypeError(f"sum(dtype={dt}) on cuda: only float32")
    out = _sum_f32(x, dims, keepdim, alpha, "sum output", _SUFFIX[low] if low is not None else "")
    if low is None or dt is _dt.float32:
        return out
    r = cast(out, low)
    if r._buf is not None and out._buf is not None:   # the rounded copy is the op's output: it takes the name
        r._buf.owner, out._buf.owner = out._buf.owner, f"{out._buf.owner} (float32, before rounding)"
    return r


def _sum_f32(x, dims, keepdim, alpha, owner, sfx):
    """The float32 sum of x (of the storage sfx names) over dims, times alpha."""
    rdev, dev = _rdev(x), x.device
    shape = tuple(x.shape)
    dims, keep, out_shape, red, rows = reduce_layout(shape, dims, keepdim)
    out = empty(out_shape, _dt.float32, dev, owner)
    if rows == 0:
        return out
    if red == 0:
        memory.memset_d8(out.data_ptr(), 0, out.nbytes, rdev.compute_stream)
        return out
    x = dense(x)
    if not keep:                                     # everything: two deterministic passes
        nparts = min(1024, (red + 255) // 256)
        parts = empty((nparts,), _dt.float32, dev, "partial sums")
        _kernel(rdev, "sum_partial" + sfx, "sum").launch(nparts, 256, [parts.data_ptr(), x.data_ptr(), red])
        _kernel(rdev, "sum_final", "sum").launch(1, 1024, [out.data_ptr(), parts.data_ptr(), nparts, float(alpha)])
        return out
    if dims == list(range(len(dims))):               # leading axes: column sums of [red, rows]
        _cols(rdev, "sum_axis0" + sfx, [out.data_ptr(), x.data_ptr(), red, rows, 0.0], rows, "sum")
    else:                                            # reduced axes last: row sums of [rows, red]
        # the permuted view made here rather than by ops/shape.permute (which would put this file in the import
        # cycle of ops/shape and the dispatcher): the same sizes, strides and offset, no autograd node to record
        order = tuple(keep) + tuple(dims)
        st = x.stride()
        xt = dense(x._view([shape[d] for d in order], [st[d] for d in order], x.storage_offset()))
        _rows(rdev, "sum_axis1" + sfx, [out.data_ptr(), xt.data_ptr(), rows, red, 0.0], rows, "sum")
    if alpha != 1.0:
        _ew(rdev, "scale", [out.data_ptr(), out.data_ptr(), float(alpha), out.numel()], out.numel(), "mean")
    return out


def _count(x, dims, keepdim):
    """sum of a bool tensor (how many are true) as int64: widened to int64, summed by the int64 kernel."""
    from ..cuda_int import int_cast, sum_dims_i64
    return sum_dims_i64(int_cast(x, _dt.int64), dims, keepdim)


def mean_dims(x, dims, keepdim, n):
    """The sum over dims divided by n, the count of elements each output sums. A float16/bfloat16 x (n > 0) is the
    float32 sum times 1/n, rounded once to its dtype (PyTorch's), not a rounded sum divided; otherwise the sum
    divided by n as ops/cuda.py's div_scalar does (a scale by 1/n; the mean of nothing is 0 * inf, NaN)."""
    if n and _low(x) is not None:
        return _scaled_sum(x, dims, keepdim, None, 1.0 / n)
    s = sum_dims(x, dims, keepdim)
    sfx = _storage("mul", s)
    y = empty(s.shape, s.dtype, s.device, "mul output")
    _ew(_rdev(s), "scale" + sfx, [y.data_ptr(), s.data_ptr(), 1.0 / n if n else math.copysign(math.inf, n),
                                  s.numel()], s.numel(), "mul")
    return y


def _native_mean(x, *args, **kwargs):
    return _low(x) is not None


# a float16/bfloat16 x runs in its own storage (the sums' _f16/_bf16 kernels), never widened by opmath first
mean_dims.native_low = _native_mean  # type: ignore[attr-defined]


# ------------------------------------------------------------------ max / min along a dim
def _arg_block(red):
    """A thread per output for the shortest rows (256 outputs per block), a warp per output for short ones (8 per
    block), a whole block for long ones."""
    if red <= 16:
        return (1, 256)
    if red <= 256:
        return (32, 8)
    return (256, 1) if red <= 8192 else (1024, 1)


def arg_reduce(x, outer, red, inner, is_max, values=True):
    """max/min over axis 1 of x viewed as [outer, red, inner] -> (float32 values or None, int64 indices),
    both flat [outer*inner]; PyTorch's semantics (first index on ties, NaN wins)."""
    op = "max" if is_max else "min"
    if x.dtype is _dt.int64:
        from ..cuda_int import reduce_i64
        vals, idx = reduce_i64(x, outer, red, inner, op, indices=True)
        return (vals if values else None), idx
    _f32(op, x)
    n = outer * inner
    idx = empty((n,), _dt.int64, x.device, f"{op} indices")
    vals = empty((n,), x.dtype, x.device, f"{op} values") if values else None
    if n:
        bx, by = _arg_block(red)
        _kernel(_rdev(x), f"{op}_dim", op).launch(-(-n // by), (bx, by), [
            vals.data_ptr() if values else 0, idx.data_ptr(), x.data_ptr(), outer, red, inner])
    return vals, idx


def arg_reduce_bwd(g, idx, outer, red, inner):
    """Gradient of arg_reduce's values: g[o] lands at x[p, idx[o], q], zero elsewhere (flat [outer*red*inner])."""
    _f32("max backward", g)
    gx = full((outer * red * inner,), 0.0, g.dtype, g.device, "max grad")
    n = outer * inner
    _ew(_rdev(g), "max_dim_bwd", [gx.data_ptr(), g.data_ptr(), idx.data_ptr(), outer, red, inner], n,
        "max backward")
    return gx
