"""The cuda path of indexing along a dim (index.ptx): the tensor viewed as [outer, size, inner], whole [inner] rows
moved by index_select_bN / index_copy_bN (any dtype, by element size) and added by index_add_f32 (atomics into
float32, the source float32 or a 16-bit one widened in the kernel); an index out of range trips the kernel's
device-side assert. Indices are int64 only."""
from ... import dtypes as _dt
from ..cuda_launch import _ew, _f32, _rdev, dense, empty

__all__ = ["index_select", "index_copy_", "index_add_", "check_int32_index"]


def _index_launch(kernel, a, b, idx, outer, size, inner, op):
    n = outer * idx.numel() * inner
    _ew(_rdev(a), kernel, [a.data_ptr(), b.data_ptr(), idx.data_ptr(), outer, idx.numel(), size, inner], n, op)


def index_select(x, outer, size, inner, idx):
    """x viewed as [outer, size, inner] -> [outer, len(idx), inner] (any dtype; an index out of range trips
    the kernel's device-side assert)."""
    out = empty((outer, idx.numel(), inner), x.dtype, x.device, "index_select output")
    _index_launch(f"index_select_b{x.dtype.itemsize}", out, x, idx, outer, size, inner, "index_select")
    return out


def index_copy_(dst, outer, size, inner, idx, src):
    """In place: dst[o, idx[j], i] = src[o, j, i] (dst contiguous, viewed as [outer, size, inner])."""
    _index_launch(f"index_copy_b{dst.dtype.itemsize}", dst, dense(src), idx, outer, size, inner, "index_copy_")
    dst._bump_version()
    return dst


_INDEX_ADD_SRC = {_dt.float16: "_f16", _dt.bfloat16: "_bf16"}


def index_add_(dst, outer, size, inner, idx, src):
    """In place: dst[o, idx[j], i] += src[o, j, i] with atomics into float32; src float32, or float16/bfloat16
    read from its own storage and widened in the kernel (index_add_f32_{f16,bf16}: a 16-bit gradient summed into
    a float32 accumulator, as embedding's backward does, with no widened copy of src)."""
    sfx = _INDEX_ADD_SRC.get(src.dtype, "") if dst.dtype is _dt.float32 else ""
    if not sfx:
        _f32("index_add_", dst, src)
    _index_launch("index_add_f32" + sfx, dst, dense(src), idx, outer, size, inner, "index_add_")
    dst._bump_version()
    return dst


# opmath passes a 16-bit src unwidened when the destination is the float32 accumulator
index_add_.native_low = lambda dst, *args: dst.dtype is _dt.float32 and args[-1].dtype in _INDEX_ADD_SRC  # type: ignore[attr-defined]  # noqa: E501


def check_int32_index(op):
    """An int32 index is refused: the index kernels read int64."""
    raise NotImplementedError(f"{op}() with an int32 index on cuda: rawdev's index kernels read int64 "
                              f"(use index.long())")
