"""The cuda path of every op: the shipped PTX kernels, launched on the device's compute stream.

Same signatures as rawdev/ops/cpu.py. float32 only (the kernels are f32). Outputs are fresh pool
allocations tagged for the memory tool ("linear output", "relu output", ...).

What runs where:
- GEMMs (linear forward/backward, matmul): gemm_{nt,nn,tn}_f32_{32x32,64x64,128x128}, the tile chosen by size.
- Sums over dimensions (bias gradients, sum/mean, broadcast gradients) are GEMMs with a ones vector:
  ones[M]ᵀ·X sums the rows, X·ones[N] the columns; mean is the same with alpha = 1/n.
- Broadcasts (expand) are rank-1 GEMMs: ones[M,1]·g[1,N].
- Scaling and scalar bias are the GEMM epilogue with K = 0: Y = act(beta·Y + bias[n]) on a copy.
- Elementwise, softmax, loss, optimizer and dropout math uses the elementwise/reduce/loss/optim kernel
  families; `_kernel()` names the missing one when a family is not shipped yet.
"""
import math

import numpy as np

from .. import dtypes as _dt
from ..runtime import kernels as _kernels
from ..runtime import memory
from ..tensor import cuda_io
from ..tensor.core import Tensor
from ..tensor.size import Size

NAME = "cuda"


# ------------------------------------------------------------------ plumbing
def _rdev(t_or_dev):
    dev = t_or_dev.device if isinstance(t_or_dev, Tensor) else t_or_dev
    return cuda_io.runtime_device(dev)


def _kernel(rdev, name, op=None):
    try:
        return _kernels.get_kernel(rdev, name)
    except KeyError:
        raise NotImplementedError(
            f"the cuda path of {op or name} needs the PTX kernel {name!r}, which is not shipped in this build "
            f"(`rawdev kernels` lists what is). rawdev never computes cuda tensors on the host; run this op on "
            f"the cpu instead.") from None


def has_kernel(name):
    return name in _kernels.manifest()


def _f32(op, *ts):
    for t in ts:
        if t is not None and t.dtype is not _dt.float32:
            raise TypeError(f"{op} on cuda supports float32 tensors (the shipped kernels are f32), got {t.dtype}")


_poison = False


def set_poison(flag):
    """Tests: fill every new op output with NaN before the kernel writes it (unwritten elements show)."""
    global _poison
    _poison = bool(flag)


def empty(shape, dt, dev, owner=None, scoped=True):
    from .dispatch import current_owner
    owner = owner or "output"
    t = cuda_io.empty(Size(tuple(shape)), dt, dev, current_owner(owner) if scoped else owner)
    if _poison and t.nbytes and dt.itemsize == 4:
        memory.memset_d32(t.data_ptr(), 0x7FC00000, t.numel(), _rdev(dev).compute_stream)
    return t


def full(shape, value, dt, dev, owner=None, scoped=True):
    """A constant tensor: memset for zeros and 32-bit patterns, else an upload from the host."""
    shape = Size(tuple(shape))
    t = empty(shape, dt, dev, owner, scoped)
    if t.nbytes:
        rdev = _rdev(dev)
        if dt.itemsize == 4:
            word = np.array([value], dt.storage).view(np.uint32)[0]
            memory.memset_d32(t.data_ptr(), int(word), t.numel(), rdev.compute_stream)
        elif value == 0:
            memory.memset_d8(t.data_ptr(), 0, t.nbytes, rdev.compute_stream)
        else:
            src = np.full(tuple(shape), value, dt.storage)
            memory.copy_htod(t.data_ptr(), src, src.nbytes, stream=rdev.compute_stream)
            memory.keep_alive(rdev.compute_stream, src)
    return t


def clone(x, owner=None, scoped=True):
    out = empty(x.shape, x.dtype, x.device, owner or "clone", scoped)
    if x.nbytes:
        memory.copy_dtod(out.data_ptr(), x.data_ptr(), x.nbytes, stream=_rdev(x).compute_stream)
    return out


