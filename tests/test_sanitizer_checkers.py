"""The sanitizer's checkers on the interpreter (PtxModule.launch(..., sanitize=...)): every planted bug of
tests/data/ptx/sanitizer_fixtures.ptx is caught, at every launch shape tried, naming both threads of a race; its
clean twin reports nothing and computes the float64 reference's result; without checkers nothing is checked."""
import struct
from pathlib import Path

import numpy as np
import pytest
from rawdev.sim.memory import DeviceMemory
from rawdev.sim.ptx import PtxModule
from rawdev.sim.ptx.interp import SanitizerFinding

FIXTURES = Path(__file__).resolve().parent / "data" / "ptx" / "sanitizer_fixtures.ptx"
FMT = {"u64": "<Q", "u32": "<I"}
ALL = frozenset({"initcheck", "racecheck", "synccheck"})


@pytest.fixture(scope="module")
def mod():
    return PtxModule(FIXTURES.read_text())


def launch(mod, mem, name, grid, block, *vals, tools=ALL):
    e = mod.entries[name]
    buf = bytearray(e.param_size)
    for p, v in zip(e.params, vals):
        struct.pack_into(FMT[p.type], buf, p.offset, v)
    return mod.launch(name, grid, block, params=bytes(buf), memory=mem, sanitize=tools)


