"""The simulated stream-ordered pool's layout: blocks inside 2 MiB-aligned segments, best fit, reuse of freed
ranges in stream order, fragmentation (a new segment, or OOM), trimming only empty segments, and per-block
bounds checking inside a segment."""
import ctypes
from pathlib import Path

import numpy as np
import pytest
from cuda.bindings import driver as drv
from rawdev import sim
from rawdev.sim import driver as simdrv

from test_sim_driver import make_pool, ok, power_on

R = drv.CUresult
MiB = 1 << 20
KiB = 1 << 10
GRANULE = 2 * MiB
KEEP_ALL = 2**64 - 1


@pytest.fixture(autouse=True)
def gpu(monkeypatch):
    for k in ("RAWDEV_SIM_MEMORY", "RAWDEV_SIM_DEVICES", "RAWDEV_SIM_DRIVER_VERSION", "RAWDEV_SIM_CC",
              "RAWDEV_SIM_FRESH", "RAWDEV_SIM_SCHEDULE"):  # the eager schedule: a queued free stays queued
        monkeypatch.delenv(k, raising=False)
    power_on(monkeypatch)
    yield
    sim.reset()


def reserved(pool):
    return int(ok(sim.cuMemPoolGetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)))


def used(pool):
    return int(ok(sim.cuMemPoolGetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)))


def alloc(pool, n, s=0):
    return int(ok(sim.cuMemAllocFromPoolAsync(n, pool, s)))


def segments(pool):
    return [(b, n) for b, n, _ in simdrv.pool_segments(pool)]


def segment_of(pool, addr, n=1):
    """The (base, size) segments [addr, addr+n) lies in (more than one when a block straddles VA-adjacent ones)."""
    hit = [(b, sz) for b, sz in segments(pool) if b < addr + n and addr < b + sz]
    covered = sum(min(b + sz, addr + n) - max(b, addr) for b, sz in hit)
    assert covered == n, f"0x{addr:x}+{n} is not inside the pool's segments {segments(pool)}"
    return hit


def check_invariants(pool):
    segs = segments(pool)
    assert all(b % GRANULE == 0 and sz % GRANULE == 0 and sz > 0 for b, sz in segs)
    assert reserved(pool) == sum(sz for _, sz in segs)
    assert reserved(pool) % GRANULE == 0
    return segs


