"""The cuda path of every op: the shipped PTX kernels, launched on the device's compute stream.

Same signatures as rawdev/ops/cpu.py. float32 only (the kernels are f32). Outputs are fresh pool
allocations tagged for the memory tool ("linear output", "relu output", ...).

What runs where:
- GEMMs (linear forward/backward, matmul): gemm_{nt,nn,tn}_f32_{32x32,64x64,128x128}, the tile chosen by size;
  skinny outputs with a long K use split-K (gemm_*_32x32_splitk + gemm_splitk_reduce_f32, see _splitk).
  bfloat16/float16 operands of one dtype on sm_80+: gemm_{nt,nn,tn}_{bf16,f16}_128x128 on the 16-bit
  storage (tensor cores, float32 accumulation; _gemm_native); float16 on sm_75: gemm_{nt,nn,tn}_f16_sm75 (the
  same on mma m16n8k8); every other 16-bit case widened by opmath.
- Operands arrive contiguous (rawdev.ops.dispatch makes strided views contiguous with one strided-copy
  launch); GEMM operands may also be transposed views (read through the nt/tn layouts and their strides).
- Broadcasting is `expand` (stride 0) made contiguous by the strided copy: one launch, never a loop.
- Sums over dimensions: sum_axis1 over rows (reduced axes moved last), sum_axis0 for column sums,
  sum_partial/sum_final for everything (ops/reduce/cuda.py, star-imported below like the other family files).
- Scalar bias is the GEMM epilogue with K = 0: Y = act(beta·Y + bias[n]) on a copy.
- Comparisons (bool out), casts between float32 and bool/uint8/int32/int64/f16/bf16, div, abs, exp, log and
  pow are elementwise kernels; max/min/argmax/argmin along a dim are max_dim/min_dim (reduce.ptx,
  ops/reduce/cuda.py).
- Elementwise, softmax, loss, optimizer and dropout math uses the elementwise/reduce/loss/optim kernel
  families; `_kernel()` names the missing one when a family is not shipped yet.
"""
import math

import numpy as np

from .. import dtypes as _dt
from .. import flags as _flags
from ..runtime import kernels as _kernels
from ..runtime import memory
from ..tensor.core import Tensor
from .cuda_cast import _CAST_NAMES, _cast_kernel, _cast_path, can_cast, cast  # noqa: F401
from .cuda_launch import (_GEMM_TILES, _SUFFIX, _bcast, _cols, _ew, _f32, _kernel, _low, _rdev, _rows,  # noqa: F401
                          _storage, _tile, clone, copy_into, dense, empty, full, gemm16_kernel, has_kernel, set_poison)
from .owners import owner_of

NAME = "cuda"
_F32 = _dt.float32


def _bshape(a, b):
    """The broadcast shape of two operands (equal shapes, the common case, without numpy)."""
    sa, sb = tuple(a.shape), tuple(b.shape)
    return sa if sa == sb else tuple(np.broadcast_shapes(sa, sb))


_SPLITK_MIN_SLICE = 256   # K per split: 16 BK steps of the 32x32 tile, so each block's loop stays long
_SPLITK_MAX = 32


