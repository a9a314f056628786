"""strided.ptx: strided_copy_b{1,2,4,8} against exact numpy references, launched directly (every rank
0..8 as given, no dimension merging) and through rawdev.tensor.strided.strided_copy; the struct-by-value
parameter's packing in Kernel.launch."""
import struct

import numpy as np
import pytest
from rawdev.runtime import kernels
from rawdev.tensor.strided import MAX_RANK, collapse, strided_copy

from test_kernels_util import Gpu, cdiv

rng = np.random.default_rng(11)
DTYPES = {1: [np.uint8, np.bool_], 2: [np.float16, np.uint16], 4: [np.float32, np.int32], 8: [np.int64, np.float64]}
GEOM = struct.Struct("<24q")


def poison_bytes(nbytes):
    return np.full(nbytes, 0xFF, np.uint8)   # NaN for floats, -1 / max for integers, 255 for bool


def random_values(n, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if dtype.kind == "f":
        v = rng.standard_normal(n).astype(dtype)
        if n > 2:
            v[:3] = [-0.0, np.inf, np.nan]        # bits must travel unchanged
        return v
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def reference(dst, dst_off, dst_strides, src, src_off, src_strides, shape):
    """numpy's own strided views of flat arrays: dst_view[...] = src_view."""
    if not int(np.prod(shape)):
        return dst
    out = dst.copy()
    isz = dst.itemsize
    sv = np.lib.stride_tricks.as_strided(src[src_off:], shape, [s * isz for s in src_strides])
    dv = np.lib.stride_tricks.as_strided(out[dst_off:], shape, [s * isz for s in dst_strides])
    dv[...] = sv
    return out


def extent(off, shape, strides):
    """Elements a view touches: one past its largest index."""
    if not int(np.prod(shape)):
        return off
    return off + sum((s - 1) * st for s, st in zip(shape, strides)) + 1


def geom(shape, src_strides, dst_strides):
    pad = [0] * (MAX_RANK - len(shape))
    return GEOM.pack(*shape, *pad, *src_strides, *pad, *dst_strides, *pad)


def launch_raw(g, itemsize, dst, dst_off, dst_strides, src, src_off, src_strides, shape, grid=None):
    n = int(np.prod(shape))
    grid = grid or max(1, min(cdiv(n, 256), 5))   # few blocks: the grid-stride loop runs several times
    g.run(f"strided_copy_b{itemsize}", grid, 256,
          [dst, dst_off, src, src_off, n, len(shape), geom(shape, src_strides, dst_strides)])


def block_strides(shape, order, gaps):
    """Strides of a dense block laid out with axis order[0] outermost, each axis spaced gaps[d] times
    wider than needed (so the view has holes): never maps two indices to one element."""
    strides, acc = [0] * len(shape), 1
    for d in reversed(list(order)):
        strides[d] = acc * gaps[d]
        acc = strides[d] * max(shape[d], 1)
    return strides


def random_case(rank, kind):
    """shape, src_off, src_strides, dst_off, dst_strides for one copy of the given kind:
    transpose   a permuted block with gaps -> contiguous
    broadcast   as transpose, some source axes with stride 0
    strided_dst a permuted block -> another permuted block with gaps, both with offsets
    empty       as transpose, with a size-0 axis"""
    shape = [int(s) for s in rng.choice([1, 2, 3, 5], rank, p=[0.25, 0.35, 0.25, 0.15])]
    if rank <= 3:
        shape = [s * int(rng.integers(1, 6)) if s > 1 else s for s in shape]
    if rank and kind == "empty":
        shape[rng.integers(rank)] = 0
    src_strides = block_strides(shape, rng.permutation(rank), rng.integers(1, 3, rank))
    if kind == "broadcast" and rank:
        for d in rng.choice(rank, max(1, rank // 3), replace=False):
            src_strides[d] = 0
    dst_strides = block_strides(shape, range(rank), [1] * rank)              # contiguous
    src_off, dst_off = int(rng.integers(0, 7)), 0
    if kind == "strided_dst":
        dst_strides = block_strides(shape, rng.permutation(rank), rng.integers(1, 3, rank))
        dst_off = int(rng.integers(1, 7))
    return shape, src_off, [int(v) for v in src_strides], dst_off, [int(v) for v in dst_strides]


KINDS = ["transpose", "broadcast", "strided_dst", "empty"]


@pytest.mark.parametrize("itemsize", sorted(DTYPES))
@pytest.mark.parametrize("rank", range(MAX_RANK + 1))
def test_strided_copy_kernel(dev, itemsize, rank):
    """Each kernel at each rank, geometry exactly as given: transposed and broadcast sources, strided
    destinations with gaps (the gaps stay poisoned), size-0 and size-1 axes, offsets."""
    g = Gpu(dev)
    for kind in KINDS:
        for dtype in DTYPES[itemsize]:
            shape, src_off, src_strides, dst_off, dst_strides = random_case(rank, kind)
            src = random_values(extent(src_off, shape, src_strides) + 3, dtype)
            ndst = extent(dst_off, shape, dst_strides) + 5
            dst0 = poison_bytes(ndst * itemsize).view(src.dtype)
            bdst = g.put(dst0)
            launch_raw(g, itemsize, bdst, dst_off, dst_strides, g.put(src), src_off, src_strides, shape)
            got = g.get(bdst, ndst, src.dtype)
            want = reference(dst0, dst_off, dst_strides, src, src_off, src_strides, shape)
            assert got.view(np.uint8).tobytes() == want.view(np.uint8).tobytes(), (kind, shape, src_strides,
                                                                                    dst_strides)


@pytest.mark.parametrize("itemsize", sorted(DTYPES))
def test_rank0_copies_one_element(dev, itemsize):
    g = Gpu(dev)
    src = random_values(10, DTYPES[itemsize][0])
    dst0 = poison_bytes(6 * itemsize).view(src.dtype)
    bdst = g.put(dst0)
    launch_raw(g, itemsize, bdst, 4, [], g.put(src), 7, [], [])
    want = dst0.copy()
    want[4] = src[7]
    assert g.get(bdst, 6, src.dtype).tobytes() == want.tobytes()


def test_grid_stride_tail_and_one_block(dev):
    """Sizes around the block and grid edges, with grids of 1 block and of many blocks."""
    g = Gpu(dev)
    for n in [1, 255, 256, 257, 1023, 3 * 256 + 1]:
        for grid in (1, 3, cdiv(n, 256)):
            src = random_values(2 * n, np.float32)
            bdst = g.poisoned(n)
            launch_raw(g, 4, bdst, 0, [1], g.put(src), 1, [2], [n], grid=grid)      # every other element
            assert g.get(bdst, n).tobytes() == src[1::2].tobytes()


def test_64bit_offsets_and_division(dev):
    """Offsets beyond 2^32 elements, and a dimension above 2^32 (the kernel's 64-bit division path):
    pointers placed below the buffers so that only 64-bit address arithmetic lands inside them."""
    g = Gpu(dev)
    src = random_values(64, np.float32)
    bsrc, bdst = g.put(src), g.poisoned(64)
    big = 2 ** 33 + 5
    g.run("strided_copy_b4", 1, 256, [bdst.ptr - 4 * big, big + 3, bsrc.ptr - 4 * (big + 1), big + 2, 40, 1,
                                       geom([40], [1], [1])])
    want = np.full(64, np.nan, np.float32)
    want[3:43] = src[1:41]
    assert g.get(bdst, 64).tobytes() == want.tobytes()
    # shape [1, 2^33 + 7]: idx_1 = i needs i / (2^33 + 7) = 0 and i % (2^33 + 7) = i in 64 bits
    bdst = g.poisoned(64)
    g.run("strided_copy_b4", 1, 256, [bdst, 0, bsrc, 0, 50, 2, geom([1, 2 ** 33 + 7], [0, 1], [0, 1])])
    assert g.get(bdst, 64)[:50].tobytes() == src[:50].tobytes()


# ---------------------------------------------------------------- the launcher (rawdev.tensor.strided)
@pytest.mark.parametrize("itemsize", sorted(DTYPES))
def test_launcher_matches_numpy(dev, itemsize):
    """strided_copy() on random views of every kind and rank (it merges dimensions before launching)."""
    g = Gpu(dev)
    for rank in range(MAX_RANK + 1):
        for kind in KINDS:
            dtype = DTYPES[itemsize][rank % 2]
            shape, src_off, src_strides, dst_off, dst_strides = random_case(rank, kind)
            src = random_values(extent(src_off, shape, src_strides) + 2, dtype)
            ndst = extent(dst_off, shape, dst_strides) + 4
            dst0 = poison_bytes(ndst * itemsize).view(src.dtype)
            bdst = g.put(dst0)
            strided_copy(dev, bdst.ptr, dst_off, dst_strides, g.put(src).ptr, src_off, src_strides, shape, itemsize)
            want = reference(dst0, dst_off, dst_strides, src, src_off, src_strides, shape)
            assert g.get(bdst, ndst, src.dtype).tobytes() == want.tobytes(), (kind, shape)


def test_launcher_views_of_a_numpy_array(dev):
    """Typical tensor views: x.T, x[:, ::2], x[1:, 2], expand, a slice assignment into a bigger buffer."""
    g = Gpu(dev)
    x = rng.standard_normal((6, 7, 5)).astype(np.float32)
    bx = g.put(x)
    for view in [x.transpose(2, 0, 1), x[:, ::2], x[1:, 2], x[::-1][::-1], x[:, None, 3],
                 np.broadcast_to(x[:, :1, :], (6, 4, 5)), x[2:4, 3:, 1::3], x[5, 6, 4, ...]]:
        off = (view.__array_interface__["data"][0] - x.ctypes.data) // 4
        out = g.poisoned(view.size)
        cont = [int(np.prod(view.shape[d + 1:])) for d in range(view.ndim)]
        strided_copy(dev, out.ptr, 0, cont, bx.ptr, off, [s // 4 for s in view.strides], view.shape, 4)
        assert g.get(out, view.shape).tobytes() == np.ascontiguousarray(view).tobytes(), (view.shape, view.strides)
    # writing a contiguous [3, 4] block into big[1:4, 2:9:2] of a [5, 10] buffer: the rest stays poisoned
    big, blk = g.poisoned((5, 10)), rng.standard_normal((3, 4)).astype(np.float32)
    strided_copy(dev, big.ptr, 12, [10, 2], g.put(blk).ptr, 0, [4, 1], (3, 4), 4)
    want = np.full((5, 10), np.nan, np.float32)
    want[1:4, 2:9:2] = blk
    assert g.get(big, (5, 10)).tobytes() == want.tobytes()


def test_launcher_edge_cases(dev):
    g = Gpu(dev)
    before = dev.compute_stream
    out = g.poisoned(4)
    strided_copy(dev, out.ptr, 0, [1, 4], 0, 0, [1, 1], (0, 3), 4)          # nothing to copy: no launch
    assert np.isnan(g.get(out, 4)).all()
    src = g.put(np.arange(4, dtype=np.float32))
    strided_copy(dev, out.ptr, 2, [], src.ptr, 3, [], (), 4)                 # rank 0: one element
    assert g.get(out, 4)[2] == 3.0 and np.isnan(g.get(out, 4)[[0, 1, 3]]).all()
    # a contiguous rank-12 copy merges to one dimension; a rank-9 transpose cannot be merged
    sh = (2,) * 12
    st = [2 ** (11 - d) for d in range(12)]
    big = g.put(np.arange(4096, dtype=np.int32))
    o = g.poisoned(4096, np.int32)
    strided_copy(dev, o.ptr, 0, st, big.ptr, 0, st, sh, 4)
    assert (g.get(o, 4096, np.int32) == np.arange(4096)).all()
    with pytest.raises(ValueError, match="at most 8 dimensions"):
        strided_copy(dev, o.ptr, 0, st[:9], big.ptr, 0, st[:9][::-1], (2,) * 9, 4)
    with pytest.raises(ValueError, match="itemsize"):
        strided_copy(dev, o.ptr, 0, [1], big.ptr, 0, [1], (3,), 3)
    with pytest.raises(ValueError, match="dimension"):
        strided_copy(dev, o.ptr, 0, [1], big.ptr, 0, [1, 1], (3,), 4)
    assert dev.compute_stream is before


def test_launcher_uses_the_given_stream(dev):
    """stream=None launches on the compute stream; a given stream gets the launch instead."""
    from rawdev.runtime import trace
    g = Gpu(dev)
    src, out = g.put(np.arange(8, dtype=np.float32)), g.poisoned(8)
    for stream, label in [(None, dev.compute_stream.label), (dev.copy_stream, dev.copy_stream.label)]:
        with trace() as t:
            strided_copy(dev, out.ptr, 0, [1], src.ptr, 0, [2], (4,), 4, stream=stream)
        launches = [c for c in t.calls if c.fn == "cuLaunchKernel"]
        assert [c.stream for c in launches] == [label]
    dev.copy_stream.synchronize()
    assert (g.get(out, 8)[:4] == [0, 2, 4, 6]).all()


@pytest.mark.parametrize("seed", range(20))
def test_collapse_keeps_every_index(seed):
    """collapse() describes the same (src, dst) element pairs in the same order (pure, no device)."""
    r = np.random.default_rng(seed)
    rank = int(r.integers(0, 9))
    shape = [int(s) for s in r.choice([1, 2, 3], rank)]
    cont = [int(np.prod(shape[d + 1:])) for d in range(rank)]
    src_st = [c if r.random() < 0.7 else int(r.integers(0, 4)) for c in cont]
    dst_st = [c if r.random() < 0.8 else int(r.integers(0, 4)) * c for c in cont]

    def pairs(sh, a, b):
        idx = np.indices(sh).reshape(len(sh), -1) if sh else np.zeros((0, 1), int)
        return list(zip(np.dot(a, idx).tolist() if sh else [0], np.dot(b, idx).tolist() if sh else [0]))

    s2, a2, b2 = collapse(shape, src_st, dst_st)
    assert len(s2) <= rank and 1 not in s2
    assert pairs(s2, a2, b2) == pairs(shape, src_st, dst_st)
    if src_st == cont and dst_st == cont and int(np.prod(shape)) > 1:
        assert len(s2) == 1


# ---------------------------------------------------------------- the struct parameter's packing
def test_struct_param_in_manifest_and_packing(dev):
    """The by-value geometry is a `b8[192]` parameter: exactly 192 bytes (bytes, bytearray or
    memoryview); anything else is refused before the driver is called."""
    fname, params, _ = kernels.manifest()["strided_copy_b4"]
    assert fname == "strided.ptx"
    assert params == [("dst", "u64"), ("dst_off", "u64"), ("src", "u64"), ("src_off", "u64"), ("n", "u64"),
                      ("rank", "u32"), ("g", "b8[192]")]
    k = kernels.get_kernel(dev, "strided_copy_b4")
    g = Gpu(dev)
    src, out = g.put(np.arange(6, dtype=np.float32)), g.poisoned(6)
    good = geom([2, 3], [1, 2], [3, 1])                                       # a transpose of [3, 2]
    for blob in (good, bytearray(good), memoryview(good)):
        k.launch(1, 256, [out.ptr, 0, src.ptr, 0, 6, 2, blob])
        assert g.get(out, 6).tolist() == [0, 2, 4, 1, 3, 5]
    for bad in (good[:-8], good + b"\0", 0, [2, 3], None):
        with pytest.raises(TypeError, match=r"argument 6 \(g\) of strided_copy_b4 must be 192 bytes"):
            k.launch(1, 256, [out.ptr, 0, src.ptr, 0, 6, 2, bad])
    k.launch(1, 256, [out, 0, src, 0, 6, 2, good])                           # the slow path (DeviceBuffers)
    assert g.get(out, 6).tolist() == [0, 2, 4, 1, 3, 5]
    assert "b8[192] g" in k.signature
