"""rawdev.cuda memory API on raw DeviceBuffers: figures vs the driver pool, owners, summary, snapshot, history,
pointer_info, peek/poke, the OOM report, the leak check."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import rawdev.cuda as C
from rawdev.cuda import memory as M
from rawdev.errors import OutOfMemoryError
from rawdev.runtime import memory as rm
from rawdev.runtime import reset_for_tests

from _refs import HANG_GUARD_S, pool_used_agrees

HERE = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def _no_history():
    yield
    M.record_history(False)
    M.clear_history()


def _sync(dev):
    dev.synchronize()
    return dev


def _agrees_with_pool(dev, n):
    """rawdev's allocated bytes vs the pool's USED_MEM_CURRENT (see pool_used_agrees)."""
    return pool_used_agrees(dev, n, len(dev.allocator.live))


def test_figures_agree_with_the_pool(dev):
    base = C.memory_allocated()
    a = rm.DeviceBuffer.alloc(dev, 1000, owner="a")
    b = rm.DeviceBuffer.alloc(dev, 4096, owner="b")
    assert C.memory_allocated() == base + 5096
    _sync(dev)
    assert _agrees_with_pool(dev, C.memory_allocated())
    assert C.memory_reserved() == dev.pool_attribute("reserved") >= C.memory_allocated()
    assert C.max_memory_allocated() >= base + 5096
    b.free()
    _sync(dev)
    assert C.memory_allocated() == base + 1000 and _agrees_with_pool(dev, base + 1000)
    assert C.max_memory_allocated() >= base + 5096
    C.reset_peak_memory_stats()
    assert C.max_memory_allocated() == C.memory_allocated()
    assert C.max_memory_reserved() == C.memory_reserved()
    del a
    _sync(dev)   # the finalizer's queued free lands at the next safe point
    assert C.memory_allocated() == base


def test_memory_stats_keys(dev):
    a = rm.DeviceBuffer.alloc(dev, 3000, owner="a")
    _sync(dev)
    s = C.memory_stats()
    for k in ("allocated_bytes.all.current", "allocated_bytes.all.peak", "allocated_bytes.all.allocated",
              "allocated_bytes.all.freed", "reserved_bytes.all.current", "reserved_bytes.all.peak",
              "active_bytes.all.current", "active_bytes.all.peak", "allocation.all.current", "allocation.all.peak",
              "allocation.all.allocated", "allocation.all.freed", "num_ooms"):
        assert k in s, k
    assert s["allocated_bytes.all.current"] == C.memory_allocated() == s["active_bytes.all.current"]
    assert s["reserved_bytes.all.current"] == dev.pool_attribute("reserved")
    assert s["allocation.all.current"] == len(dev.allocator.live)
    free, total = C.mem_get_info()
    assert 0 < free <= total
    del a


def test_empty_cache_trims_the_pool(driver, dev):
    bufs = [rm.DeviceBuffer.alloc(dev, 3 << 20, owner=f"x{i}") for i in range(3)]
    _sync(dev)
    held = C.memory_reserved()
    for b in bufs:
        b.free()
    _sync(dev)
    assert C.memory_reserved() == held      # a caching pool keeps freed memory
    C.empty_cache()
    assert C.memory_reserved() < held
    if driver == "sim":
        assert C.memory_reserved() == 0


def test_default_owner_is_the_users_line(dev):
    b = rm.DeviceBuffer.alloc(dev, 256); line = sys._getframe().f_lineno  # noqa: E702
    assert b.owner == f"tensor at {HERE}:{line}"


def test_summary_has_pytorch_rows_and_top_owners(dev):
    a = rm.DeviceBuffer.alloc(dev, 10000, owner="big one")
    arena = rm.DeviceBuffer.alloc(dev, 1024, owner="arena")
    arena.tag(0, 100, "0.weight")
    arena.tag(256, 40, "0.bias")
    text = C.memory_summary()
    for row in ("Allocated memory", "Active memory", "GPU reserved memory", "Allocations", "Cur Usage",
                "Peak Usage", "Tot Alloc", "Tot Freed", "Top owners"):
        assert row in text, row
    lines = text.splitlines()
    top = lines[lines.index(next(x for x in lines if x.startswith("Top owners"))) + 2]
    assert "big one" in top
    assert "0.weight" in text and "0.bias" in text and "padding in arena" in text
    del a, arena


def test_snapshot_segments_and_blocks(dev):
    M.record_history(True, stacks=True)
    a = rm.DeviceBuffer.alloc(dev, 5000, owner="a")
    arena = rm.DeviceBuffer.alloc(dev, 2048, owner="arena")
    arena.tag(0, 1000, "p0")
    snap = C.memory_snapshot()
    json.dumps(snap)   # plain dicts
    blocks = {b["address"]: b for s in snap["segments"] for b in s["blocks"]}
    ba = blocks[a.ptr]
    assert ba["size"] == 5000 and ba["state"] == "active_allocated" and ba["owner"] == "a"
    assert ba["stream"] == "cuda:0 compute"
    assert any(f["filename"].endswith(HERE) for f in ba["frames"])
    assert blocks[arena.ptr]["parts"][0] == {"offset": 0, "size": 1000, "owner": "p0"}
    for s in snap["segments"]:
        assert s["total_size"] % snap["granule"] == 0
        assert s["allocated_size"] == sum(b["size"] for b in s["blocks"] if b["state"] == "active_allocated")
        assert sum(b["size"] for b in s["blocks"]) <= s["total_size"]
    d = snap["devices"][0]
    assert d["allocated"] == C.memory_allocated() and d["owners"][0]["owner"] == "a"
    del a, arena


def test_history_ring_buffer_and_json_dump(dev, tmp_path):
    M.record_history(True, stacks=False, max_entries=4)
    for i in range(3):
        b = rm.DeviceBuffer.alloc(dev, 512 * (i + 1), owner=f"t{i}")
        b.free()
    ev = M.history()
    assert len(ev) == 4   # the ring keeps the newest
    assert [e["action"] for e in ev] == ["alloc", "free_requested"] * 2
    assert ev[-1]["owner"] == "t2" and ev[-1]["size"] == 1536 and "frames" not in ev[-1]
    assert all(isinstance(e["time_us"], int) for e in ev)
    path = tmp_path / "snap.json"
    M.dump_snapshot(path)
    raw = path.read_bytes()
    assert raw.startswith(b"{")   # JSON, never pickle
    snap = json.loads(raw)
    assert [e["owner"] for e in snap["device_traces"][0]][-1] == "t2"


def test_history_covers_devices_opened_later(driver):
    reset_for_tests(driver)   # no device open yet
    M.record_history(True, stacks=True)
    from rawdev.runtime import get_device
    dev = get_device(0)
    b = rm.DeviceBuffer.alloc(dev, 300, owner="late")
    e = M.history()[-1]
    assert e["owner"] == "late" and any(f["filename"].endswith(HERE) for f in e["frames"])
    del b


def test_pointer_info(dev):
    arena = rm.DeviceBuffer.alloc(dev, 4096, owner="arena")
    arena.tag(512, 1024, "1.weight")
    info = C.pointer_info(arena.ptr + 600)
    assert info["memory_type"] == "device" and info["device"] == 0
    assert info["block_start"] == arena.ptr and info["block_size"] >= 4096 and info["block_offset"] == 600
    # the driver's range is the pool's mapping holding the block, not the block
    assert info["range_start"] <= arena.ptr and info["range_start"] + info["range_size"] >= arena.ptr + 4096
    assert info["owner"] == "1.weight" and info["block_owner"] == "arena" and info["pool_owner"] == "rawdev"
    assert info["buffer_id"] != 0 and info["pool"] != 0
    assert "1.weight" in M.format_pointer_info(info)
    pinned = rm.PinnedBuffer(256)
    assert C.pointer_info(pinned.ptr)["memory_type"] == "host (pinned)"
    stray = C.pointer_info(np.zeros(4).ctypes.data)
    assert stray["owner"] is None and stray["memory_type"].startswith("unknown")
    del arena


def test_peek_and_poke(dev):
    x = np.arange(16, dtype=np.float32) + 0.5
    b = rm.DeviceBuffer.alloc(dev, x.nbytes, owner="x")
    rm.copy_htod(b.ptr, x, x.nbytes)
    text = M.peek(b, 4, fmt="f32")
    assert "0.5" in text and "3.5" in text and f"0x{b.ptr:x}" in text
    hexd = M.peek(b, 32)
    assert hexd.splitlines()[0].startswith(f"0x{b.ptr:x}  00 00 00 3f")
    M.poke(b.ptr + 4, np.array([42.0], np.float32))
    assert M.peek(b, 3, fmt="raw") == np.array([0.5], np.float32).tobytes()[:3]
    got = np.frombuffer(M.peek(b, 8, fmt="raw"), np.float32)
    assert list(got) == [0.5, 42.0]
    with pytest.raises(ValueError, match="past the end"):
        M.peek(b, 65)
    del b


def test_oom_report_fields(monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_MEMORY", "16M")
    reset_for_tests("sim")
    from rawdev.runtime import get_device
    dev = get_device(0)
    M.record_history(True, stacks=True)
    keep = [rm.DeviceBuffer.alloc(dev, 5 << 20, owner="Linear 0 output"),
            rm.DeviceBuffer.alloc(dev, 3 << 20, owner="0.weight")]
    with pytest.raises(OutOfMemoryError) as ei:
        rm.DeviceBuffer.alloc(dev, 12 << 20, owner="Linear 1 output")
    msg = str(ei.value)
    assert "CUDA_ERROR_OUT_OF_MEMORY" in msg
    assert "requested 12.0 MiB for Linear 1 output on cuda:0" in msg
    assert "device free 8.0 MiB of 16.0 MiB" in msg
    assert "reserved by rawdev's pool 8.0 MiB" in msg
    assert "largest free block 8.0 MiB" in msg
    assert "fragmentation 0%" in msg
    assert "top owners: Linear 0 output 5.0 MiB, 0.weight 3.0 MiB" in msg
    advice = [ln for ln in msg.splitlines() if ln.startswith("advice:")]
    assert len(advice) == 1 and "checkpoint" in advice[0]
    assert "smaller batch" in advice[0] and "empty_cache" in advice[0]
    assert C.memory_stats()["num_ooms"] == 1
    oom = [e for e in M.history() if e["action"] == "oom"]
    assert oom and oom[0]["owner"] == "Linear 1 output" and oom[0]["size"] == 12 << 20
    assert any(f["filename"].endswith(HERE) for f in oom[0]["frames"])
    del keep
    monkeypatch.delenv("RAWDEV_SIM_MEMORY")
    reset_for_tests("sim")


LEAKY = """
import rawdev
from rawdev.runtime import get_device, memory
dev = get_device(0)
cache = []

