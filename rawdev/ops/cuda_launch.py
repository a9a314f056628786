"""What every cuda op file needs: the runtime device of a tensor, a kernel by name (with the error that
names a kernel missing from the build), the float32 check, fresh outputs for the memory tool (empty, full,
clone; NaN-poisoned in tests), contiguous operands (dense, _bcast), the grid-stride and row-per-warp launch
shapes, and the GEMM tile choice. The op files import these from here, and rawdev/ops/cuda.py gathers the op
files: no op file imports cuda.py, so there is no import cycle."""
import numpy as np

from .. import dtypes as _dt
from ..runtime import kernels as _kernels
from ..runtime import memory
from ..tensor import cuda_io
from ..tensor.core import Tensor
from ..tensor.size import Size
from .owners import current_owner


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


# Kernels with 16-bit forms come in three storages: `<name>` (float32), `<name>_f16`, `<name>_bf16` (2-byte loads
# widened to float32, the float32 kernel's math, one rounding at the store).
_SUFFIX = {_dt.float32: "", _dt.float16: "_f16", _dt.bfloat16: "_bf16"}


def _low(*ts):
    """The 16-bit float dtype all of ts share (None when they are not all float16 or all bfloat16)."""
    dt = ts[0].dtype
    if dt in (_dt.float16, _dt.bfloat16) and all(t.dtype is dt for t in ts):
        return dt
    return None


def _storage(op, *ts):
    """The kernel-name suffix for the operands' storage: '' for float32, '_f16'/'_bf16' for operands all of that
    16-bit dtype; any other mix is the float32 check's TypeError."""
    low = _low(*ts)
    if low is not None:
        return _SUFFIX[low]
    _f32(op, *ts)
    return ""


_poison = False


def set_poison(flag):
    """Tests: fill every new op output with NaN before the kernel writes it (unwritten elements show)."""
    global _poison
    _poison = bool(flag)


def empty(shape, dt, dev, owner=None, scoped=True):
    owner = owner or "output"
    if type(shape) is not Size:
        shape = Size(tuple(shape))
    t = cuda_io.empty(shape, dt, dev, current_owner(owner) if scoped else owner)
    if _poison and t.nbytes:   # NaN for 32-bit floats, 0xFF bytes for the rest (bool 255, int -1)
        if dt.itemsize == 4:
            memory.memset_d32(t.data_ptr(), 0x7FC00000, t.numel(), _rdev(dev).compute_stream)
        else:
            memory.memset_d8(t.data_ptr(), 0xFF, t.nbytes, _rdev(dev).compute_stream)
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
            if dt is _dt.bfloat16:   # bfloat16 is stored as uint16 bits: round the value to them
                src = np.full(tuple(shape), _dt.f32_to_bf16_bits(np.float32(value)), np.uint16)
            else:
                src = np.full(tuple(shape), value, dt.storage)
            memory.copy_htod(t.data_ptr(), src, src.nbytes, stream=rdev.compute_stream)
            memory.keep_alive(rdev.compute_stream, src)
    return t


def clone(x, owner=None, scoped=True):
    owner = owner or "clone"
    return x._contiguous_copy(current_owner(owner) if scoped else owner)


def copy_into(dst, src):
    """dst[...] = src (same device; dst may be a strided view: its base is written)."""
    dst._write(src)


def dense(t):
    """t itself when contiguous, else a contiguous copy (kernels read contiguous operands)."""
    return t if t is None or t.is_contiguous() else t._contiguous_copy("contiguous copy")


def _bcast(t, shape):
    """t broadcast to shape as a contiguous operand: expand (stride 0) + one strided copy when needed."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return dense(t)
    n, m, st = t.ndim, len(shape), t.stride()   # the caller checked that t broadcasts to shape
    strides = [0] * (m - n) + [st[j] if t.shape[j] == shape[j + m - n] else 0 for j in range(n)]
    return t._view(shape, strides, t.storage_offset())._contiguous_copy("broadcast operand")


_GEMM_TILES = ((128, 256), (64, 256), (32, 64))   # (tile, threads per block)


def gemm16_kernel(rdev, layout, kind, batched=False):
    """The 16-bit tensor-core GEMM for `kind` ("bf16"/"f16") and `layout` that rdev can run, or None: the sm_80
    gemm_<layout>_<kind>_128x128 on compute capability 8.0+, else (float16 only: sm_75 has no bfloat16 mma)
    gemm_<layout>_f16_sm75 on 7.5+. Both take the same parameters and launch shape (128x128 tiles, 256
    threads), so the caller only swaps the name; None means the operands are widened to float32 instead."""
    suffix = "_batched" if batched else ""
    for name in (f"gemm_{layout}_{kind}_128x128{suffix}", f"gemm_{layout}_{kind}_sm75{suffix}"):
        if _kernels.runs_on(rdev, name):
            return name
    return None


def _tile(M, N, sms):
    """The largest tile whose grid still gives every SM a block (a 256x1024 layer output is 16 tiles of
    128x128 but 64 of 64x64 and 256 of 32x32: on a 132-SM H100/H200 only the 32x32 tile fills it) and whose
    rows and columns are both more than half used: a skinny output (4 x 8192, a convolution's few channels by
    many positions) in 128x128 tiles would compute 124 rows of every tile for nothing."""
    for tile, threads in _GEMM_TILES[:2]:
        if 2 * min(M, N) > tile and -(-M // tile) * -(-N // tile) >= sms:
            return tile, threads
    return _GEMM_TILES[2]


# ------------------------------------------------------------------ launch helpers
def reduce_layout(shape, dims, keepdim):
    """A reduction over dims of a tensor of shape: (sorted dims, kept dims, output shape, reduced count, output
    count), the layout every reduction kernel's launch is sized by."""
    dims = sorted(set(dims))
    keep = [d for d in range(len(shape)) if d not in dims]
    out_shape = [1 if d in dims else s for d, s in enumerate(shape)] if keepdim else [shape[d] for d in keep]
    red = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    rows = int(np.prod([shape[d] for d in keep], dtype=np.int64))
    return dims, keep, out_shape, red, rows


def _ew(rdev, name, args, n, op=None):
    """An elementwise (grid-stride) kernel over n elements: block 256, grid min(ceil(n/256), 65535)."""
    if n:
        _kernel(rdev, name, op).launch(min((n + 255) // 256, 65535), 256, args)


def _rows(rdev, name, args, rows, op=None):
    """A one-warp-per-row kernel: block 256 (8 warps), grid ceil(rows/8)."""
    if rows:
        _kernel(rdev, name, op).launch((rows + 7) // 8, 256, args)


def _cols(rdev, name, args, cols, op=None):
    """A column reduction over [rows, cols] (sum_axis0 and its variants): 32 columns per block, read by 8 rows of
    32 threads (coalesced), grid ceil(cols/32)."""
    if cols:
        _kernel(rdev, name, op).launch((cols + 31) // 32, (32, 8), args)
