import numpy as np
import pytest
from rawdev.sim import memory as simmem
from rawdev.sim.memory import (
    BASE_ADDRESS,
    DeviceMemory,
    SegmentAllocator,
    SimIllegalAddress,
    SimInvalidValue,
    SimMisalignedAddress,
    SimOutOfMemory,
)

MiB = 1 << 20


def test_alloc_alignment_and_base():
    m = DeviceMemory(1 << 20)
    a = m.alloc(100)
    b = m.alloc(1000, align=4096)
    assert a >= BASE_ADDRESS and a % 256 == 0
    assert b % 4096 == 0 and b >= a + 100
    assert m.find(a) == (a, 100)
    assert m.find(a + 99) == (a, 100)
    assert m.find(a + 100) is None
    assert m.find(b + 5) == (b, 1000)
    assert m.allocations() == [(a, 100), (b, 1000)]


def test_capacity_and_oom():
    m = DeviceMemory(4096)
    a = m.alloc(2048)
    assert m.used == 2048 and m.free_bytes == 2048
    m.alloc(1)  # charged 256
    assert m.used == 2048 + 256
    with pytest.raises(SimOutOfMemory) as ei:
        m.alloc(2048)
    assert "2048" in str(ei.value)
    m.free(a)
    assert m.used == 256
    m.alloc(2048)


def test_invalid_values():
    m = DeviceMemory(1 << 20)
    a = m.alloc(64)
    with pytest.raises(SimInvalidValue):
        m.free(a + 4)
    with pytest.raises(SimInvalidValue):
        m.alloc(0)
    m.free(a)
    with pytest.raises(SimInvalidValue):
        m.free(a)
    with pytest.raises(SimInvalidValue):
        m.read(a, 4)


def test_read_write_roundtrip_and_checks():
    m = DeviceMemory(1 << 20)
    a = m.alloc(1024)
    data = np.random.default_rng(0).integers(0, 256, 1024, dtype=np.uint8).tobytes()
    m.write(a, data)
    assert m.read(a, 1024) == data
    assert m.read(a + 10, 5) == data[10:15]
    m.write(a + 1000, memoryview(b"abcd"))
    assert m.read(a + 1000, 4) == b"abcd"
    with pytest.raises(SimInvalidValue) as ei:
        m.read(a + 1020, 8)
    assert "past the end" in str(ei.value)
    with pytest.raises(SimInvalidValue):
        m.write(a - 4, b"1234")
    v = m.view(a, 16)
    v[:] = 7
    assert m.read(a, 16) == bytes([7]) * 16
    m.fill(a, 0x3F800000, 4, np.uint32)
    assert np.frombuffer(m.read(a, 16), np.float32).tolist() == [1.0] * 4


def test_nearest_messages():
    m = DeviceMemory(1 << 20)
    a = m.alloc(1024)
    b = m.alloc(512)
    assert m.nearest(a + 1028) == f"0x{a + 1028:x} is 4 bytes past the end of the 1024-byte allocation at 0x{a:x}"
    assert "bytes into the 1024-byte allocation" in m.nearest(a + 8)
    assert m.nearest(a - 16) == f"0x{a - 16:x} is 16 bytes before the 1024-byte allocation at 0x{a:x}"
    assert "512-byte allocation" in m.nearest(b + 600)
    assert "null" in m.nearest(0)
    m.free(b)
    assert "freed 512-byte allocation" in m.nearest(b + 8)


def test_vector_load_store_fast_and_slow_path():
    m = DeviceMemory(1 << 20)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(257).astype(np.float32)
    y = rng.standard_normal(33).astype(np.float32)
    a = m.alloc(x.nbytes)
    b = m.alloc(y.nbytes)
    m.write(a, x.tobytes())
    m.write(b, y.tobytes())
    idx = rng.integers(0, 257, 1000)
    addrs = np.uint64(a) + idx.astype(np.uint64) * np.uint64(4)
    np.testing.assert_array_equal(m.load(addrs, np.float32), x[idx])
    # two allocations in one vector
    idy = rng.integers(0, 33, 1000)
    mix = np.where(np.arange(1000) % 2 == 0, addrs, np.uint64(b) + idy.astype(np.uint64) * np.uint64(4))
    got = m.load(mix, np.float32)
    exp = np.where(np.arange(1000) % 2 == 0, x[idx], y[idy])
    np.testing.assert_array_equal(got, exp)
    # store to both
    vals = rng.standard_normal(1000).astype(np.float32)
    lanes = np.arange(0, 66)
    tgt = np.concatenate([np.uint64(a) + np.arange(33, dtype=np.uint64) * np.uint64(4),
                          np.uint64(b) + np.arange(33, dtype=np.uint64) * np.uint64(4)])
    m.store(tgt, vals[lanes], np.float32)
    np.testing.assert_array_equal(np.frombuffer(m.read(a, 33 * 4), np.float32), vals[:33])
    np.testing.assert_array_equal(np.frombuffer(m.read(b, 33 * 4), np.float32), vals[33:66])
    # u8 / u16 / f64
    m.store(np.array([a + 1, a + 3], np.uint64), np.array([5, 6], np.uint8), np.uint8)
    assert m.load(np.array([a + 1, a + 3], np.uint64), np.uint8).tolist() == [5, 6]
    m.store(np.array([a + 8], np.uint64), np.array([2.5]), np.float64)
    assert m.load(np.array([a + 8], np.uint64), np.float64).tolist() == [2.5]