def step():
    t = memory.DeviceBuffer.alloc(dev, 4096)
    ok = memory.DeviceBuffer.alloc(dev, 1000, owner="temporary")
    cache.append(t)

step()
"""


@pytest.mark.parametrize("mode", ["1", "stacks"])
def test_leak_check_names_the_leaked_tensor(tmp_path, mode):
    script = tmp_path / "leaky.py"
    script.write_text(textwrap.dedent(LEAKY))
    env = dict(os.environ, RAWDEV_DRIVER="sim", RAWDEV_LEAK_CHECK=mode)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=HANG_GUARD_S)
    assert r.returncode == 0, r.stderr
    assert "rawdev leak check: 1 block(s), 4.0 KiB still live on cuda:0 at exit" in r.stderr
    assert "tensor at leaky.py:8  (held by global cache of __main__)" in r.stderr
    assert "temporary" not in r.stderr
    if mode == "stacks":
        assert "allocated at " in r.stderr and "leaky.py:8 in step" in r.stderr


def test_leak_check_quiet_when_clean(tmp_path):
    script = tmp_path / "clean.py"
    script.write_text("from rawdev.runtime import get_device, memory\n"
                      "b = memory.DeviceBuffer.alloc(get_device(0), 64)\nb.free()\n")
    env = dict(os.environ, RAWDEV_DRIVER="sim", RAWDEV_LEAK_CHECK="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=HANG_GUARD_S)
    assert "no device memory left allocated" in r.stderr


def test_oom_in_a_fragmented_pool_says_so(monkeypatch):
    """4 MiB device, two 2 MiB segments of 512 KiB blocks, every other one freed: 2 MiB cached in four
    512 KiB holes. A 768 KiB request fits no hole and no new segment: the report names fragmentation
    and does not send the user to empty_cache(), which cannot release segments that hold live blocks."""
    monkeypatch.setenv("RAWDEV_SIM_MEMORY", "4M")
    reset_for_tests("sim")
    from rawdev.runtime import get_device
    dev = get_device(0)
    blocks = [rm.DeviceBuffer.alloc(dev, 512 << 10, owner=f"block {i}") for i in range(8)]
    for b in blocks[::2]:
        b.free()
    dev.synchronize()
    with pytest.raises(OutOfMemoryError) as ei:
        rm.DeviceBuffer.alloc(dev, 768 << 10, owner="big")
    msg = str(ei.value)
    assert "largest free block 512.0 KiB; fragmentation 75%" in msg
    advice = [ln for ln in msg.splitlines() if ln.startswith("advice:")][0]
    assert "fragmented" in advice and "empty_cache" not in advice
    del blocks
    monkeypatch.delenv("RAWDEV_SIM_MEMORY")