# ------------------------------------------------------------------------------------- layout
def test_blocks_lie_inside_aligned_segments_and_reserved_is_their_sum():
    pool, s = make_pool(KEEP_ALL), ok(sim.cuStreamCreate(0))
    sizes = [1000, 300, 5 * MiB, 1 * MiB, 3 * MiB, 64, 2 * MiB, 700 * KiB]
    ptrs = [alloc(pool, n, s) for n in sizes]
    for p, n in zip(ptrs, sizes):
        assert p % 256 == 0
        segment_of(pool, p, n)
    segs = check_invariants(pool)
    assert used(pool) == sum(sizes)
    mem = sim.device_memory(0)
    assert mem.mappings() == segs                        # the device's mapped ranges are exactly the segments
    assert ok(sim.cuMemGetInfo()) == ((4 << 30) - reserved(pool), 4 << 30)
    # blocks never overlap (footprints rounded up to 256 bytes)
    spans = sorted((p, p + -(-n // 256) * 256) for p, n in zip(ptrs, sizes))
    assert all(a_end <= b for (_, a_end), (b, _) in zip(spans, spans[1:]))
    for p in ptrs:
        ok(sim.cuMemFreeAsync(p, s))
    ok(sim.cuStreamSynchronize(s))
    assert check_invariants(pool) == segs and used(pool) == 0   # threshold: kept
    ok(sim.cuMemPoolTrimTo(pool, 0))
    assert segments(pool) == [] and reserved(pool) == 0 and mem.mappings() == []
    assert ok(sim.cuMemGetInfo())[0] == 4 << 30


def test_two_small_allocations_share_one_segment():
    pool = make_pool()
    a, b = alloc(pool, 1000), alloc(pool, 3000)
    assert segments(pool) == [(a, GRANULE)]              # the first block opens a fresh segment at its base
    assert b == a + 1024                                 # best fit: packed right after a's 256-byte footprint
    assert segment_of(pool, b, 3000) == [(a, GRANULE)]
    assert reserved(pool) == GRANULE and used(pool) == 4000


def test_a_big_allocation_gets_its_own_segment():
    pool = make_pool()
    big = alloc(pool, 5 * MiB)
    assert segments(pool) == [(big, 6 * MiB)]            # ceil(5 MiB, 2 MiB), starting at the block
    small = alloc(pool, 1000)                            # fits the 1 MiB left in that segment
    assert small == big + 5 * MiB and reserved(pool) == 6 * MiB
    big2 = alloc(pool, 5 * MiB)                          # the tail cannot help: a second segment of its own
    assert len(segments(pool)) == 2 and (big2, 6 * MiB) in segments(pool)
    assert reserved(pool) == 12 * MiB
    assert segment_of(pool, big2, 5 * MiB) == [(big2, 6 * MiB)]
    check_invariants(pool)


def test_a_free_tail_is_extended_when_that_maps_less():
    # 1000 bytes use 256 of a 2 MiB segment: 3 MiB more need only one more granule right after it (the block
    # straddles the two), not a fresh 4 MiB segment -- as a driver pool mapping memory into reserved VA does
    pool = make_pool()
    a = alloc(pool, 1000)
    b = alloc(pool, 3 * MiB)
    assert b == a + 1024 and reserved(pool) == 4 * MiB
    assert segments(pool) == [(a, GRANULE), (a + GRANULE, GRANULE)]
    assert segment_of(pool, b, 3 * MiB) == segments(pool)
    # equal cost (1.5 MiB blocks): a separate segment, with unmapped address space in between
    pool2 = make_pool()
    c, d = alloc(pool2, 1536 * KiB), alloc(pool2, 1536 * KiB)
    assert segments(pool2) == sorted([(c, GRANULE), (d, GRANULE)]) and abs(d - c) > GRANULE


def test_a_freed_range_is_reused_at_once_on_its_stream_and_by_others_once_the_free_ran():
    pool, s, t = make_pool(KEEP_ALL), ok(sim.cuStreamCreate(1)), ok(sim.cuStreamCreate(1))
    a, b, c = (alloc(pool, 4096, s) for _ in range(3))
    assert (b, c) == (a + 4096, a + 8192)
    ok(sim.cuMemsetD8Async(b, 7, 4096, s))
    ok(sim.cuMemFreeAsync(b, s))
    x = alloc(pool, 4096, t)                             # another stream: the free has not run, b is not free yet
    assert x == a + 3 * 4096
    assert sim.cuMemFreeAsync(b, s)[0] == R.CUDA_ERROR_INVALID_VALUE   # double free still caught
    d = alloc(pool, 4096, s)                             # the same stream: stream order makes b's range safe now
    assert d == b and used(pool) == 4 * 4096            # the handed-over range is counted once, for d
    out = np.zeros(4096, np.uint8)
    ok(sim.cuMemcpyDtoHAsync(out.ctypes.data, d, 4096, s))   # runs the memset, the free (hand-over), the copy
    assert (out == 0xFF).all()                           # the new block's bytes are garbage, not b's 7s
    assert used(pool) == 4 * 4096
    ok(sim.cuMemFreeAsync(d, s))
    ok(sim.cuStreamSynchronize(s))                       # the free ran: every stream may have the range now
    assert sim.cuMemsetD8Async(b, 0, 1, s)[0] == R.CUDA_ERROR_INVALID_VALUE    # freed: not a live block
    assert "use after free" in sim.device_memory(0).nearest(b + 10)
    e = alloc(pool, 4096, t)
    assert e == b and reserved(pool) == GRANULE
    assert sim.device_memory(0).nearest(b + 10) == f"0x{b + 10:x} is 10 bytes into the 4096-byte allocation at 0x{b:x}"
    ok(sim.cuMemsetD8Async(e, 1, 4096, t))
    ok(sim.cuStreamSynchronize(t))
    assert sim.peek(e, 4096) == b"\1" * 4096
    # a smaller request also reuses the hole (best fit: the smallest free range that holds it)
    ok(sim.cuMemFreeAsync(a, s))
    ok(sim.cuStreamSynchronize(s))
    assert alloc(pool, 1000, t) == a


def test_work_queued_before_a_free_still_sees_the_old_block_when_the_same_stream_reuses_it():
    pool, s = make_pool(KEEP_ALL), ok(sim.cuStreamCreate(1))
    a = alloc(pool, 1000, s)
    src = np.arange(1000, dtype=np.uint8)
    out_old, out_new = np.zeros(1000, np.uint8), np.zeros(2000, np.uint8)
    pin = int(ok(sim.cuMemHostAlloc(1000, 0)))
    ok(sim.cuMemcpyHtoDAsync(a, src.ctypes.data, 1000, s))
    ok(sim.cuMemcpyDtoHAsync(pin, a, 1000, s))           # queued before the free: must read a's bytes
    ok(sim.cuMemFreeAsync(a, s))
    b = alloc(pool, 300, s)                              # smaller: takes a's block
    assert b == a
    c = alloc(pool, 700, s)                              # a's 1024-byte footprint is not split before the free ran
    assert c != a + 512
    ok(sim.cuMemsetD8Async(b, 9, 300, s))
    ok(sim.cuStreamSynchronize(s))
    ctypes.memmove(out_old.ctypes.data, pin, 1000)
    assert np.array_equal(out_old, src)
    assert sim.peek(b, 300) == b"\x09" * 300
    assert sim.cuMemsetD8Async(b + 300, 0, 1, s)[0] == R.CUDA_ERROR_INVALID_VALUE   # the new block is 300 bytes
    assert used(pool) == 1000 and alloc(pool, 500, s) == a + 512                   # its footprint's tail is free
    ok(sim.cuMemFreeHost(pin))
    del out_new


def test_another_stream_reuses_a_queued_free_after_waiting_for_an_event_past_it():
    pool, s, t = make_pool(KEEP_ALL), ok(sim.cuStreamCreate(1)), ok(sim.cuStreamCreate(1))
    a = alloc(pool, 4096, s)
    ok(sim.cuMemFreeAsync(a, s))
    e = ok(sim.cuEventCreate(2))
    ok(sim.cuEventRecord(e, s))
    assert alloc(pool, 4096, t) != a                     # no dependency yet
    ok(sim.cuStreamWaitEvent(t, e, 0))
    b = alloc(pool, 4096, t)                             # t's work now follows the free
    assert b == a
    ok(sim.cuMemsetD8Async(b, 3, 4096, t))
    ok(sim.cuStreamSynchronize(t))
    assert sim.peek(b, 4096) == b"\3" * 4096


def test_best_fit_picks_the_smallest_hole():
    pool, s = make_pool(KEEP_ALL), 0
    sizes = [8 * KiB, 256, 2 * KiB, 256, 4 * KiB, 256]
    p = [alloc(pool, n, s) for n in sizes]
    for i in (0, 2, 4):                                  # holes of 8, 2 and 4 KiB, separated by live blocks
        ok(sim.cuMemFreeAsync(p[i], s))
    ok(sim.cuCtxSynchronize())
    assert alloc(pool, 3 * KiB, s) == p[4]               # the 4 KiB hole, not the first (8 KiB) one
    assert alloc(pool, 2 * KiB, s) == p[2]
    assert alloc(pool, 2 * KiB, s) == p[0]


# ------------------------------------------------------------------------------ fragmentation
def _fragment(pool, s):
    """Fill two 2 MiB segments with 512 KiB blocks and free every other one: 2 MiB free in four 512 KiB holes."""
    blocks = [alloc(pool, 512 * KiB, s) for _ in range(8)]
    assert reserved(pool) == 4 * MiB and len(segments(pool)) == 2
    for b in blocks[::2]:
        ok(sim.cuMemFreeAsync(b, s))
    ok(sim.cuStreamSynchronize(s))
    assert used(pool) == 2 * MiB and reserved(pool) == 4 * MiB   # no segment is empty: nothing went back
    return blocks


def test_fragmentation_needs_a_new_segment(monkeypatch):
    power_on(monkeypatch, RAWDEV_SIM_MEMORY="8M")
    pool, s = make_pool(), ok(sim.cuStreamCreate(0))
    blocks = _fragment(pool, s)
    before = segments(pool)
    big = alloc(pool, 768 * KiB, s)                      # > any hole (512 KiB) but < the 2 MiB free in total
    assert big not in blocks and reserved(pool) == 6 * MiB
    assert [seg for seg in segments(pool) if seg not in before] == [(big, GRANULE)]
    assert alloc(pool, 512 * KiB, s) == blocks[0]        # a request that fits a hole still takes it


def test_fragmentation_ooms_when_capacity_forbids_a_segment(monkeypatch):
    power_on(monkeypatch, RAWDEV_SIM_MEMORY="4M")
    pool, s = make_pool(), ok(sim.cuStreamCreate(0))
    blocks = _fragment(pool, s)
    assert sim.cuMemAllocFromPoolAsync(768 * KiB, pool, s) == (R.CUDA_ERROR_OUT_OF_MEMORY, None)
    detail = sim.last_error_detail()
    for part in (f"cannot allocate {768 * KiB} bytes", "no free range in the pool's 2 segments fits it",
                 f"reserved {4 * MiB} bytes", f"{2 * MiB} in use", f"largest free range {512 * KiB}",
                 f"new {GRANULE}-byte segment", f"of {4 * MiB} bytes are mapped"):
        assert part in detail, (part, detail)
    assert reserved(pool) == 4 * MiB and used(pool) == 2 * MiB  # the OOM released nothing in use
    assert alloc(pool, 512 * KiB, s) == blocks[0]         # holes still serve requests that fit


def test_oom_first_releases_empty_segments_of_every_pool(monkeypatch):
    power_on(monkeypatch, RAWDEV_SIM_MEMORY="4M")
    keeper, other = make_pool(KEEP_ALL), make_pool()
    x = alloc(keeper, 1536 * KiB)
    ok(sim.cuMemFreeAsync(x, 0))
    ok(sim.cuCtxSynchronize())
    assert reserved(keeper) == GRANULE and used(keeper) == 0   # cached by its threshold
    y = alloc(other, 3 * MiB)                             # needs 4 MiB: only after keeper's empty segment goes
    assert reserved(keeper) == 0 and segments(other) == [(y, 4 * MiB)]
    assert ok(sim.cuMemGetInfo()) == (0, 4 * MiB)


# ------------------------------------------------------------------------------------ trimming
def test_trim_releases_only_entirely_free_segments():
    pool, s, s2 = make_pool(KEEP_ALL), ok(sim.cuStreamCreate(0)), ok(sim.cuStreamCreate(1))
    a, b, c = alloc(pool, 1536 * KiB, s), alloc(pool, 1536 * KiB, s), alloc(pool, 5 * MiB, s)
    seg = {p: segment_of(pool, p)[0] for p in (a, b, c)}
    assert sorted(seg.values()) == segments(pool) and reserved(pool) == 10 * MiB
    d = alloc(pool, 256 * KiB, s)                        # best fit: the 512 KiB tail of a's or b's segment
    assert seg[a] in segment_of(pool, d) or seg[b] in segment_of(pool, d)
    for p in (a, c):
        ok(sim.cuMemFreeAsync(p, s))
    ok(sim.cuMemFreeAsync(b, s2))                        # queued on s2, which nothing runs yet
    ok(sim.cuStreamSynchronize(s))
    home_of_d = segment_of(pool, d)[0]
    empty = [seg[p] for p in (a, c) if seg[p] != home_of_d]
    # never below minBytesToKeep: dropping c's 6 MiB segment leaves exactly 4 MiB
    ok(sim.cuMemPoolTrimTo(pool, 4 * MiB))
    assert seg[c] not in segments(pool) and reserved(pool) == 4 * MiB
    ok(sim.cuMemPoolTrimTo(pool, 0))
    # left: d's segment (live block) and b's (its free is still pending); every empty one went
    assert segments(pool) == sorted({home_of_d, seg[b]}) and not set(empty) & set(segments(pool))
    ok(sim.cuStreamSynchronize(s2))                      # b's free runs; threshold keeps the memory
    assert seg[b] in segments(pool)
    ok(sim.cuMemPoolTrimTo(pool, 0))
    assert segments(pool) == [home_of_d] and reserved(pool) == GRANULE
    check_invariants(pool)


def test_release_threshold_at_sync_points():
    pool, s = make_pool(3 * MiB), ok(sim.cuStreamCreate(0))
    p = [alloc(pool, 1536 * KiB, s) for _ in range(3)]   # three 2 MiB segments
    assert reserved(pool) == 6 * MiB
    for x in p:
        ok(sim.cuMemFreeAsync(x, s))
    assert reserved(pool) == 6 * MiB                     # frees queued, nothing synchronized
    ok(sim.cuStreamSynchronize(s))
    assert reserved(pool) == 2 * MiB                     # down to floor(threshold, 2 MiB) = 2 MiB


def test_destroyed_pool_gives_segments_back_as_blocks_go():
    pool, s = make_pool(KEEP_ALL), ok(sim.cuStreamCreate(0))
    a, b = alloc(pool, 6 * MiB, s), alloc(pool, 6 * MiB, s)   # two full 6 MiB segments
    ok(sim.cuMemFreeAsync(a, s))
    ok(sim.cuMemPoolDestroy(pool))
    mem = sim.device_memory(0)
    assert len(mem.mappings()) == 2                      # a's free has not run yet
    ok(sim.cuStreamSynchronize(s))
    assert [n for _, n in mem.mappings()] == [6 * MiB]
    ok(sim.cuMemFreeAsync(b, s))
    ok(sim.cuStreamSynchronize(s))
    assert mem.mappings() == [] and ok(sim.cuMemGetInfo())[0] == 4 << 30


# --------------------------------------------------------------------------- bounds per block
def _saxpy():
    try:
        from rawdev.sim.ptx import PtxModule  # noqa: F401
    except ImportError as e:
        pytest.skip(f"PTX interpreter not available: {e}")
    text = (Path(__file__).resolve().parents[1] / "ptx" / "testkernels.ptx").read_text()
    mod = ok(sim.cuModuleLoadDataEx(text.encode() + b"\0", 0, [], []))
    return ok(sim.cuModuleGetFunction(mod, b"saxpy"))


def test_reading_past_a_pool_block_faults_inside_its_segment():
    saxpy = _saxpy()
    pool, s, n = make_pool(), ok(sim.cuStreamCreate(0)), 256
    x, y = alloc(pool, 4 * n, s), alloc(pool, 4 * n, s)  # 1024 bytes each, packed: y right after x
    assert y == x + 4 * n
    seg = segment_of(pool, y, 4 * n)[0]
    assert seg[0] <= y + 4 * n < seg[0] + seg[1]         # the byte after y is inside the same segment (free)
    ones = np.ones(n, np.float32)
    ok(sim.cuMemcpyHtoD(x, ones.ctypes.data, 4 * n))
    ok(sim.cuMemcpyHtoD(y, ones.ctypes.data, 4 * n))
    # a copy one element past y's end is refused on the host side
    assert sim.cuMemcpyHtoD(y, np.ones(n + 1, np.float32).ctypes.data, 4 * (n + 1))[0] == R.CUDA_ERROR_INVALID_VALUE
    assert "past the end of the 1024-byte allocation" in sim.last_error_detail()

    def run(count):
        args = (ctypes.c_uint64(y), ctypes.c_uint64(x), ctypes.c_float(2.0), ctypes.c_int64(count))
        arr = (ctypes.c_void_p * 4)(*[ctypes.addressof(a) for a in args])
        return sim.cuLaunchKernel(saxpy, 1, 1, 1, 512, 1, 1, 0, s, ctypes.addressof(arr), 0)

    ok(run(n))
    ok(sim.cuStreamSynchronize(s))
    out = np.zeros(n, np.float32)
    ok(sim.cuMemcpyDtoH(out.ctypes.data, y, 4 * n))
    assert (out == 3.0).all()
    # one element more: x[n] is y[0] (a live block: no fault, as on a GPU), y[n] is free segment space
    ok(run(n + 1))
    assert sim.cuStreamSynchronize(s) == (R.CUDA_ERROR_ILLEGAL_ADDRESS,)
    detail = sim.last_error_detail()
    assert "saxpy" in detail and "thread" in detail.lower() and f"0x{y + 4 * n:x}" in detail
    assert "past the end of the 1024-byte allocation" in detail


def test_a_block_reused_twice_before_its_frees_ran_keeps_each_owners_size_in_stream_order():
    pool, s = make_pool(KEEP_ALL), ok(sim.cuStreamCreate(1))
    a = alloc(pool, 32, s)
    ok(sim.cuMemFreeAsync(a, s))
    b = alloc(pool, 64, s)                               # larger than a, inside its 256-byte footprint
    ok(sim.cuMemsetD8Async(b, 1, 64, s))                 # runs after a's free hands the block to b
    ok(sim.cuMemFreeAsync(b, s))
    c = alloc(pool, 32, s)
    ok(sim.cuMemsetD8Async(c, 2, 32, s))
    assert a == b == c
    ok(sim.cuStreamSynchronize(s))                       # b's 64-byte memset must not fault
    assert sim.peek(c, 32) == b"\2" * 32
    assert sim.cuMemsetD8Async(c + 32, 0, 1, s)[0] == R.CUDA_ERROR_INVALID_VALUE
    assert used(pool) == 32