def test_out_of_bounds_and_misaligned():
    m = DeviceMemory(1 << 20)
    a = m.alloc(1024)
    addrs = np.uint64(a) + np.arange(0, 260, dtype=np.uint64) * np.uint64(4)  # 257 elements, last 4 OOB
    with pytest.raises(SimIllegalAddress) as ei:
        m.load(addrs, np.float32)
    e = ei.value
    assert e.lane_index == 256 and e.address == a + 1024
    assert "0 bytes past the end of the 1024-byte allocation" in e.message
    with pytest.raises(SimIllegalAddress):
        m.store(addrs, np.zeros(260, np.float32), np.float32)
    with pytest.raises(SimMisalignedAddress) as ei:
        m.load(np.array([a, a + 2], np.uint64), np.float32)
    assert ei.value.lane_index == 1 and ei.value.code_name == "CUDA_ERROR_MISALIGNED_ADDRESS"
    with pytest.raises(SimIllegalAddress):
        m.load(np.array([0], np.uint64), np.float32)
    # straddling the end
    b = m.alloc(6)
    with pytest.raises(SimIllegalAddress) as ei:
        m.load(np.array([b + 4], np.uint64), np.float32)
    assert "runs 2 bytes past the end" in ei.value.message


def test_mapped_ranges_and_blocks_at_chosen_addresses():
    m = DeviceMemory(8 * MiB)
    va = m.reserve_address(16 * MiB, 2 * MiB)
    assert va % (2 * MiB) == 0 and m.used == 0                  # address space alone is free
    m.map(va, 4 * MiB)
    assert m.used == 4 * MiB and m.mappings() == [(va, 4 * MiB)] and m.allocations() == []
    with pytest.raises(SimInvalidValue, match="overlaps"):
        m.map(va + 2 * MiB, 2 * MiB)
    with pytest.raises(SimInvalidValue, match="reserved address space"):
        m.map(va + 15 * MiB, 2 * MiB)
    with pytest.raises(SimOutOfMemory):
        m.map(va + 4 * MiB, 6 * MiB)                            # 4 + 6 MiB > 8 MiB
    assert m.used == 4 * MiB
    # a mapped range is not readable by itself: only blocks are
    with pytest.raises(SimInvalidValue):
        m.read(va, 4)
    with pytest.raises(SimIllegalAddress):
        m.load(np.array([va], np.uint64), np.float32)
    a = m.alloc_at(va + 256, 1000)
    assert a == va + 256 and m.find(a + 999) == (a, 1000) and m.used == 4 * MiB   # the mapping is what is charged
    with pytest.raises(SimInvalidValue, match="overlap"):
        m.alloc_at(va + 1024, 100)
    with pytest.raises(SimInvalidValue, match="not all mapped"):
        m.alloc_at(va + 4 * MiB - 100, 200)
    with pytest.raises(SimInvalidValue, match="not all mapped"):
        m.alloc_at(va - 256, 100)
    with pytest.raises(SimIllegalAddress) as ei:                 # the next bytes are mapped but in no block
        m.load(np.array([a + 1000], np.uint64), np.uint32)
    assert "0 bytes past the end of the 1000-byte allocation" in ei.value.message
    with pytest.raises(SimInvalidValue, match="live allocation"):
        m.unmap(va)
    m.free(a)
    assert "use after free" in m.nearest(a + 8)
    b = m.alloc_at(va + 256, 512)                                # reuse: the freed record goes
    assert m.nearest(va + 256 + 600) == f"0x{va + 856:x} is 88 bytes past the end of the 512-byte allocation at 0x{b:x}"
    m.free(b)
    m.unmap(va)
    assert m.used == 0 and m.mappings() == []
    with pytest.raises(SimInvalidValue):
        m.unmap(va)
    # VA-adjacent mappings hold a block that straddles them; a plain alloc still works beside them
    m.map(va, 2 * MiB)
    m.map(va + 2 * MiB, 2 * MiB)
    c = m.alloc_at(va + MiB, 2 * MiB)
    m.write(c + 2 * MiB - 4, b"abcd")
    assert m.read(c + 2 * MiB - 4, 4) == b"abcd"
    d = m.alloc(100)
    assert d > va + 16 * MiB and m.used == 4 * MiB + 256