def _splitk(M, N, K, sms):
    """(splits, kchunk) for the split-K path, or (1, K) for one ordinary launch.

    A skinny output (M=10, N=64 is 2 tiles of 32x32) with a long K (4096) runs only as many blocks as
    output tiles, so most SMs idle while each block walks all of K. Splitting K into slices gives
    tiles*splits blocks; the cost is a workspace [splits, M, N] written and read back once, which is small
    next to the operands when K per slice is long. So: split only when the 32x32 grid fills less than
    half the SMs and K holds at least two slices of _SPLITK_MIN_SLICE; aim at about two blocks per SM
    (tiles*splits ~ 2*sms), with at most _SPLITK_MAX slices and at least _SPLITK_MIN_SLICE of K each.
    The slice length is rounded up to a multiple of 16 (the tile's BK; keeps float4 loads aligned)."""
    tiles = -(-M // 32) * -(-N // 32)
    if tiles * 2 > sms or K < 2 * _SPLITK_MIN_SLICE:
        return 1, K
    splits = min(-(-2 * sms // tiles), K // _SPLITK_MIN_SLICE, _SPLITK_MAX)
    if splits < 2:
        return 1, K
    kchunk = -(-K // splits)
    kchunk = -(-kchunk // 16) * 16
    return -(-K // kchunk), kchunk


def _gemm_splitk_raw(rdev, layout, y, a, b, M, N, K, lda, ldb, ldy, alpha, beta, bias, act, splits, kchunk):
    """Split-K: gemm_<layout>_f32_32x32_splitk writes per-slice partials to a [splits, M, N] workspace,
    gemm_splitk_reduce_f32 sums them in slice order and applies the epilogue (bit-reproducible)."""
    # pool allocation ordered on the compute stream: freed (stream-ordered) after the reduce has run
    ws = memory.DeviceBuffer.alloc(rdev, 4 * splits * M * N, owner="split-K workspace")
    _kernel(rdev, f"gemm_{layout}_f32_32x32_splitk").launch(
        ((N + 31) // 32, (M + 31) // 32, splits), 64, [ws.ptr, a, b, M, N, K, lda, ldb, kchunk])
    n = M * N
    _kernel(rdev, "gemm_splitk_reduce_f32").launch(
        min((n + 255) // 256, 65535), 256,
        [y, ws.ptr, bias, M, N, ldy, splits, float(alpha), float(beta), act])


def _gemm_raw(rdev, layout, y, a, b, M, N, K, lda, ldb, ldy, alpha=1.0, beta=0.0, bias=0, act=0, splits=None,
              kind=None):
    """Y[M,N] = act(alpha·op(A)·op(B) + beta·Y + bias[N]): one launch of gemm_<layout>_f32_<tile>, or the
    split-K pair for skinny outputs with a long K (see _splitk; `splits` forces a count, tests use it).
    kind "bf16"/"f16": Y, A, B and bias are 16-bit, one launch of gemm_<layout>_<kind>_128x128 (sm_80+) or
    gemm_<layout>_f16_sm75 (float16 on sm_75; gemm16_kernel picks)."""
    if M == 0 or N == 0:
        return
    if kind is not None:
        _kernel(rdev, gemm16_kernel(rdev, layout, kind) or f"gemm_{layout}_{kind}_128x128").launch(
            ((N + 127) // 128, (M + 127) // 128), 256, [y, a, b, bias, M, N, K, lda, ldb, ldy, float(alpha),
                                                         float(beta), act])
        return
    if splits is None:
        splits, kchunk = _splitk(M, N, K, rdev.multiprocessors)
    elif splits > 1:
        kchunk = (-(-K // splits) + 15) // 16 * 16
        splits = -(-K // kchunk) if K else 1
    if splits > 1:
        return _gemm_splitk_raw(rdev, layout, y, a, b, M, N, K, lda, ldb, ldy, alpha, beta, bias, act, splits, kchunk)
    tile, threads = _tile(M, N, rdev.multiprocessors)
    name = f"gemm_{layout}_f32_{tile}x{tile}"
    if _tf32_ok(rdev, layout):   # tensor cores: sm_80+, and only when the user allows TF32 (every size)
        name, tile, threads = f"gemm_{layout}_tf32_128x128", 128, 256
    k = _kernel(rdev, name)
    k.launch(((N + tile - 1) // tile, (M + tile - 1) // tile), threads,
             [y, a, b, bias, M, N, K, lda, ldb, ldy, float(alpha), float(beta), act])


def _tf32_ok(rdev, layout):
    """PyTorch's rule: float32 matmuls may use TF32 tensor cores only when
    rawdev.backends.cuda.matmul.allow_tf32 is True (False by default); the kernel needs sm_80 or newer."""
    return bool(_flags.matmul.allow_tf32) and _kernels.runs_on(rdev, f"gemm_{layout}_tf32_128x128")


def _gemm_operand(m, t=False):
    """(pointer, leading dimension, transposed) for reading the logical matrix m [R, C] (t: m's transpose, read
    from m's own sizes and strides, no view made) without a copy: row-major rows (stride (ld, 1)) or a transposed
    view of a row-major matrix (stride (1, ld)); any other layout is copied first."""
    R, C = m._shape
    sr, sc = m._strides
    if t:
        R, C, sr, sc = C, R, sc, sr
    if sc == 1 or C == 1:
        if sr >= C or R == 1:
            return m.data_ptr(), max(sr if R > 1 else C, 1), False
    if sr == 1 or R == 1:
        if sc >= R or C == 1:
            return m.data_ptr(), max(sc if C > 1 else R, 1), True
    m = (_transpose(m) if t else m)._contiguous_copy("gemm operand")
    return m.data_ptr(), max(C, 1), False


def _transpose(m):
    """The transposed view of a 2-D tensor (rawdev.ops.shape.transpose, imported when first needed: shape sits
    beside this module and imports the dispatcher, which imports this module)."""
    from .shape import transpose
    return transpose(m, 0, 1)


_NATIVE_KINDS = {_dt.bfloat16: "bf16", _dt.float16: "f16"}


def _gemm_native(a, b, ta=False, tb=False, bias=None, *args, **kwargs):
    """The 16-bit kernel kind ("bf16"/"f16") when gemm can run on a's and b's own dtype: both (and the bias, if
    any) bfloat16 or both float16, on a device that runs a 16-bit tensor-core kernel of that kind (sm_80+, or
    sm_75 for float16: gemm16_kernel); else None, and rawdev.ops.opmath widens the operands to float32 around
    the float32 kernels as before."""
    kind = _NATIVE_KINDS.get(a.dtype)
    if kind is None or b.dtype is not a.dtype or (bias is not None and bias.dtype is not a.dtype):
        return None
    return kind if gemm16_kernel(_rdev(a), "nt", kind) is not None else None


def gemm(a, b, ta=False, tb=False, bias=None, act=0, alpha=1.0, owner=None):
    """op(a)[M,K]·op(b)[K,N] (·alpha, + bias[N], act 0/1 relu/2 gelu-tanh) on 2-D tensors of any strides: a
    transposed view is read through the tn/nt layouts, not copied. float32, or bfloat16/float16 operands (and
    bias) of one dtype on sm_80+, float16 on sm_75 (tensor cores, float32 accumulation, the result in that dtype:
    _gemm_native)."""
    for t in (a, b, bias):
        if t is not None and not t.dtype.is_floating_point:   # PyTorch has no integer GEMM on cuda either
            raise RuntimeError(f'"addmm_cuda" not implemented for \'{t.dtype._legacy[:-6]}\'')
    kind = _gemm_native(a, b, ta, tb, bias)
    if kind is None:
        _f32("matmul", a, b, bias)
    rdev = _rdev(a)
    # the logical operands op(a) [M, K] and op(b) [K, N], read through a's and b's strides (no transposed views)
    M, K = a._shape[::-1] if ta else a._shape
    N = b._shape[0] if tb else b._shape[1]
    if K == 0 and bias is None and act == 0:
        return full((M, N), 0.0, a.dtype, a.device, owner or "matmul output")
    y = empty((M, N), a.dtype, a.device, owner or "matmul output")
    pa, lda, at = _gemm_operand(a, ta)
    # op(B)[k, n]: "n" reads B row-major [K, N]; "t" reads B^T row-major [N, K]
    pb, ldb, bt = _gemm_operand(b, tb)
    if at and bt:   # no tt kernel: copy the smaller operand
        B = (_transpose(b) if tb else b)._contiguous_copy("gemm operand")
        pb, ldb, bt = B.data_ptr(), max(N, 1), False
    layout = "tn" if at else ("nt" if bt else "nn")
    bias = dense(bias)
    _gemm_raw(rdev, layout, y.data_ptr(), pa, pb, M, N, K, lda, ldb, N, alpha, 0.0,
              bias.data_ptr() if bias is not None else 0, act, kind=kind)
    return y


# opmath runs gemm on its operands' own 16-bit dtype (no float32 temporaries) when this says it can
gemm.native_low = _gemm_native  # type: ignore[attr-defined]


def matmul(a, b):
    raise NotImplementedError("batched matmul (both operands batched) is cpu-only")


# ------------------------------------------------------------------ broadcasting
def expand(x, shape):
    """x broadcast to shape, contiguous (the stride-0 view copied once)."""
    return _bcast(x, shape)


# ------------------------------------------------------------------ elementwise (elementwise.ptx)
# The elementwise kernels come in three storages (cuda_launch._storage). Operands all of one 16-bit dtype run
# the 16-bit kernel on their own storage; the functions below say so to rawdev.ops.opmath with `native_low`.
def _native_unary(x, *args, **kwargs):
    return _low(x) is not None


def _native_binary(a, b, *args, dt=None, **kwargs):
    """a and b of one 16-bit dtype, broadcast together, and no other result dtype asked for."""
    low = isinstance(b, Tensor) and _low(a, b)
    if not low:
        return False
    if args and isinstance(args[-1], _dt.dtype):   # dt passed positionally
        dt = args[-1]
    return dt is None or dt is low


def _epilogue_(y, beta=1.0, bias=None, act=0, rows=None, cols=None):
    """In place: Y = act(beta·Y + bias[col]) over y viewed as [rows, cols] (GEMM with K = 0)."""
    n = y.numel()
    if n == 0:
        return y
    _gemm_raw(_rdev(y), "nn", y.data_ptr(), y.data_ptr(), y.data_ptr(), rows, cols, 0, 1, cols, cols, 1.0,
              beta, bias.data_ptr() if bias is not None else 0, act)
    y._bump_version()
    return y


def _i64(*ts):
    return all(t.dtype is _dt.int64 for t in ts)


def _int_scalar(s):
    return isinstance(s, (int, np.integer)) and not isinstance(s, bool) or (isinstance(s, float) and s.is_integer())


def scale_(x, s):
    if _i64(x) and _int_scalar(s):
        copy_into(x, scale(x, s))
        return x
    sfx = _storage("mul_", x)
    if not x.is_contiguous():
        return copy_into(x, scale(dense(x), s))
    _ew(_rdev(x), "scale" + sfx, [x.data_ptr(), x.data_ptr(), float(s), x.numel()], x.numel(), "mul_")
    x._bump_version()
    return x


def scale(x, s):
    if _i64(x) and _int_scalar(s):     # int64 arithmetic (binary_math.ptx)
        from .cuda_math import scalar_i64
        return scalar_i64(dense(x), int(s), "mul")
    sfx = _storage("mul", x)
    y = empty(x.shape, x.dtype, x.device, "mul output")
    _ew(_rdev(x), "scale" + sfx, [y.data_ptr(), x.data_ptr(), float(s), x.numel()], x.numel(), "mul")
    return y


def div_scalar(x, s):
    # x / 0 is ±inf (and 0 / 0 NaN), as on the cpu: the mean of an empty tensor is NaN, not an exception
    return scale(x, 1.0 / s if s else math.copysign(math.inf, s))


def rdiv_scalar(x, s):
    """s / x: the reciprocal kernel, then a scale (s = 1 skips it)."""
    y = elementwise("reciprocal_fwd", x.dtype, (x,), (), "rdiv")
    return y if s == 1 else scale_(y, s)


def add_scalar(x, s):
    if _i64(x) and _int_scalar(s):
        from .cuda_math import scalar_i64
        return scalar_i64(dense(x), int(s), "add")
    sfx = _storage("add", x)
    if sfx:   # s stays a float32 scalar (a 16-bit constant tensor would round it first)
        y = empty(x.shape, x.dtype, x.device, "add output")
        _ew(_rdev(x), "add_scalar" + sfx, [y.data_ptr(), x.data_ptr(), float(s), x.numel()], x.numel(), "add")
        return y
    y = full(x.shape, s, x.dtype, x.device, "add output")
    _ew(_rdev(x), "add", [y.data_ptr(), y.data_ptr(), x.data_ptr(), x.numel()], x.numel(), "add")
    return y


def rsub_scalar(x, s):
    if _i64(x) and _int_scalar(s):
        from .cuda_math import scalar_i64
        return scalar_i64(dense(x), int(s), "rsub")
    _f32("rsub", x)
    y = full(x.shape, s, x.dtype, x.device, "rsub output")
    _ew(_rdev(x), "axpy", [y.data_ptr(), x.data_ptr(), -1.0, x.numel()], x.numel(), "rsub")
    return y


def neg(x):
    return scale(x, -1.0)


def _as_dt(dt, *ts):
    """Operands of mixed dtypes converted to the result dtype dt (type promotion done by the caller)."""
    if dt is None or dt not in (_dt.float32, _dt.int64):
        return ts
    return tuple(t if t.dtype is dt else cast(t, dt) for t in ts)


def add(a, b, alpha=1.0, dt=None):
    da, db = a._dtype, b._dtype
    if da is _F32 and db is _F32 and (dt is None or dt is _F32):   # float32 + float32, the common case
        sfx = ""
    else:
        a, b = _as_dt(dt, a, b)
        if _i64(a, b) and _int_scalar(alpha):
            from .cuda_math import binary_i64
            return binary_i64(a, b, "add", int(alpha))
        sfx = _storage("add", a, b)
    sa = a._shape
    shape = sa if sa == b._shape else _bshape(a, b)
    rdev = _rdev(a)
    if b.ndim == 1 and not sfx and len(shape) >= 2 and tuple(a.shape) == shape and b.numel() == shape[-1] \
            and alpha == 1:
        # [.., N] + [N] in float32: the GEMM epilogue's bias on a copy of a
        y = clone(a, "add output")
        return _epilogue_(y, bias=b, rows=a.numel() // b.numel(), cols=b.numel())
    a = dense(a) if a._shape == shape else _bcast(a, shape)
    b = dense(b) if b._shape == shape else _bcast(b, shape)
    n = math.prod(shape)
    y = empty(shape, a._dtype, a._device, "add output")
    if alpha == 1:
        _ew(rdev, "add" + sfx, [y.data_ptr(), a.data_ptr(), b.data_ptr(), n], n, "add")
    else:
        if n:
            memory.copy_dtod(y.data_ptr(), a.data_ptr(), a.dtype.itemsize * n, stream=rdev.compute_stream)
        _ew(rdev, "axpy" + sfx, [y.data_ptr(), b.data_ptr(), float(alpha), n], n, "add")
    return y


def add_(a, b, alpha=1.0):
    if _i64(a, b) and _int_scalar(alpha):
        copy_into(a, add(dense(a), b, alpha))
        return a
    sfx = _storage("add_", a, b)
    if not a.is_contiguous():
        return copy_into(a, add(dense(a), b, alpha))
    b = _bcast(b, a.shape)
    _ew(_rdev(a), "axpy" + sfx, [a.data_ptr(), b.data_ptr(), float(alpha), a.numel()], a.numel(), "add_")
    a._bump_version()
    return a


def _binary(kernel, a, b):
    """z = a (kernel) b elementwise on float32, both operands broadcast to the result's shape first."""
    sfx = _storage(kernel, a, b)
    shape = _bshape(a, b)
    a, b = _bcast(a, shape), _bcast(b, shape)
    y = empty(shape, a.dtype, a.device, f"{kernel} output")
    _ew(_rdev(a), kernel + sfx, [y.data_ptr(), a.data_ptr(), b.data_ptr(), y.numel()], y.numel(), kernel)
    return y


def mul(a, b, dt=None):
    a, b = _as_dt(dt, a, b)
    if _i64(a, b):
        from .cuda_math import binary_i64
        return binary_i64(a, b, "mul")
    return _binary("mul", a, b)


def _need(op, what):
    raise NotImplementedError(
        f"the cuda path of {op} needs {what}, which is not shipped in this build (`rawdev kernels` lists "
        f"what is); rawdev never computes cuda tensors on the host: run it on the cpu")


def div(a, b, dt=None):
    # int / int is a float division: the operands become dt first (PyTorch's true division)
    a, b = _as_dt(dt, a, b)
    return _binary("div", a, b)


def pow_scalar(x, e):
    sfx = _storage("pow", x)
    y = empty(x.shape, x.dtype, x.device, "pow output")
    _ew(_rdev(x), "pow_scalar" + sfx, [y.data_ptr(), x.data_ptr(), float(e), x.numel()], x.numel(), "pow")
    return y


_INT_ELEMENTWISE = {"abs_fwd": ("abs",), "sign_fwd": ("sign",), "relu_fwd": ("clamp", 0),
                    "relu6_fwd": ("clamp", 0, 6), "neg_fwd": ("neg",)}


def elementwise(kernel, dt, operands, params=(), op=None):
    """One launch of an elementwise kernel kernel(out, *operands, *params, n) over operands of one shape
    (made contiguous first): out is a new tensor of dtype dt. On int64 the integer ops among them (abs, sign,
    relu, relu6, neg) run the int64 kernel."""
    if kernel in _INT_ELEMENTWISE and len(operands) == 1 and operands[0].dtype is _dt.int64 and dt is _dt.int64:
        from .cuda_int import int_unary
        return int_unary(operands[0], *_INT_ELEMENTWISE[kernel])
    low = _low(*operands)
    if low is not None and dt is low and has_kernel(kernel + _SUFFIX[low]):
        kernel += _SUFFIX[low]
    else:
        _f32(op or kernel, *operands)
    operands = [dense(t) for t in operands]
    x = operands[0]
    y = empty(x.shape, dt, x.device, f"{op or kernel} output")
    n = x.numel()
    _ew(_rdev(x), kernel, [y.data_ptr()] + [t.data_ptr() for t in operands] + [float(p) for p in params] + [n], n,
        op)
    return y


# ------------------------------------------------------------------ comparisons and casts (elementwise.ptx)
_CMP = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5, "same": 6}   # the kernels' op codes


def _native_elementwise(kernel, dt, operands, *args, **kwargs):
    low = _low(*operands)
    return low is not None and dt is low and has_kernel(kernel + _SUFFIX[low])


# opmath passes 16-bit operands unchanged to these: their kernels have float16/bfloat16 variants
for _fn in (scale_, scale, div_scalar, add_scalar, neg, pow_scalar):
    _fn.native_low = _native_unary  # type: ignore[attr-defined,union-attr]
# s / x is a reciprocal and a scale: in 16-bit storage that would round twice, so only 1 / x runs natively
rdiv_scalar.native_low = lambda x, s: _low(x) is not None and s == 1  # type: ignore[attr-defined]
for _fn in (add, add_, mul, div):
    _fn.native_low = _native_binary  # type: ignore[attr-defined,union-attr]
elementwise.native_low = _native_elementwise  # type: ignore[attr-defined]


def _cmp_operand(t):
    """Comparisons run on float32 or int64: bool/uint8 widen to float32 exactly; int32 would not."""
    if t.dtype in (_dt.float32, _dt.int64):
        return t
    if t.dtype in (_dt.bool, _dt.uint8):
        return cast(t, _dt.float32)
    raise TypeError(f"comparisons on cuda support float32, int64, bool and uint8 tensors, got {t.dtype}")


def compare(a, b, op):
    """Bool tensor a <op> b; b is a tensor of a's dtype (broadcast as add's operands: float32 only, an int64
    pair must have one shape) or a Python scalar."""
    a = _cmp_operand(a)
    code, rdev = _CMP[op], _rdev(a)
    suffix = "f32" if a.dtype is _dt.float32 else "i64"
    if not isinstance(b, Tensor):
        s = float(b) if suffix == "f32" else int(b)
        y = empty(a.shape, _dt.bool, a.device, f"{op} output")
        _ew(rdev, f"compare_scalar_{suffix}", [y.data_ptr(), a.data_ptr(), s, code, a.numel()], a.numel(), op)
        return y
    b = _cmp_operand(b)
    shape = _bshape(a, b)
    a, b = _bcast(a, shape), _bcast(b, shape)
    y = empty(shape, _dt.bool, a.device, f"{op} output")
    _ew(rdev, f"compare_{suffix}", [y.data_ptr(), a.data_ptr(), b.data_ptr(), code, y.numel()], y.numel(), op)
    return y


def _last_dim(x, dim):
    """x with dim moved last, contiguous, and the permutation that moves it back (None when already last)."""
    if dim == x.ndim - 1:
        return dense(x), None
    from .shape import permute
    order = tuple(d for d in range(x.ndim) if d != dim) + (dim,)
    back = [0] * x.ndim
    for i, d in enumerate(order):
        back[d] = i
    return dense(permute(x, order)), tuple(back)


def _restore(y, back):
    from .shape import permute
    return y if back is None else permute(y, back)


def softmax(x, dim, log=False):
    """Row-wise (log-)softmax kernels; another dim is moved last first (one strided copy), and the
    result is returned as a view in the input's axis order."""
    op = "log_softmax" if log else "softmax"
    sfx = _storage(op, x)
    xt, back = _last_dim(x, dim)
    C = xt.shape[-1] if xt.ndim else 1
    rows = xt.numel() // C if C else 0
    y = empty(xt.shape, x.dtype, x.device, f"{op} output")
    _rows(_rdev(x), f"{op}_fwd{sfx}", [y.data_ptr(), xt.data_ptr(), rows, C], rows, op)
    return _restore(y, back)


def softmax_bwd(gy, y, dim, log=False):
    op = "log_softmax" if log else "softmax"
    sfx = _storage(op + " backward", gy, y)
    gyt, back = _last_dim(gy, dim)
    yt, _ = _last_dim(y, dim)
    C = yt.shape[-1] if yt.ndim else 1
    rows = yt.numel() // C if C else 0
    gx = empty(yt.shape, gy.dtype, gy.device, f"{op} grad")
    _rows(_rdev(gy), f"{op}_bwd{sfx}", [gx.data_ptr(), gyt.data_ptr(), yt.data_ptr(), rows, C], rows, op + " backward")
    return _restore(gx, back)


softmax.native_low = _native_unary  # type: ignore[attr-defined]
softmax_bwd.native_low = lambda gy, y, *args, **kwargs: _low(gy, y) is not None  # type: ignore[attr-defined]

_REDUCTION = {"none": 0, "sum": 1, "mean": 2}


def cross_entropy(logits, target, weight, ignore_index, reduction, smoothing):
    """Fused log-softmax + NLL: cross_entropy_ws_{fwd,reduce}, with PyTorch's semantics (mean divides by
    the sum of the weights of the non-ignored targets; the smoothing term is weighted per class).
    Returns (loss, saved) with saved = (logits, ls, count) for the backward: ls is log-sum-exp less the
    row max (the backward recomputes the max, which keeps gradients exact for near-tied logits of
    +-1e4), count the non-ignored rows or their targets' weight sum. The plain cross_entropy_* kernels
    save the full logsumexp, whose float32 ulp at 1e4 costs ~1e-4 relative gradient error there, so the
    ops use the ws kernels for every case (weight 0 = none, smoothing 0)."""
    _f32("cross_entropy", logits, weight)
    if target.dtype is not _dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype}")
    rdev, dev = _rdev(logits), logits.device
    rows, C = logits.shape
    if weight is not None and (weight.ndim != 1 or weight.numel() != C):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    wptr = weight.data_ptr() if weight is not None else 0
    per_row = empty((rows,), _dt.float32, dev, "cross_entropy per-row loss")
    ls = empty((rows,), _dt.float32, dev, "cross_entropy log-sum-exp")
    _rows(rdev, "cross_entropy_ws_fwd", [per_row.data_ptr(), ls.data_ptr(), logits.data_ptr(), target.data_ptr(),
                                         wptr, rows, C, int(ignore_index), float(smoothing)], rows, "cross_entropy")
    red = _REDUCTION[reduction]
    if red == 0:
        return per_row, (logits, ls, ls)
    out = empty((), _dt.float32, dev, "loss")
    count = empty((1,), _dt.float32, dev, "cross_entropy count")
    _kernel(rdev, "cross_entropy_ws_reduce", "cross_entropy").launch(
        1, 1024, [out.data_ptr(), count.data_ptr(), per_row.data_ptr(), target.data_ptr(), wptr, rows, C,
                  int(ignore_index), red])
    return out, (logits, ls, count)


def cross_entropy_bwd(gy, saved, target, weight, ignore_index, reduction, smoothing):
    logits, ls, count = saved
    rows, C = logits.shape
    gx = empty(logits.shape, gy.dtype, gy.device, "cross_entropy grad")
    _rows(_rdev(gy), "cross_entropy_ws_bwd",
          [gx.data_ptr(), logits.data_ptr(), ls.data_ptr(), target.data_ptr(),
           weight.data_ptr() if weight is not None else 0, gy.data_ptr(), count.data_ptr(), rows, C,
           int(ignore_index), float(smoothing), _REDUCTION[reduction]], rows, "cross_entropy backward")
    return gx


# ------------------------------------------------------------------ gradients in arenas
_grad_arenas: dict = {}   # id(param arena DeviceBuffer) -> (weakref to it, weakref to grad arena, {offset: weakref})


def new_grad(var, g):
    """A private copy of g to become var.grad. For a parameter inside a module's arena, the grad goes into a
    companion grad arena at the same offset (so an optimizer can update the whole arena in one launch)."""
    import weakref
    buf = var._buf
    parts = getattr(getattr(buf, "block", None), "parts", None)
    if not parts:
        return clone(g, owner_of(var, "grad"), scoped=False)
    key = id(buf)
    ent = _grad_arenas.get(key)
    garena = None
    if ent is not None and ent[0]() is buf:
        garena = ent[1]()
    if garena is None:
        rdev = _rdev(var)
        garena = memory.DeviceBuffer.alloc(rdev, buf.nbytes, owner=f"grads of {buf.owner or 'arena'}")
        # zeroed once: the fused optimizer step reads the whole span, alignment gaps between grads included
        # (their values never reach a parameter, but a read of never-written memory is initcheck's finding)
        memory.memset_d8(garena.ptr, 0, buf.nbytes, rdev.compute_stream)
        ent = _grad_arenas[key] = (weakref.ref(buf), weakref.ref(garena), {})
    slots = ent[2]
    prev = slots.get(var._offset)
    if prev is not None and prev() is not None:     # the old grad there is still referenced: don't overwrite it
        return clone(g, owner_of(var, "grad"), scoped=False)
    out = Tensor._make_cuda(garena, var._offset, var.shape, var.dtype, var.device)
    if not any(off == var._offset for off, _, _ in garena.block.parts):
        garena.tag(var._offset, var.nbytes, owner_of(var, "grad"))
    copy_into(out, g)
    slots[var._offset] = weakref.ref(out)
    return out


# ------------------------------------------------------------------ misc
def cross_device_note():
    return "cuda ops take float32 tensors on one device"

from .reduce.cuda import *  # noqa: F401,F403,E402  (sum, mean, max/min along a dim)
from .select.cuda import *  # noqa: F401,F403,E402  (where, masked_fill, clamp, maximum/minimum)
from .normalization.cuda import *  # noqa: F401,F403,E402  (layer_norm, rms_norm, group_norm, batch_norm)
from .attention.cuda import *  # noqa: F401,F403,E402  (scaled_dot_product_attention)
from .rnn.cuda import *  # noqa: F401,F403,E402  (the recurrent cells)
from .optim_steps.cuda import *  # noqa: F401,F403,E402  (the optimizers' steps and state)
from .optim_steps.cuda import _group_span, one_launch  # noqa: F401,E402  (cuda only: the optimizer and clip_grad ask)
from .cuda_bmm import *  # noqa: F401,F403,E402  (batched matmul)
from .conv.cuda import *  # noqa: F401,F403,E402  (convolution, pooling)
from .gather_scatter.cuda import *  # noqa: F401,F403,E402  (gather, scatter)
from .resample.cuda import *  # noqa: F401,F403,E402  (interpolate)
from .embedding_bag.cuda import *  # noqa: F401,F403,E402  (embedding_bag)
from .cuda_math import *  # noqa: F401,F403,E402  (binary math, logical, classify)
from .cuda_scan_sort import *  # noqa: F401,F403,E402  (row scans and sorts)
from .cuda_int import *  # noqa: F401,F403,E402  (integer casts, int64 unary math and reductions)
from .cuda_sortlong import *  # noqa: F401,F403,E402  (sorting rows of any length)
from .dropout.cuda import *  # noqa: F401,F403,E402  (dropout and its masks)
from .index_along_dim.cuda import *  # noqa: F401,F403,E402  (index_select, index_copy_, index_add_)