def copy_into(dst, src):
    if dst.nbytes:
        memory.copy_dtod(dst.data_ptr(), src.data_ptr(), dst.nbytes, stream=_rdev(dst).compute_stream)
    dst._bump_version()


_ones_cache = {}


def _ones(rdev, dev, n):
    """A device vector of at least n float32 ones (one per device, grown on demand)."""
    key = id(rdev)
    hit = _ones_cache.get(key)
    if hit is None or hit[0] is not rdev or hit[1].numel() < n:
        cap = max(n, 1024, (hit[1].numel() * 2) if hit and hit[0] is rdev else 0)
        _ones_cache[key] = hit = (rdev, full((cap,), 1.0, _dt.float32, dev, owner="ones (for sums)",
                                                 scoped=False))
    return hit[1]


# ------------------------------------------------------------------ GEMM
_GEMM_TILES = ((128, 256), (64, 256), (32, 64))   # (tile, threads per block)


def _tile(M, N):
    if M >= 256 and N >= 256 and M * N >= 512 * 512:
        return 128, 256
    if M >= 64 and N >= 64 and M * N >= 128 * 128:
        return 64, 256
    return 32, 64


def _gemm_raw(rdev, layout, y, a, b, M, N, K, lda, ldb, ldy, alpha=1.0, beta=0.0, bias=0, act=0):
    """One launch of gemm_<layout>_f32_<tile>: Y[M,N] = act(alpha·op(A)·op(B) + beta·Y + bias[N])."""
    if M == 0 or N == 0:
        return
    tile, threads = _tile(M, N)
    k = _kernel(rdev, f"gemm_{layout}_f32_{tile}x{tile}")
    k.launch(((N + tile - 1) // tile, (M + tile - 1) // tile), threads,
             [y, a, b, bias, M, N, K, lda, ldb, ldy, float(alpha), float(beta), act])


def gemm(a, b, ta=False, tb=False, bias=None, act=0, alpha=1.0, owner=None):
    """op(a)[M,K]·op(b)[K,N] (·alpha, + bias[N], act 0/1 relu/2 gelu-tanh) on 2-D float32 tensors."""
    _f32("matmul", a, b, bias)
    rdev = _rdev(a)
    if ta and tb:
        raise NotImplementedError("gemm with both operands transposed has no kernel (no tt layout)")
    M, K = (a.shape[1], a.shape[0]) if ta else (a.shape[0], a.shape[1])
    N = b.shape[0] if tb else b.shape[1]
    y = empty((M, N), a.dtype, a.device, owner or "matmul output")
    if K == 0 and bias is None and act == 0:
        return full((M, N), 0.0, a.dtype, a.device, owner or "matmul output")
    layout = "tn" if ta else ("nt" if tb else "nn")
    lda = a.shape[1]
    ldb = b.shape[1]
    _gemm_raw(rdev, layout, y.data_ptr(), a.data_ptr(), b.data_ptr(), M, N, K, lda, ldb, N, alpha, 0.0,
              bias.data_ptr() if bias is not None else 0, act)
    return y


def matmul(a, b):
    raise NotImplementedError("batched matmul (both operands batched) is cpu-only")


# ------------------------------------------------------------------ reductions as GEMMs with ones
def _rows_sum(rdev, x_ptr, rows, cols, dev, alpha=1.0, owner=None):
    """[rows, cols] -> [cols]: ones[rows]ᵀ · X (tn GEMM, M = 1)."""
    out = empty((cols,), _dt.float32, dev, owner or "sum output")
    ones = _ones(rdev, dev, rows)
    _gemm_raw(rdev, "tn", out.data_ptr(), ones.data_ptr(), x_ptr, 1, cols, rows, 1, cols, cols, alpha)
    return out


def _cols_sum(rdev, x_ptr, rows, cols, dev, alpha=1.0, owner=None):
    """[rows, cols] -> [rows]: X · ones[cols] (nn GEMM, N = 1)."""
    out = empty((rows,), _dt.float32, dev, owner or "sum output")
    ones = _ones(rdev, dev, cols)
    _gemm_raw(rdev, "nn", out.data_ptr(), x_ptr, ones.data_ptr(), rows, 1, cols, cols, 1, 1, alpha)
    return out


def _split(red):
    """A divisor a of red with 8 <= a <= 32 and red/a >= 8 (for a two-stage sum), else None."""
    if red < 64:
        return None
    for a in (32, 16, 24, 8, 31, 29, 23, 19, 17, 13, 11):
        if red % a == 0 and red // a >= 8:
            return a
    return None


def _sum_block(x, pre, red, post, alpha, owner):
    """x viewed as [pre, red, post] -> [pre, post] summed over red (times alpha)."""
    rdev, dev = _rdev(x), x.device
    if red == 0:
        return full((pre * post,), 0.0, _dt.float32, dev, owner)
    if pre == 1:
        if post == 1:   # full sum: two stages keep the GEMM parallel ([r, c] -> [c] -> 1)
            c = max(1, int(math.sqrt(red)))
            while red % c:
                c -= 1
            part = _rows_sum(rdev, x.data_ptr(), red // c, c, dev, owner="partial sums")
            return _cols_sum(rdev, part.data_ptr(), 1, c, dev, alpha, owner)
        a = _split(red)
        if a:   # two stages keep the K loop short: [a, (red/a)*post] -> [(red/a), post] -> [post]
            part = _rows_sum(rdev, x.data_ptr(), a, (red // a) * post, dev, owner="partial sums")
            return _rows_sum(rdev, part.data_ptr(), red // a, post, dev, alpha, owner)
        return _rows_sum(rdev, x.data_ptr(), red, post, dev, alpha, owner)
    if post == 1:
        return _cols_sum(rdev, x.data_ptr(), pre, red, dev, alpha, owner)
    out = empty((pre * post,), _dt.float32, dev, owner or "sum output")
    ones = _ones(rdev, dev, red)
    for i in range(pre):   # one GEMM per leading index (rare: middle-axis sums)
        _gemm_raw(rdev, "tn", out.data_ptr() + 4 * i * post, ones.data_ptr(), x.data_ptr() + 4 * i * red * post,
                  1, post, red, 1, post, post, alpha)
    return out


def sum_dims(x, dims, keepdim=False, dt=None, alpha=1.0, owner=None):
    _f32("sum", x)
    if dt not in (None, x.dtype):
        raise TypeError(f"sum(dtype={dt}) on cuda: only float32")
    shape = list(x.shape)
    dims = sorted(dims)
    cur, cur_shape = x, list(shape)
    # reduce runs of adjacent dims in one GEMM each, from the last run to the first
    runs = []
    for d in dims:
        if runs and runs[-1][1] == d - 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    for i, (lo, hi) in enumerate(reversed(runs)):
        pre = int(np.prod(cur_shape[:lo], dtype=np.int64))
        red = int(np.prod(cur_shape[lo:hi + 1], dtype=np.int64))
        post = int(np.prod(cur_shape[hi + 1:], dtype=np.int64))
        last = i == len(runs) - 1
        cur = _sum_block(cur, pre, red, post, alpha if last else 1.0, owner if last else "partial sums")
        cur_shape = cur_shape[:lo] + [1] * (hi + 1 - lo) + cur_shape[hi + 1:]
    out_shape = cur_shape if keepdim else [s for j, s in enumerate(shape) if j not in dims]
    return Tensor._make_cuda(cur._buf, cur._offset, out_shape, x.dtype, x.device)


def sum_to(g, shape):
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    r = sum_dims(g, dims, keepdim=True, owner="broadcast grad") if dims else g
    return Tensor._make_cuda(r._buf, r._offset, shape, g.dtype, g.device)


def expand(x, shape):
    """Broadcast x to shape as rank-1 GEMMs: out[pre, post] = ones[pre, 1] · x[1, post] per broadcast run."""
    _f32("expand", x)
    shape = tuple(shape)
    xs = (1,) * (len(shape) - x.ndim) + tuple(x.shape)
    if xs == shape:
        return Tensor._make_cuda(x._buf, x._offset, shape, x.dtype, x.device)
    rdev, dev = _rdev(x), x.device
    cur, cur_shape = x, list(xs)
    # broadcast one run of size-1 dims at a time, innermost first: [pre, 1, post] -> [pre, n, post]
    for d in range(len(shape) - 1, -1, -1):
        if cur_shape[d] == shape[d]:
            continue
        lo = d
        while lo - 1 >= 0 and cur_shape[lo - 1] != shape[lo - 1]:
            lo -= 1
        n = int(np.prod(shape[lo:d + 1], dtype=np.int64))
        pre = int(np.prod(cur_shape[:lo], dtype=np.int64))
        post = int(np.prod(cur_shape[d + 1:], dtype=np.int64))
        out = empty((pre, n, post), x.dtype, dev, "expand output")
        ones = _ones(rdev, dev, n)
        for i in range(pre):
            _gemm_raw(rdev, "nn", out.data_ptr() + 4 * i * n * post, ones.data_ptr(), cur.data_ptr() + 4 * i * post,
                      n, post, 1, 1, post, post)
        cur = out
        cur_shape = cur_shape[:lo] + list(shape[lo:d + 1]) + cur_shape[d + 1:]
        if lo != d:
            break
    if tuple(cur_shape) != shape:
        return expand(Tensor._make_cuda(cur._buf, cur._offset, cur_shape, x.dtype, dev), shape)
    return Tensor._make_cuda(cur._buf, cur._offset, shape, x.dtype, dev)


# ------------------------------------------------------------------ epilogue tricks (K = 0 GEMMs)
def _as_matrix(n):
    """A [rows, cols] factorization of n for 2-D epilogue launches (cols a divisor of n, at most 1024)."""
    for c in (1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1):
        if n % c == 0:
            return n // c, c
    return n, 1


def _epilogue_(y, beta=1.0, bias=None, act=0, rows=None, cols=None):
    """In place: Y = act(beta·Y + bias[col]) over y viewed as [rows, cols] (GEMM with K = 0)."""
    n = y.numel()
    if n == 0:
        return y
    if rows is None:
        rows, cols = _as_matrix(n)
    _gemm_raw(_rdev(y), "nn", y.data_ptr(), y.data_ptr(), y.data_ptr(), rows, cols, 0, 1, cols, cols, 1.0,
              beta, bias.data_ptr() if bias is not None else 0, act)
    y._bump_version()
    return y


def scale_(x, s):
    _f32("mul_", x)
    return _epilogue_(x, beta=float(s))


def scale(x, s):
    _f32("mul", x)
    return _epilogue_(clone(x, "mul output"), beta=float(s))


def div_scalar(x, s):
    return scale(x, 1.0 / s)


def add_scalar(x, s):
    _f32("add", x)
    y = clone(x, "add output")
    rows, cols = _as_matrix(y.numel())
    return _epilogue_(y, bias=full((cols,), s, _dt.float32, x.device, "scalar"), rows=rows, cols=cols)


def rsub_scalar(x, s):
    _f32("rsub", x)
    y = clone(x, "rsub output")
    rows, cols = _as_matrix(y.numel())
    return _epilogue_(y, beta=-1.0, bias=full((cols,), s, _dt.float32, x.device, "scalar"), rows=rows, cols=cols)


def neg(x):
    return scale(x, -1.0)


def _axpy_(y, x, alpha):
    """In place y += alpha·x, same shapes: Y[1,n] = alpha·ones[1,1]·X[1,n] + Y (a GEMM with M = K = 1)."""
    rdev = _rdev(y)
    n = y.numel()
    if n:
        ones = _ones(rdev, y.device, 1)
        _gemm_raw(rdev, "nn", y.data_ptr(), ones.data_ptr(), x.data_ptr(), 1, n, 1, 1, n, n, float(alpha), 1.0)
    y._bump_version()
    return y


def _broadcast_operand(b, shape):
    return b if tuple(b.shape) == tuple(shape) else expand(b, shape)


def add(a, b, alpha=1.0, dt=None):
    _f32("add", a, b)
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    if tuple(a.shape) == shape and b.ndim == 1 and len(shape) >= 2 and b.numel() == shape[-1]:
        # [.., N] + [N]: the GEMM epilogue's bias (scaled copy of b when alpha != 1)
        y = clone(a, "add output")
        bias = b if alpha == 1 else scale(b, alpha)
        return _epilogue_(y, bias=bias, rows=a.numel() // b.numel(), cols=b.numel())
    y = clone(_broadcast_operand(a, shape), "add output")
    return _axpy_(y, _broadcast_operand(b, shape), alpha)


def add_(a, b, alpha=1.0):
    _f32("add_", a, b)
    return _axpy_(a, _broadcast_operand(b, a.shape), alpha)


def transpose2d(x):
    _f32("t", x)
    rows, cols = x.shape
    out = empty((cols, rows), x.dtype, x.device, "transpose output")
    if x.numel():
        _kernel(_rdev(x), "tiled_transpose", "t()").launch(((cols + 31) // 32, (rows + 31) // 32), (32, 8),
                                                            [out.data_ptr(), x.data_ptr(), rows, cols])
    return out


# ------------------------------------------------------------------ elementwise / softmax / loss (kernel families)
def _need(op, family):
    raise NotImplementedError(
        f"the cuda path of {op} needs the {family} kernel family, which is not shipped in this build yet "
        f"(`rawdev kernels` lists what is); rawdev never computes cuda tensors on the host: run it on the cpu")


def mul(a, b, dt=None):
    _need("mul", "elementwise")


def div(a, b, dt=None):
    _need("div", "elementwise")


def pow_scalar(x, e):
    _need("pow", "elementwise")


def unary(op, x, p=None):
    if op == "relu":
        _f32("relu", x)
        return _epilogue_(clone(x, "relu output"), act=1)
    if op == "gelu_tanh":
        _f32("gelu", x)
        return _epilogue_(clone(x, "gelu output"), act=2)
    _need(op, "elementwise")


def unary_bwd(op, gy, x, y, p=None):
    _need(op + " backward", "elementwise")


def softmax(x, dim, log=False):
    _need("log_softmax" if log else "softmax", "reduce/loss")


def softmax_bwd(gy, y, dim, log=False):
    _need("softmax backward", "reduce/loss")


def cross_entropy(logits, target, weight, ignore_index, reduction, smoothing):
    _need("cross_entropy", "loss")


def cross_entropy_bwd(gy, logp, target, weight, ignore_index, reduction, smoothing):
    _need("cross_entropy backward", "loss")


def dropout_mask(shape, p, dt, dev, generator):
    """The keep-mask (scaled by 1/(1-p)) is drawn on the host from rawdev's generator, as on the cpu path,
    and uploaded: the same seed gives the same mask on every device."""
    _f32("dropout", Tensor._make_cpu(np.empty(0, dt.storage), dt))
    keep = generator.np.random(tuple(shape)) >= p
    arr = (keep.astype(np.float32) / np.float32(1 - p)).astype(np.float32)
    return cuda_io.upload(arr, dt, dev, owner="dropout mask")


# ------------------------------------------------------------------ gradients in arenas
_grad_arenas = {}   # id(param arena DeviceBuffer) -> (weakref to it, weakref to grad arena, {offset: weakref})


def new_grad(var, g):
    """A private copy of g to become var.grad. For a parameter inside a module's arena, the grad goes into a
    companion grad arena at the same offset (so an optimizer can update the whole arena in one launch)."""
    import weakref
    buf = var._buf
    parts = getattr(getattr(buf, "block", None), "parts", None)
    if not parts:
        return clone(g, _owner_of(var, "grad"), scoped=False)
    key = id(buf)
    ent = _grad_arenas.get(key)
    garena = None
    if ent is not None and ent[0]() is buf:
        garena = ent[1]()
    if garena is None:
        rdev = _rdev(var)
        garena = memory.DeviceBuffer.alloc(rdev, buf.nbytes, owner=f"grads of {buf.owner or 'arena'}")
        ent = _grad_arenas[key] = (weakref.ref(buf), weakref.ref(garena), {})
    slots = ent[2]
    prev = slots.get(var._offset)
    if prev is not None and prev() is not None:     # the old grad there is still referenced: don't overwrite it
        return clone(g, _owner_of(var, "grad"), scoped=False)
    out = Tensor._make_cuda(garena, var._offset, var.shape, var.dtype, var.device)
    if not any(off == var._offset for off, _, _ in garena.block.parts):
        garena.tag(var._offset, var.nbytes, _owner_of(var, "grad"))
    copy_into(out, g)
    slots[var._offset] = weakref.ref(out)
    return out


def _owner_of(var, role):
    """The memory-tool name of a parameter (from its arena's parts) with a role: "0.weight.grad"."""
    name = None
    parts = getattr(getattr(var._buf, "block", None), "parts", None) or ()
    for off, n, who in parts:
        if off == var._offset:
            name = who
            break
    if name is None:
        name = getattr(var._buf, "owner", None) or "tensor"
    return f"{name}.grad" if role == "grad" else f"{role} of {name}"


# ------------------------------------------------------------------ optimizer state and steps
def zeros_state(p, key):
    return full(p.shape, 0.0, p.dtype, p.device, owner=_owner_of(p, key), scoped=False)


def _arena_span(params):
    """(buffer, start, end) when all params live in one arena and nothing else is in their span, else None."""
    buf = params[0]._buf
    if any(p._buf is not buf for p in params):
        return None
    parts = getattr(getattr(buf, "block", None), "parts", None)
    if not parts:
        return None
    mine = {(p._offset, p.nbytes) for p in params}
    if len(mine) != len(params):
        return None
    start = min(p._offset for p in params)
    end = max(p._offset + p.nbytes for p in params)
    for off, n, who in parts:
        if off < end and off + n > start and (off, n) not in mine:
            return None
    return buf, start, end


def alloc_states(params, key):
    """Zeroed state tensors like params; when the params share an arena, the states share one too (same offsets)."""
    span = _arena_span(params)
    if span is None:
        return [zeros_state(p, key) for p in params]
    buf, start, end = span
    rdev = _rdev(params[0])
    arena = memory.DeviceBuffer.alloc(rdev, end, owner=f"{key} of {buf.owner or 'arena'}")
    memory.memset_d8(arena.ptr + start, 0, end - start, rdev.compute_stream)
    out = []
    for p in params:
        arena.tag(p._offset, p.nbytes, _owner_of(p, key))
        out.append(Tensor._make_cuda(arena, p._offset, p.shape, p.dtype, p.device))
    return out


def _group_span(params, *lists):
    """(start, end, [base tensors]) when params and each list of tensors are laid out identically in one
    arena each (so the whole group is one contiguous range), else None."""
    span = _arena_span(params)
    if span is None:
        return None
    _, start, end = span
    for ts in lists:
        if ts is None:
            continue
        b = ts[0]._buf
        if any(t._buf is not b or t._offset != p._offset for t, p in zip(ts, params)):
            return None
        if b.nbytes < end:
            return None
    return start, end


def sgd_group(params, grads, bufs, first, lr, momentum, dampening, nesterov, weight_decay, maximize):
    _f32("SGD", *params)
    _need("SGD step", "optim")


def adam_group(params, grads, ms, vs, vmaxs, steps, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad,
               maximize):
    _f32("Adam", *params)
    _need("Adam step", "optim")


# ------------------------------------------------------------------ misc
def cross_device_note():
    return "cuda ops take float32 tensors on one device"