def test_freed_records_survive_reuse_of_an_address():
    m = DeviceMemory(8 * MiB)
    va = m.reserve_address(4 * MiB)
    m.map(va, 2 * MiB)
    for i in range(simmem._FREED_KEEP + 10):                     # more frees than are remembered, same addresses
        m.free(m.alloc_at(va + 4096 * (i % 3), 1000))
    assert "use after free" in m.nearest(va + 4096 + 10)
    assert len(m._freed) == len(m._freed_bases) <= simmem._FREED_KEEP


def test_segment_allocator_best_fit_extension_and_release():
    m = DeviceMemory(64 * MiB)
    sa = SegmentAllocator(m, granule=2 * MiB, align=256, window=32 * MiB)
    a = sa.alloc(1000)
    assert a % (2 * MiB) == 0 and sa.segments() == [(a, 2 * MiB, 1)] and sa.reserved == 2 * MiB
    b = sa.alloc(3 * MiB)                                        # the free tail plus one more granule
    assert b == a + 1024 and sa.segments() == [(a, 2 * MiB, 2), (a + 2 * MiB, 2 * MiB, 1)]
    c = sa.alloc(100, grow=False)
    assert c == b + 3 * MiB and sa.alloc(1 * MiB, grow=False) is None
    assert sa.release(0) == 0                                    # no segment is free of blocks
    sa.free(b)
    assert sa.segments() == [(a, 2 * MiB, 1), (a + 2 * MiB, 2 * MiB, 1)]   # c is in the second one
    sa.free(c)
    assert sa.release(0) == 2 * MiB and sa.segments() == [(a, 2 * MiB, 1)]
    assert sa.free_ranges() == [(a + 1024, 2 * MiB - 1024)] and sa.largest_free() == 2 * MiB - 1024
    # a fresh segment keeps an unmapped granule from its neighbours; a second window when the first is full
    d = sa.alloc(20 * MiB)
    assert d == a + 4 * MiB and sa.reserved == 22 * MiB and len(sa.windows) == 1
    e = sa.alloc(20 * MiB)
    assert len(sa.windows) == 2 and e == sa.windows[1][0] and sa.reserved == 42 * MiB
    assert m.used == 42 * MiB
    with pytest.raises(SimOutOfMemory):
        sa.alloc(30 * MiB)
    assert sa.reserved == 42 * MiB and len(sa.segments()) == 3
    with pytest.raises(SimInvalidValue):
        sa.free(d + 256)
    for p in (a, d, e):
        sa.free(p)
    # largest first, never below keep: one 20 MiB segment and the 2 MiB one go, the other 20 MiB one stays
    assert sa.release(20 * MiB) == 22 * MiB and sa.reserved == 20 * MiB
    assert sa.release(0) == 20 * MiB and m.used == 0 and m.mappings() == []


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.uint64, np.float64])
def test_atomic_add_collisions_lane_order(dtype):
    m = DeviceMemory(1 << 20)
    rng = np.random.default_rng(2)
    nslots = 7
    a = m.alloc(nslots * np.dtype(dtype).itemsize)
    init = (rng.integers(1, 50, nslots)).astype(dtype)
    m.write(a, init.tobytes())
    n = 3001
    slot = rng.integers(0, nslots, n)
    vals = rng.integers(1, 100, n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        vals = (rng.standard_normal(n) * 10).astype(dtype)
    addrs = np.uint64(a) + slot.astype(np.uint64) * np.uint64(np.dtype(dtype).itemsize)
    old = m.atomic("add", addrs, vals, dtype)
    # sequential reference
    mem = init.copy()
    exp_old = np.empty(n, dtype)
    for i in range(n):
        exp_old[i] = mem[slot[i]]
        mem[slot[i]] = dtype(mem[slot[i]] + vals[i])
    np.testing.assert_array_equal(old, exp_old)
    np.testing.assert_array_equal(np.frombuffer(m.read(a, init.nbytes), dtype), mem)


def test_atomic_one_hot_address_and_no_return():
    m = DeviceMemory(1 << 20)
    a = m.alloc(16)
    n = 70000
    vals = np.ones(n, np.float32)
    old = m.atomic("add", np.full(n, a, np.uint64), vals, np.float32)
    assert old[0] == 0 and old[-1] == n - 1
    assert np.frombuffer(m.read(a, 4), np.float32)[0] == n
    m.atomic("add", np.full(n, a + 4, np.uint64), np.ones(n, np.uint32), np.uint32, return_old=False)
    assert np.frombuffer(m.read(a + 4, 4), np.uint32)[0] == n


@pytest.mark.parametrize("op", ["min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec"])
def test_atomic_ops_sequential(op):
    m = DeviceMemory(1 << 20)
    rng = np.random.default_rng(3)
    nslots = 5
    a = m.alloc(nslots * 4)
    init = rng.integers(0, 20, nslots).astype(np.uint32)
    m.write(a, init.tobytes())
    n = 200
    slot = rng.integers(0, nslots, n)
    vals = rng.integers(0, 20, n).astype(np.uint32)
    cmp = rng.integers(0, 20, n).astype(np.uint32)
    addrs = np.uint64(a) + slot.astype(np.uint64) * np.uint64(4)
    old = m.atomic(op, addrs, vals, np.uint32, compare=cmp if op == "cas" else None)
    mem = init.astype(np.int64)
    exp_old = np.empty(n, np.int64)
    for i in range(n):
        s, v, cur = slot[i], int(vals[i]), int(mem[slot[i]])
        exp_old[i] = cur
        new = {"min": min(cur, v), "max": max(cur, v), "and": cur & v, "or": cur | v, "xor": cur ^ v,
               "exch": v, "cas": v if cur == int(cmp[i]) else cur,
               "inc": 0 if cur >= v else cur + 1,
               "dec": v if (cur == 0 or cur > v) else cur - 1}[op]
        mem[s] = new
    np.testing.assert_array_equal(old.astype(np.int64), exp_old)
    np.testing.assert_array_equal(np.frombuffer(m.read(a, nslots * 4), np.uint32).astype(np.int64), mem)


def test_atomic_out_of_bounds():
    m = DeviceMemory(1 << 20)
    a = m.alloc(8)
    with pytest.raises(SimIllegalAddress) as ei:
        m.atomic("add", np.array([a, a + 8], np.uint64), np.ones(2, np.float32), np.float32)
    assert ei.value.lane_index == 1


def test_the_tables_kept_up_to_date_by_each_change_equal_tables_built_afresh():
    """alloc, alloc_at (pool blocks inside a mapping, out of address order), resize (a new buffer) and free each
    update the search table and the native engine's rows by one row; after every step both equal what the block
    dict gives when built from nothing."""
    from _refs import rng
    g = rng()
    m = DeviceMemory(64 * MiB, fresh_fill=0xFF)
    va = m.reserve_address(8 * MiB)
    m.map(va, 8 * MiB)
    m._tables()
    m.native_rows()
    live = []
    for step in range(300):
        op = int(g.integers(0, 4)) if live else 0
        if op == 0:
            live.append(m.alloc(int(g.integers(1, 5000))))
        elif op == 1:
            at = va + int(g.integers(0, 2000)) * 4096
            try:
                live.append(m.alloc_at(at, int(g.integers(1, 4096))))
            except SimInvalidValue:
                pass   # overlaps a live block
        elif op == 2:
            a = live[int(g.integers(0, len(live)))]
            size = m.find(a)[1]
            if a >= va and a < va + 8 * MiB:
                m.resize(a, int(g.integers(1, 4096)), fresh=bool(g.integers(0, 2)))
            else:
                m.resize(a, int(g.integers(1, size + 1)))
        else:
            m.free(live.pop(int(g.integers(0, len(live)))))
        bases, ends = m._tables()
        rows, n, bufs, ptr = m.native_rows()
        assert ptr == rows.ctypes.data
        want = sorted((b, b + s) for b, s in m.allocations())
        assert [(int(b), int(e)) for b, e in zip(bases, ends)] == want, step
        assert n == len(want) and [(int(r[0]), int(r[1])) for r in rows] == want, step
        assert [int(r[2]) for r in rows] == [m._allocs[b][1].ctypes.data for b, _ in want], step
        assert all(buf is m._allocs[b][1] for buf, (b, _) in zip(bufs, want)), step