def pool_memory():
    """Device memory with initcheck's shadow on and a mapped range to place blocks in, as the driver's pools do."""
    mem = DeviceMemory(1 << 26, fresh_fill=0xFF)
    mem.track_writes(True)
    base = mem.reserve_address(1 << 24)
    mem.map(base, 1 << 24)
    nxt = [base]

    def alloc(nbytes):
        addr = nxt[0]
        nxt[0] += -(-nbytes // 256) * 256
        return mem.alloc_at(addr, nbytes)
    return mem, alloc


def put(mem, addr, arr):
    mem.write(addr, np.ascontiguousarray(arr).tobytes())


def get(mem, addr, n, dt=np.float32):
    return np.frombuffer(mem.read(addr, n * np.dtype(dt).itemsize), dt)


# ------------------------------------------------------------------------------------------- racecheck
@pytest.mark.parametrize("grid,block", [(1, 32), (2, 64), (3, 128), (2, 256)])
def test_a_reduction_missing_its_barrier_is_a_shared_memory_race(mod, grid, block):
    mem, alloc = pool_memory()
    x, out = alloc(grid * block * 4), alloc(grid * 4)
    put(mem, x, np.random.default_rng().standard_normal(grid * block).astype(np.float32))
    with pytest.raises(SanitizerFinding, match=r"racecheck: read-after-write hazard in kernel sum_nobar, thread "
                                               r"\(\d+,0,0\) of block \(0,0,0\), at PTX line \d+ `ld\.shared\.f32 .*"
                                               r"shared memory offset 0x[0-9a-f]+, written by thread \(\d+,0,0\) of "
                                               r"block \(0,0,0\) at PTX line \d+ `st\.shared\.f32") as ei:
        launch(mod, mem, "sum_nobar", (grid,), (block,), out, x)
    assert ei.value.space == "racecheck" and ei.value.code_name == "CUDA_ERROR_LAUNCH_FAILED"


@pytest.mark.parametrize("grid,block", [(1, 32), (2, 64), (3, 128), (2, 256)])
def test_the_reduction_with_its_barriers_is_clean_and_right(mod, grid, block):
    mem, alloc = pool_memory()
    x, out = alloc(grid * block * 4), alloc(grid * 4)
    xs = np.random.default_rng().standard_normal(grid * block).astype(np.float32)
    put(mem, x, xs)
    launch(mod, mem, "sum_ok", (grid,), (block,), out, x)
    ref = xs.astype(np.float64).reshape(grid, block).sum(axis=1)
    np.testing.assert_allclose(get(mem, out, grid), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("grid,block", [(1, 2), (1, 64), (4, 32)])
def test_threads_storing_to_one_global_word_race(mod, grid, block):
    mem, alloc = pool_memory()
    out = alloc(4)
    with pytest.raises(SanitizerFinding, match=r"write-after-write hazard in kernel last_wins, thread .* writes 4 "
                                               r"byte\(s\) at 0x[0-9a-f]+ \(0x[0-9a-f]+ is 0 bytes into the 4-byte "
                                               r"allocation .*, written by thread \(0,0,0\) of block \(0,0,0\)"):
        launch(mod, mem, "last_wins", (grid,), (block,), out)


def test_a_shift_in_place_races_across_threads_and_out_of_place_is_clean(mod):
    mem, alloc = pool_memory()
    n = 200
    x, y = alloc(n * 4), alloc(n * 4)
    xs = np.random.default_rng().standard_normal(n).astype(np.float32)
    put(mem, x, xs)
    put(mem, y, np.zeros(n, np.float32))
    launch(mod, mem, "shift_right", (4,), (64,), y, x, n)
    np.testing.assert_array_equal(get(mem, y, n)[1:], xs[:-1])
    with pytest.raises(SanitizerFinding, match=r"write-after-read hazard in kernel shift_right, thread \(1,0,0\) of "
                                               r"block \(0,0,0\).* read by thread \(2,0,0\) of block \(0,0,0\)"):
        launch(mod, mem, "shift_right", (4,), (64,), x, x, n)


def test_threads_reading_the_same_global_bytes_do_not_race(mod):
    mem, alloc = pool_memory()
    n = 300
    x, y = alloc((n + 1) * 4), alloc(n * 4)
    xs = np.random.default_rng().standard_normal(n + 1).astype(np.float32)
    put(mem, x, xs)
    launch(mod, mem, "pairs", (3,), (128,), y, x, n)
    np.testing.assert_allclose(get(mem, y, n), xs[:-1].astype(np.float64) + xs[1:], rtol=1e-6)


@pytest.mark.parametrize("blocks", [2, 5, 16])
def test_the_last_block_pattern_is_ordered_by_its_atomic(mod, blocks):
    mem, alloc = pool_memory()
    partial, count, out = alloc(blocks * 4), alloc(4), alloc(4)
    put(mem, count, np.zeros(1, np.uint32))
    launch(mod, mem, "last_block", (blocks,), (32,), partial, count, out)
    assert get(mem, out, 1)[0] == sum(range(blocks))


# ------------------------------------------------------------------------------------------- initcheck
def test_reading_a_fresh_block_is_an_uninitialized_read(mod):
    mem, alloc = pool_memory()
    n = 256
    x, y = alloc(n * 4), alloc(n * 4)
    with pytest.raises(SanitizerFinding, match=r"initcheck: uninitialized read in kernel twice, thread \(0,0,0\) of "
                                               r"block \(0,0,0\), at PTX line \d+ `ld\.global\.f32 .*4-byte global "
                                               r"load at 0x[0-9a-f]+ reads memory nothing wrote since it was "
                                               rf"allocated .*0 bytes into the {n * 4}-byte allocation") as ei:
        launch(mod, mem, "twice", (2,), (128,), y, x, n)
    assert ei.value.address == x


def test_the_first_unwritten_element_is_the_one_reported(mod):
    mem, alloc = pool_memory()
    n = 256
    k = int(np.random.default_rng().integers(1, n))
    x, y = alloc(n * 4), alloc(n * 4)
    put(mem, x, np.ones(k, np.float32))          # elements [0, k) written by a copy, the rest never
    with pytest.raises(SanitizerFinding, match=rf"thread \({k % 128},0,0\) of block \({k // 128},0,0\)") as ei:
        launch(mod, mem, "twice", (2,), (128,), y, x, n)
    assert ei.value.address == x + 4 * k


def test_what_a_copy_memset_or_kernel_wrote_reads_clean(mod):
    mem, alloc = pool_memory()
    n = 256
    x, y, z = alloc(n * 4), alloc(n * 4), alloc(n * 4)
    xs = np.random.default_rng().standard_normal(n).astype(np.float32)
    put(mem, x, xs)
    launch(mod, mem, "twice", (2,), (128,), y, x, n)       # y: written by a kernel
    launch(mod, mem, "twice", (2,), (128,), z, y, n)
    np.testing.assert_array_equal(get(mem, z, n), xs * 4)
    mem.fill(x, 0, n * 4)                                   # memset
    launch(mod, mem, "twice", (2,), (128,), z, x, n)


def test_an_atomic_on_an_accumulator_nobody_zeroed_is_an_uninitialized_read(mod):
    mem, alloc = pool_memory()
    n = 100
    x, acc = alloc(n * 4), alloc(4)
    xs = np.random.default_rng().standard_normal(n).astype(np.float32)
    put(mem, x, xs)
    with pytest.raises(SanitizerFinding, match=r"uninitialized read in kernel accumulate.*`red\.global\.add\.f32 "
                                               r".*4-byte global atomic"):
        launch(mod, mem, "accumulate", (1,), (128,), acc, x, n)
    put(mem, acc, np.zeros(1, np.float32))
    launch(mod, mem, "accumulate", (1,), (128,), acc, x, n)
    np.testing.assert_allclose(get(mem, acc, 1)[0], xs.astype(np.float64).sum(), rtol=1e-5)


def test_blocks_from_before_the_checker_count_as_written(mod):
    mem = DeviceMemory(1 << 24)
    x, y = mem.alloc(1024), mem.alloc(1024)      # no shadow: allocated without tracking
    launch(mod, mem, "twice", (1,), (256,), y, x, 256)


# ------------------------------------------------------------------------------------------- synccheck
@pytest.mark.parametrize("live", [1, 7, 20, 31, 40])
def test_a_full_mask_shuffle_after_some_lanes_exited_is_caught(mod, live):
    mem, alloc = pool_memory()
    x, y = alloc(64 * 4), alloc(64 * 4)
    put(mem, x, np.arange(64, dtype=np.float32))
    gone = f"{live % 32}-31" if live % 32 < 31 else "31"
    with pytest.raises(SanitizerFinding, match=rf"synccheck: invalid warp synchronization in kernel swap_pairs, "
                                               rf"thread \({live // 32 * 32},0,0\) .*`shfl\.sync\.bfly\.b32 .*"
                                               rf"membermask 0xffffffff names lane\(s\) {gone} of the warp"):
        launch(mod, mem, "swap_pairs", (1,), (64,), y, x, live, 0xFFFFFFFF)


@pytest.mark.parametrize("live", [2, 20, 32, 64])
def test_a_shuffle_over_the_live_lanes_is_clean(mod, live):
    mem, alloc = pool_memory()
    x, y = alloc(64 * 4), alloc(64 * 4)
    xs = np.random.default_rng().standard_normal(64).astype(np.float32)
    put(mem, x, xs)
    put(mem, y, np.zeros(64, np.float32))
    mask = (1 << (live % 32)) - 1 if live % 32 else 0xFFFFFFFF
    launch(mod, mem, "swap_pairs", (1,), (64,), y, x, live, mask)
    idx = np.arange(live)
    np.testing.assert_allclose(get(mem, y, live), xs[idx].astype(np.float64) + xs[idx ^ 1], rtol=1e-6)


def test_a_vote_in_a_divergent_branch_names_the_lanes_that_branched_away(mod):
    mem, alloc = pool_memory()
    x, y = alloc(64 * 4), alloc(64 * 4)
    put(mem, x, np.random.default_rng().standard_normal(64).astype(np.float32))
    with pytest.raises(SanitizerFinding, match=r"vote\.sync\.all\.pred .*names lane\(s\) 1, 3, 5, .*, 31 of the warp"):
        launch(mod, mem, "even_vote", (1,), (64,), y, x, 0xFFFFFFFF)
    launch(mod, mem, "even_vote", (1,), (64,), y, x, 0x55555555)


def test_a_mask_that_leaves_out_the_executing_lane_is_caught(mod):
    mem, alloc = pool_memory()
    x, y = alloc(64 * 4), alloc(64 * 4)
    put(mem, x, np.zeros(64, np.float32))
    with pytest.raises(SanitizerFinding, match=r"membermask 0x0000fffe does not name the executing lane 0"):
        launch(mod, mem, "swap_pairs", (1,), (64,), y, x, 16, 0xFFFE)


# ------------------------------------------------------------------------------------------- off
def test_without_checkers_the_plain_context_runs(mod, monkeypatch):
    from rawdev.sim.ptx import checkers
    made = []
    monkeypatch.setattr(checkers.CheckedLaunch, "context", lambda self, *a: made.append(a))
    mem, alloc = pool_memory()
    x, y = alloc(64 * 4), alloc(64 * 4)
    for tools in (frozenset(), frozenset({"memcheck"})):
        launch(mod, mem, "sum_nobar", (1,), (64,), y, x, tools=tools)    # the race and the fresh input go unseen
        launch(mod, mem, "swap_pairs", (1,), (64,), y, x, 3, 0xFFFFFFFF, tools=tools)
    assert made == []


# ------------------------------------------------------------------------------------------- __syncwarp
def test_a_warp_reduction_ordered_by_syncwarp_is_clean_and_right(mod):
    mem, alloc = pool_memory()
    x, out = alloc(32 * 4), alloc(4)
    xs = np.random.default_rng().standard_normal(32).astype(np.float32)
    put(mem, x, xs)
    launch(mod, mem, "warp_sum", (1,), (32,), out, x, 32, 0xFFFFFFFF)
    np.testing.assert_allclose(get(mem, out, 1)[0], xs.astype(np.float64).sum(), rtol=1e-5, atol=1e-5)
    launch(mod, mem, "warp_sum", (2,), (32,), out, x, 32, 0xFFFFFFFF)   # two blocks store the same sum to out[0]


def test_threads_storing_the_bytes_already_there_do_not_race(mod):
    mem, alloc = pool_memory()
    out = alloc(4)
    put(mem, out, np.zeros(1, np.uint32))
    launch(mod, mem, "last_wins", (1,), (1,), out)        # thread 0 stores 0: the same bytes
    with pytest.raises(SanitizerFinding, match=r"write-after-write hazard in kernel last_wins, thread \(1,0,0\)"):
        launch(mod, mem, "last_wins", (1,), (2,), out)    # thread 1 stores 1 over thread 0's 0


def test_a_warp_reduction_missing_its_syncwarp_is_a_race_within_the_warp(mod):
    mem, alloc = pool_memory()
    x, out = alloc(32 * 4), alloc(4)
    put(mem, x, np.random.default_rng().standard_normal(32).astype(np.float32))
    with pytest.raises(SanitizerFinding, match=r"racecheck: read-after-write hazard in kernel warp_sum_nosync.* "
                                               r"written by thread \(\d+,0,0\) of block \(0,0,0\)"):
        launch(mod, mem, "warp_sum_nosync", (1,), (32,), out, x)


def test_a_syncwarp_naming_exited_lanes_is_caught(mod):
    mem, alloc = pool_memory()
    x, out = alloc(32 * 4), alloc(4)
    put(mem, x, np.zeros(32, np.float32))
    with pytest.raises(SanitizerFinding, match=r"synccheck: .* kernel warp_sum, thread \(0,0,0\) .*`bar\.warp\.sync "
                                               r"%r3;`: membermask 0xffffffff names lane\(s\) 24-31"):
        launch(mod, mem, "warp_sum", (1,), (32,), out, x, 24, 0xFFFFFFFF)
