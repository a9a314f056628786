"""memory_stats() / memory_summary() agree with the allocation table, the driver's pool and each other at any
moment of a training step, with the relationships PyTorch documents for its rows."""
import re

import numpy as np
import pytest
import rawdev
import rawdev.cuda as C
from rawdev import nn, optim
from rawdev.cuda import memory as M
from rawdev.runtime import memory as rm
from rawdev.runtime.trace import fmt_bytes

from _refs import pool_used_agrees

ROWS = {"Allocated memory": "allocated_bytes", "Active memory": "active_bytes", "Requested memory": "requested_bytes",
        "GPU reserved memory": "reserved_bytes", "Non-releasable memory": "inactive_split_bytes",
        "Allocations": "allocation", "Active allocs": "active", "GPU reserved segments": "segment",
        "Non-releasable allocs": "inactive_split"}


def _requested(block):
    """What the tensors of a block asked for, from the allocation table: an arena's tagged parts, else the block."""
    return sum(n for _, n, _ in block.parts) if block.parts else block.nbytes


def check_consistent(dev, where):
    """Every row of memory_stats()/memory_summary() against the table, the pool and PyTorch's relationships."""
    st = M.memory_stats(dev)
    alloc = dev.allocator
    live = list(alloc.live.values())
    used, reserved = dev.pool_attribute("used"), dev.pool_attribute("reserved")
    msg = f"at {where}: {st}"
    # the allocation table
    assert st["allocated_bytes.all.current"] == sum(b.nbytes for b in live) == C.memory_allocated(dev), msg
    assert st["allocation.all.current"] == len(live), msg
    # requested <= allocated; the difference is exactly the arenas' padding (rawdev rounds nothing else)
    assert st["requested_bytes.all.current"] == sum(_requested(b) for b in live), msg
    padding = sum(n for b in live for _, n, who in M._parts(b) if who.startswith("padding in "))
    assert st["allocated_bytes.all.current"] - st["requested_bytes.all.current"] == padding, msg
    for k in ("current", "peak", "allocated", "freed"):
        assert st[f"requested_bytes.all.{k}"] <= st[f"allocated_bytes.all.{k}"], (k, msg)
    # active = allocated + the frees queued on a stream not yet run = what the pool still counts as used
    assert st["rawdev.queued_frees_exact"], msg
    assert pool_used_agrees(dev, st["active_bytes.all.current"], st["active.all.current"]), (used, msg)
    assert st["active_bytes.all.current"] == st["allocated_bytes.all.current"] + st["rawdev.queued_free_bytes"], msg
    assert st["active.all.current"] == st["allocation.all.current"] + st["rawdev.queued_frees"], msg
    assert (st["rawdev.queued_frees"] == 0) == (st["rawdev.queued_free_bytes"] == 0), msg
    # reserved is the pool's; active blocks and the free bytes between them lie inside it
    assert st["reserved_bytes.all.current"] == reserved == C.memory_reserved(dev), msg
    assert st["active_bytes.all.current"] + st["inactive_split_bytes.all.current"] <= reserved, msg
    assert st["segment.all.current"] * rm.SEGMENT_GRANULE <= reserved, msg
    assert (st["inactive_split.all.current"] == 0) == (st["inactive_split_bytes.all.current"] == 0), msg
    # PyTorch: peak >= current; current = allocated - freed (no reset_accumulated_memory_stats here)
    for key in ("allocated_bytes", "requested_bytes", "active_bytes", "reserved_bytes", "allocation"):
        assert st[f"{key}.all.peak"] >= st[f"{key}.all.current"], (key, msg)
    for key in ("allocated_bytes", "requested_bytes", "active_bytes", "allocation", "active"):
        assert st[f"{key}.all.current"] == st[f"{key}.all.allocated"] - st[f"{key}.all.freed"], (key, msg)
    assert st["active_bytes.all.peak"] >= st["allocated_bytes.all.peak"], msg
    assert st["allocated_bytes.all.peak"] == C.max_memory_allocated(dev), msg

    # the summary shows those figures, row by row
    text = M.memory_summary(dev, top=1000)
    for name, key in ROWS.items():
        line = next(ln for ln in text.splitlines() if ln.startswith(f"| {name}"))
        cells = [c.strip() for c in line.split("|")[2:6]]
        fmt = fmt_bytes if key.endswith("bytes") else str
        want = [fmt(st[f"{key}.all.{k}"]) if f"{key}.all.{k}" in st else "-"
                for k in ("current", "peak", "allocated", "freed")]
        assert cells == want, (name, cells, want, where)
        starred = line.split("|")[1].strip().endswith("*")
        assert starred == (name.startswith("Active") and st["rawdev.queued_frees"] > 0), (line, where)
    if st["rawdev.queued_frees"]:
        assert f"* includes {st['rawdev.queued_frees']} block(s), {fmt_bytes(st['rawdev.queued_free_bytes'])}, " \
               "freed with cuMemFreeAsync on a stream that has not run the free yet" in text, where
    # the owner table: blocks are pool allocations, tensors inside an arena are not counted as blocks
    rows = M.owner_table(dev)
    assert sum(r["bytes"] for r in rows) == st["allocated_bytes.all.current"], where
    arenas = [b for b in live if b.parts]
    assert sum(r["blocks"] for r in rows) + len(arenas) == len(live), where
    assert sum(r["tensors"] for r in rows) == sum(len(b.parts) for b in arenas), where
    head = re.search(r"Top owners \((\d+) owners; (\d+) blocks, (\d+) of them arenas holding (\d+) tensors\)", text)
    assert head and [int(x) for x in head.groups()] == [len(rows), len(live), len(arenas),
                                                        sum(len(b.parts) for b in arenas)], (where, text)
    for r in rows:
        line = next(ln for ln in text.splitlines() if ln.startswith(f"  {r['owner'][:40]} "))
        if r["arena"] is None:
            assert line.endswith(f"{r['blocks']} block" + ("s" if r["blocks"] != 1 else "")), line
        elif not r["owner"].startswith("padding in "):
            assert line.endswith(f"in arena {r['arena']}") and "block" not in line.split("  ")[-1], line


