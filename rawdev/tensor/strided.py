"""The strided-copy kernels (ptx/src/strided.cu) launched on raw device pointers: one launch copies any
view (any strides, stride 0 for broadcast, any offset) into any other, for 1/2/4/8-byte elements.

Works on ints only (pointers, offsets and strides in elements); it never sees a Tensor.
"""
import struct

from ..runtime import kernels as _kernels

MAX_RANK = 8        # the kernels' StridedGeom holds 8 dimensions
BLOCK = 256
MAX_GRID = 65535    # the grid-stride loop covers the rest
_GEOM = struct.Struct(f"<{3 * MAX_RANK}q")   # {shape[8], src_stride[8], dst_stride[8]}: 192 bytes
_KERNELS = {1: "strided_copy_b1", 2: "strided_copy_b2", 4: "strided_copy_b4", 8: "strided_copy_b8"}


def collapse(shape, src_strides, dst_strides):
    """The same copy over fewer dimensions: size-1 axes dropped, and each axis merged into the one before
    it where both views step through the pair as one axis (outer stride == inner stride * inner size).
    Row-major order is kept, so element i of the result is element i of the input. Returns three lists."""
    dims = []
    for s, a, b in zip(shape, src_strides, dst_strides):
        if s == 1:
            continue
        if dims and dims[-1][1] == a * s and dims[-1][2] == b * s:
            dims[-1] = (dims[-1][0] * s, a, b)
        else:
            dims.append((s, a, b))
    return [d[0] for d in dims], [d[1] for d in dims], [d[2] for d in dims]


def strided_copy(rdev, dst_ptr, dst_off, dst_strides, src_ptr, src_off, src_strides, shape, itemsize, stream=None):
    """Launch strided_copy_b{itemsize}: raw device pointers (ints), offsets/strides in elements; no Tensor.

    For every index idx of `shape` (row-major): dst[dst_off + idx·dst_strides] = src[src_off + idx·src_strides].
    `stream` None is rdev.compute_stream. Nothing is launched when shape has no elements. Up to 8 dimensions
    after size-1 axes are dropped and axes contiguous in both views are merged (a contiguous tensor of any
    rank is one dimension); more raise ValueError. src and dst must not overlap.
    """
    shape = tuple(int(s) for s in shape)
    rank = len(shape)
    if len(src_strides) != rank or len(dst_strides) != rank:
        raise ValueError(f"strided_copy: shape {shape} has {rank} dimension(s) but src_strides has "
                         f"{len(src_strides)} and dst_strides {len(dst_strides)}")
    if any(s < 0 for s in shape):
        raise ValueError(f"strided_copy: negative size in shape {shape}")
    if itemsize not in _KERNELS:
        raise ValueError(f"strided_copy: itemsize must be 1, 2, 4 or 8 bytes, not {itemsize}")
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return
    sizes, src_st, dst_st = collapse(shape, [int(a) for a in src_strides], [int(b) for b in dst_strides])
    if len(sizes) > MAX_RANK:
        raise ValueError(f"strided_copy supports at most {MAX_RANK} dimensions; shape {shape} with src strides "
                         f"{tuple(src_strides)} and dst strides {tuple(dst_strides)} still has {len(sizes)} after "
                         f"merging contiguous ones (make the source contiguous in two steps)")
    pad = [0] * (MAX_RANK - len(sizes))
    try:
        geom = _GEOM.pack(*sizes, *pad, *src_st, *pad, *dst_st, *pad)
    except struct.error:
        raise ValueError(f"strided_copy: a stride does not fit int64: src {tuple(src_strides)}, "
                         f"dst {tuple(dst_strides)}") from None
    k = _kernels.get_kernel(rdev, _KERNELS[itemsize])
    k.launch(min((n + BLOCK - 1) // BLOCK, MAX_GRID), BLOCK,
             [int(dst_ptr), int(dst_off), int(src_ptr), int(src_off), n, len(sizes), geom],
             stream=stream or rdev.compute_stream)