@pytest.mark.parametrize("seed", [0, 1])
def test_summary_rows_agree_at_random_points_of_a_training_step(dev, seed):
    rng = np.random.default_rng(seed)
    rawdev.manual_seed(seed)
    model = nn.Sequential(nn.Linear(20, 33), nn.ReLU(), nn.Linear(33, 7)).cuda()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    checked = []

    def at_random_points(kind, block):
        if rng.random() < 0.35:
            check_consistent(dev, f"{kind} of {block.owner} ({block.nbytes} B)")
            checked.append(kind)

    dev.allocator.listeners.append(at_random_points)
    try:
        for step in range(3):
            x = rawdev.tensor(rng.standard_normal((9, 20)).astype(np.float32), device="cuda")
            y = rawdev.tensor(rng.integers(0, 7, 9), device="cuda")
            check_consistent(dev, f"step {step} start")
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            check_consistent(dev, f"step {step} after forward")
            loss.backward()
            check_consistent(dev, f"step {step} after backward")
            opt.step()
            check_consistent(dev, f"step {step} after step")
            del x, y, loss
            check_consistent(dev, f"step {step} after del")
            if step == 1:
                dev.synchronize()
                check_consistent(dev, "after synchronize")
                assert M.memory_stats(dev)["rawdev.queued_frees"] == 0
    finally:
        dev.allocator.listeners.remove(at_random_points)
    assert {"alloc", "free"} <= set(checked)


def test_requested_is_less_than_allocated_by_the_arena_padding(dev):
    before = M.memory_stats(dev)
    model = nn.Sequential(nn.Linear(5, 3), nn.Linear(3, 1)).cuda()   # 60, 12, 12, 4 bytes: each padded to 256
    after = M.memory_stats(dev)
    assert after["allocated_bytes.all.current"] - before["allocated_bytes.all.current"] == 4 * 256
    assert after["requested_bytes.all.current"] - before["requested_bytes.all.current"] == 60 + 12 + 12 + 4
    assert after["requested_bytes.all.peak"] >= after["requested_bytes.all.current"]
    del model


def test_queued_frees_are_named_until_their_stream_runs_them(driver, dev):
    a = rm.DeviceBuffer.alloc(dev, 3000, owner="kept")
    b = rm.DeviceBuffer.alloc(dev, 5000, owner="dropped")
    dev.synchronize()
    b.free()   # cuMemFreeAsync: queued on the compute stream, which the simulator runs at the next sync point
    st = M.memory_stats(dev)
    if driver == "sim":
        assert st["rawdev.queued_frees"] == 1
    if st["rawdev.queued_frees"]:   # the stream has not run the free yet
        assert st["active_bytes.all.current"] == st["allocated_bytes.all.current"] + 5000
        assert st["active.all.current"] == st["allocation.all.current"] + 1
        assert "Active memory*" in M.memory_summary(dev)
    dev.synchronize()
    st = M.memory_stats(dev)
    assert st["rawdev.queued_frees"] == 0 and st["active_bytes.all.current"] == st["allocated_bytes.all.current"]
    assert "Active memory*" not in M.memory_summary(dev)
    del a
