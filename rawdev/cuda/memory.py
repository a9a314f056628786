"""`rawdev.cuda.memory`: see GPU memory — what is allocated, who owns each block, how the pool looks, why an
allocation failed. PyTorch's `torch.cuda.memory` names; figures come from rawdev's allocation table
(`rawdev.runtime.memory.Allocator.live`) and the driver pool's attributes.

Owners: every block carries an owner tag — "0.weight", "0.weight.grad", "exp_avg of 0.weight",
"Linear 0 output", "staging for …", or, for a tensor nobody named, "tensor at train.py:42" (the first
frame outside rawdev). An arena (one allocation holding many tensors) lists its parts with their own
owners; everything here reports parts separately.

Sizes: a block is exactly the bytes asked for; the tensors of a module move share an arena in which each
starts at a multiple of 256 bytes (`ARENA_ALIGN`), so `memory_allocated()` after `model.cuda()` is the
sum of `align(t.nbytes, 256)` over its tensors (the last one padded too).
"""

import atexit
import collections
import functools
import json
import operator
import os
import re
import sys
import threading
import time
import weakref
import zlib
from typing import Any

import numpy as np

from ..runtime import memory as _rm
from ..runtime import phases as _phases
from ..runtime.trace import fmt_bytes

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "mem_get_info", "memory_stats",
           "memory_summary", "memory_snapshot", "empty_cache", "record_history", "dump_snapshot", "history",
           "pointer_info", "peek", "poke", "live_blocks", "leak_report", "mark", "annotations", "owner_table",
           "memory_stats_as_nested_dict", "reset_accumulated_memory_stats", "ARENA_ALIGN",
           "set_per_process_memory_fraction", "get_per_process_memory_fraction", "memory_cached",
           "max_memory_cached", "reset_max_memory_cached"]

ARENA_ALIGN = _rm.ARENA_ALIGN


# ------------------------------------------------------------------------------------------ helpers
def _device(device=None):
    from .device_arg import _dev
    return _dev(device)


def _opened_devices():
    from ..runtime import device as _d
    return [d for _, d in sorted(_d._devices.items())]


def _alloc(device=None):
    """The device's allocation table, after running queued frees. A driver that cannot take calls any more
    (a sticky fault) leaves the table as it is: it is rawdev's own record and still worth reading."""
    from ..errors import CudaError
    a = _device(device).allocator
    try:
        a.flush()
    except CudaError:
        pass
    return a


def _driver_figures(dev):
    """The pool's and the device's own figures, or Nones and the error when the driver refuses (a sticky fault
    poisons the context: every later call fails, but rawdev's table is still there to show)."""
    from ..errors import CudaError
    try:
        figs = dict(used=dev.pool_attribute("used"), used_high=dev.pool_attribute("used_high"),
                    reserved=dev.pool_attribute("reserved"), reserved_high=dev.pool_attribute("reserved_high"))
        figs["free"], figs["total"] = _rm.mem_get_info(dev)
        figs["error"] = None
    except CudaError as e:
        figs = dict.fromkeys(("used", "used_high", "reserved", "reserved_high", "free", "total"))
        figs["error"] = f"{e.call} failed with {e.name}"
    return figs


def _stream_name(stream):
    from ..runtime import seam
    h = getattr(stream, "handle", stream)
    try:
        return getattr(stream, "label", None) or seam.stream_names.get(int(h), f"0x{int(h):x}")
    except (TypeError, ValueError):
        return str(stream)


_FRAME = re.compile(r'\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>[^\n]+)\n?(?P<code>.*)', re.S)


def _frames(stack):
    """traceback.format_stack() strings -> [{filename, line, name, code}], innermost first (PyTorch's order)."""
    if not stack:
        return []
    out = []
    for s in stack:
        m = _FRAME.match(s)
        if m:
            out.append(dict(filename=m["file"], line=int(m["line"]), name=m["name"].strip(),
                            code=m["code"].strip()))
    return out[::-1]


def _in_rawdev(filename):
    return filename.startswith(_rm._PKG_DIR)


# ------------------------------------------------------------------------------- PyTorch's figures
def _cuda_available():
    """False on a machine without CUDA (auto found no GPU): the figures are then 0, as in PyTorch's cpu build."""
    from ..runtime import is_available
    return is_available()


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live rawdev allocations on the device (0 when CUDA is not available). Equals the pool's
    USED_MEM_CURRENT once queued frees have run: a free is queued on its stream (cuMemFreeAsync) and lands when
    the stream runs to it."""
    if not _cuda_available():
        return 0
    return _alloc(device).stats["allocated"]


def max_memory_allocated(device: Any = None) -> int:
    """Peak of memory_allocated() since the start or the last reset_peak_memory_stats()."""
    if not _cuda_available():
        return 0
    return _alloc(device).stats["peak"]


def memory_reserved(device: Any = None) -> int:
    """Bytes the driver's pool holds for rawdev (RESERVED_MEM_CURRENT): allocated plus cached."""
    if not _cuda_available():
        return 0
    return _device(device).pool_attribute("reserved")


def max_memory_reserved(device: Any = None) -> int:
    if not _cuda_available():
        return 0
    return _device(device).pool_attribute("reserved_high")


def reset_peak_memory_stats(device: Any = None) -> None:
    """Peaks (rawdev's and the pool's) start again from the current figures."""
    if not _cuda_available():
        return
    dev = _device(device)
    a = _alloc(dev)
    acct = _acct(a)
    with a.lock:
        a.stats["peak"] = a.stats["allocated"]
        a.stats["count_peak"] = len(a.live)
        acct.reset_peak(list(a.live.values()))
    _rm.reset_pool_peaks(dev)


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    """The "allocated"/"freed" totals (bytes and counts) start again from 0."""
    if not _cuda_available():
        return
    a = _alloc(device)
    acct = _acct(a)
    with a.lock:
        for k in ("allocated_total", "freed_total", "alloc_count", "free_count", "num_ooms"):
            a.stats[k] = 0
        acct.reset_accumulated(list(a.live.values()))


def memory_cached(device: Any = None) -> int:
    """PyTorch's deprecated name for memory_reserved."""
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    """PyTorch's deprecated name for max_memory_reserved."""
    return max_memory_reserved(device)


def reset_max_memory_cached(device: Any = None) -> None:
    """PyTorch's deprecated name: resets the peak figures (reset_peak_memory_stats)."""
    reset_peak_memory_stats(device)


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Cap what this process may allocate on `device` at fraction x its total memory, as PyTorch's caching
    allocator does: an allocation past the cap raises OutOfMemoryError (with the usual report) without calling
    the driver. Useful to rehearse running short of memory on a large GPU.

    Args:
        fraction: a float in [0, 1]; 1.0 (the default) removes the cap.
        device: the cuda device (default: the current one).

    Example:
        >>> rawdev.cuda.set_per_process_memory_fraction(0.5)
    """
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _device(device).allocator.memory_fraction = fraction


def get_per_process_memory_fraction(device: Any = None) -> float:
    """The cap set by set_per_process_memory_fraction (1.0 when none)."""
    return _device(device).allocator.memory_fraction


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device, as cudaMemGetInfo says."""
    return _rm.mem_get_info(_device(device))


def empty_cache(device: Any = None) -> None:
    """Give the pool's cached blocks back to the device (cuMemPoolTrimTo(pool, 0)) and drop the pinned
    staging buffers that moves keep for reuse; live blocks stay. Does nothing when CUDA is not available."""
    from ..runtime import transfer
    transfer.release_staging()
    if not _cuda_available():
        return
    devs = [_device(device)] if device is not None else _opened_devices()
    for d in devs:
        d.allocator.flush()
        _rm.trim_pool(d, 0)


# ------------------------------------------------------------------------ requested bytes, queued frees
def requested_bytes(block):
    """Bytes the tensors in a block asked for: an arena's parts (without the padding that starts each at a
    multiple of ARENA_ALIGN), else the whole block (rawdev asks the pool for exactly the bytes a tensor needs)."""
    if block.parts:   # summed in C: the accounting recounts every arena at each allocation and free
        return sum(map(_part_bytes, block.parts))
    return block.nbytes


_part_bytes = operator.itemgetter(1)   # (offset, nbytes, owner) -> nbytes


_QUEUED_MAX = 100_000
_Freed = collections.namedtuple("_Freed", "ptr nbytes")


def _locked(method):
    """Run under the object's lock: allocator events arrive from every thread that allocates or frees."""
    @functools.wraps(method)
    def run(self, *args):
        with self.lock:
            return method(self, *args)
    return run


class _Accounting:
    """What rawdev's allocation table does not count itself: requested bytes (peak, totals) and the frees queued
    on a stream (cuMemFreeAsync) whose stream has not run them yet. Fed by allocator events.

    An arena's parts are tagged after it is allocated, some of them later (a grad arena gains a part per grad),
    so the current figure is recounted from the table when asked; the peak is kept at each event over the
    blocks that are arenas by then and the ones allocated since the last event."""

    def __init__(self, alloc):
        self.lock = threading.RLock()
        self.running = 0          # requested bytes of the live blocks, as last counted
        self.counted = {}         # ptr -> (Block, requested bytes counted for it) for blocks still watched
        self.fixed = {}           # ptr -> requested bytes of a block that is not an arena (never changes)
        self.peak = 0
        self.freed = 0            # requested bytes of the blocks freed since the start or the last reset
        self.base = 0             # requested bytes live at the last reset_accumulated_memory_stats
        # address -> (_Freed, nbytes) freed by rawdev, oldest first, perhaps not yet run by their stream (bounded:
        # past the bound the oldest go, and the count of queued frees is then marked as approximate). Keyed by
        # address: a freed address is in it at most once (it must be allocated again before it is freed again),
        # and an allocation drops its address in O(1), which the pool's same-stream reuse makes happen at most
        # allocations
        self.queued: dict[int, tuple[Any, int]] = {}
        for b in list(alloc.live.values()):   # blocks made before accounting started
            self.counted[b.ptr] = (b, requested_bytes(b))
            self.running += requested_bytes(b)
        self.peak = self.running

    def _settle(self):
        """settle() with the lock already held."""
        counted = self.counted
        if counted:
            for ptr, (b, r) in list(counted.items()):
                now = requested_bytes(b) if b.parts else b.nbytes
                if now != r:
                    self.running += now - r
                if b.parts:
                    counted[ptr] = (b, now)
                else:   # not an arena by now: its requested bytes are the block's and stay so
                    del counted[ptr]
                    self.fixed[ptr] = now
        if self.running > self.peak:
            self.peak = self.running

    @_locked
    def settle(self):
        """Recount the watched blocks (arenas and blocks allocated since the last event) and update the peak."""
        self._settle()

    def on_event(self, kind, block):
        # every allocation and free of every op comes here: the lock taken once, settle's body called unwrapped
        with self.lock:
            if kind == "alloc":
                self._settle()
                # a free at this address has run, or the pool handed its block to this allocation (same-stream
                # reuse in stream order): either way the pool no longer counts it
                ptr, n = block.ptr, block.nbytes
                self.queued.pop(ptr, None)
                self.counted[ptr] = (block, n)
                self.running += n
            elif kind == "free":
                self._settle()
                ptr = block.ptr
                r = block.nbytes if not block.parts else requested_bytes(block)
                counted = self.fixed.pop(ptr, None)
                if counted is None:
                    counted = self.counted.pop(ptr, (None, r))[1]
                self.running -= counted
                self.freed += r
                queued = self.queued
                queued.pop(ptr, None)
                queued[ptr] = (_Freed(ptr, block.nbytes), block.nbytes)
                if len(queued) > _QUEUED_MAX:
                    del queued[next(iter(queued))]

    @_locked
    def figures(self, live):
        """(current, peak, allocated, freed) requested bytes: current counted from the table now."""
        self.settle()
        current = sum(requested_bytes(b) for b in live)
        self.peak = max(self.peak, current)
        return current, self.peak, current + self.freed - self.base, self.freed

    @_locked
    def reset_peak(self, live):
        self.settle()
        self.peak = sum(requested_bytes(b) for b in live)

    @_locked
    def reset_accumulated(self, live):
        self.freed = 0
        self.base = sum(requested_bytes(b) for b in live)

    @_locked
    def queued_frees(self, pool_used, allocated):
        """([(block, nbytes)], exact) of the frees still queued on a stream. The pool counts them as used until
        they run, so they are the newest frees that make up pool used - allocated; older ones have run. `exact`
        is False when no run of newest frees adds up to that difference (a pool that rounds sizes)."""
        pending = max(0, pool_used - allocated)
        keep, total = [], 0
        for b, n in reversed(self.queued.values()):
            if total + n > pending:
                break
            keep.append((b, n))
            total += n
        keep.reverse()
        self.queued = {b.ptr: (b, n) for b, n in keep}
        return keep, total == pending


_accounts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_accounts_lock = threading.Lock()


def _acct(alloc):
    acct = _accounts.get(alloc)
    if acct is None:
        with _accounts_lock:   # two threads asking first must attach one accounting, not two
            acct = _accounts.get(alloc)
            if acct is None:
                acct = _accounts[alloc] = _Accounting(alloc)
                alloc.listeners.append(acct.on_event)
    return acct


def memory_stats(device: Any = None) -> dict[str, Any]:
    """PyTorch's `memory_stats()` keys, with PyTorch's meanings, for the "all" pool (rawdev has one pool per
    device). {} when CUDA is not available, as in PyTorch before CUDA is initialized.

    allocated_bytes: rawdev's live blocks (an arena whole, padding included); requested_bytes: what the tensors
    in them asked for (an arena's padding is the difference: rawdev rounds nothing else); active_bytes:
    allocated plus blocks freed with cuMemFreeAsync whose stream has not run the free yet (the pool's
    USED_MEM); reserved_bytes: the pool's RESERVED_MEM; inactive_split_bytes: free bytes inside the segments
    that hold active blocks (not releasable by empty_cache); allocation/active/segment/inactive_split: the
    same, counted. Extras: rawdev.queued_free_bytes/.queued_frees, rawdev.queued_frees_exact, rawdev.pool_used,
    rawdev.device_free/total, cached_bytes (reserved - active).
    """
    if not _cuda_available():
        return {}
    dev = _device(device)
    a = _alloc(dev)
    acct = _acct(a)
    with a.lock:
        s = dict(a.stats)
        live = list(a.live.values())
        req = acct.figures(live)
    figs = _driver_figures(dev)
    used, used_hi, res, res_hi = figs["used"], figs["used_high"], figs["reserved"], figs["reserved_high"]
    queued, exact = acct.queued_frees(used, s["allocated"]) if used is not None else ([], False)
    free, total = figs["free"], figs["total"]
    queued_bytes = sum(n for _, n in queued)
    out = collections.OrderedDict()

    def put(key, cur, peak, allocated=None, freed=None):
        out[f"{key}.all.current"] = cur
        out[f"{key}.all.peak"] = peak
        if allocated is not None:
            out[f"{key}.all.allocated"] = allocated
            out[f"{key}.all.freed"] = freed

    segs = _rm.segments_of(live + [b for b, _ in queued])
    gaps = [n for *_, g in segs for _, n in g]
    active = s["allocated"] + queued_bytes
    put("allocated_bytes", s["allocated"], s["peak"], s["allocated_total"], s["freed_total"])
    put("requested_bytes", *req)
    put("active_bytes", active, max(used_hi or 0, active, s["peak"]), s["allocated_total"],
        max(0, s["freed_total"] - queued_bytes))
    put("reserved_bytes", res, res_hi)
    put("inactive_split_bytes", sum(gaps), None)
    put("allocation", len(live), s["count_peak"], s["alloc_count"], s["free_count"])
    put("active", len(live) + len(queued), None, s["alloc_count"], max(0, s["free_count"] - len(queued)))
    put("segment", len(segs), None)
    put("inactive_split", len(gaps), None)
    out["num_ooms"] = s["num_ooms"]
    out["num_alloc_retries"] = 0
    out["num_device_alloc"] = s["alloc_count"]
    out["num_device_free"] = s["free_count"]
    out["num_sync_all_streams"] = 0
    out["cached_bytes.all.current"] = max(0, res - active) if res is not None else None
    out["rawdev.pool_used"] = used
    out["rawdev.queued_free_bytes"] = queued_bytes
    out["rawdev.queued_frees"] = len(queued)
    out["rawdev.queued_frees_exact"] = exact
    out["rawdev.device_free"] = free
    out["rawdev.device_total"] = total
    failed = a.failed_frees()
    out["rawdev.failed_free_blocks"] = len(failed)
    out["rawdev.failed_free_bytes"] = sum(x.nbytes for x in failed)
    out["rawdev.driver_error"] = figs["error"]
    return {k: v for k, v in out.items() if v is not None}


def memory_stats_as_nested_dict(device=None):
    nested = {}
    for k, v in memory_stats(device).items():
        d = nested
        parts = k.split(".")
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = v
    return nested


# ----------------------------------------------------------------------------------------- owners
def _parts(block):
    """[(offset, size, owner)] for a block, with arena padding named '<padding in OWNER>'."""
    parts = sorted(block.owners())
    if not block.parts:
        return parts
    out, at = [], 0
    for off, n, who in parts:
        if off > at:
            out.append((at, off - at, f"padding in {block.owner}"))
        out.append((off, n, who))
        at = max(at, off + n)
    if block.nbytes > at:
        out.append((at, block.nbytes - at, f"padding in {block.owner}"))
    return out


def owner_totals(device=None):
    """[(owner, bytes, blocks)] sorted by bytes, arena parts and padding counted separately (a part counts as
    one block here; owner_table() tells blocks from tensors inside an arena)."""
    tot = collections.defaultdict(lambda: [0, 0])
    for b in live_blocks(device):
        for _, n, who in _parts(b):
            tot[who or "unnamed"][0] += n
            tot[who or "unnamed"][1] += 1
    return sorted(((k, v[0], v[1]) for k, v in tot.items()), key=lambda r: (-r[1], r[0]))


def owner_table(device=None):
    """[{owner, bytes, blocks, tensors, arena}] sorted by bytes: `blocks` counts whole pool allocations the owner
    holds; `tensors` counts tensors inside an arena (then `arena` names the arena's owner). Padding between an
    arena's tensors is a row of its own ("padding in ARENA")."""
    rows = {}
    for b in live_blocks(device):
        if not b.parts:
            r = rows.setdefault(b.owner or "unnamed", dict(owner=b.owner or "unnamed", bytes=0, blocks=0, tensors=0,
                                                           arena=None))
            r["bytes"] += b.nbytes
            r["blocks"] += 1
            continue
        for _, n, who in _parts(b):
            who = who or "unnamed"
            r = rows.setdefault(who, dict(owner=who, bytes=0, blocks=0, tensors=0, arena=b.owner))
            r["bytes"] += n
            if not who.startswith("padding in "):
                r["tensors"] += 1
    return sorted(rows.values(), key=lambda r: (-r["bytes"], r["owner"]))


def live_blocks(device=None):
    """The device's live Blocks (rawdev.runtime.memory.Block), by address."""
    if not _cuda_available():
        return []
    return sorted(list(_alloc(device).live.values()), key=lambda b: b.ptr)


# ----------------------------------------------------------------------------------------- summary
def memory_summary(device: Any = None, abbreviated: bool = False, top: int = 10) -> str:
    """PyTorch's table (current / peak / total allocated / total freed per row, rows with PyTorch's meanings)
    plus the top owners. Rows: Allocated (live blocks), Active (allocated + frees queued on a stream that has
    not run them: marked *), Requested (what the tensors asked for; allocated - requested is arena padding),
    GPU reserved (the pool), Non-releasable (free bytes inside segments that hold active blocks)."""
    W = 77
    if not _cuda_available():
        st, title = {}, "rawdev CUDA memory summary: CUDA is not available (no device memory in use)"
    else:
        dev = _device(device)
        st = memory_stats(dev)
        title = f"rawdev CUDA memory summary, device ID {dev.index} ({dev.name})"
    queued_n, queued_b = st.get("rawdev.queued_frees", 0), st.get("rawdev.queued_free_bytes", 0)
    star = "*" if queued_n else ""

    def row(name, key, fmt):
        vals = [st.get(f"{key}.all.{k}") for k in ("current", "peak", "allocated", "freed")]
        cells = [fmt(v or 0) if i == 0 or v is not None else "-" for i, v in enumerate(vals)]
        return "| " + f"{name:<22}|" + "".join(f" {c:>10} |" for c in cells)

    b = lambda n: fmt_bytes(n)  # noqa: E731
    c = lambda n: str(n)  # noqa: E731
    lines = ["|" + "=" * (W - 2) + "|", "|" + title.center(W - 2) + "|", "|" + "-" * (W - 2) + "|",
             "|" + f"CUDA OOMs: {st.get('num_ooms', 0)}".center(37) + "|"
             + f"cudaMalloc retries: {st.get('num_alloc_retries', 0)}".center(38) + "|",
             "|" + "=" * (W - 2) + "|",
             "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |",
             "|" + "-" * (W - 2) + "|",
             row("Allocated memory", "allocated_bytes", b),
             row("Active memory" + star, "active_bytes", b),
             row("Requested memory", "requested_bytes", b),
             row("GPU reserved memory", "reserved_bytes", b),
             row("Non-releasable memory", "inactive_split_bytes", b),
             "|" + "-" * (W - 2) + "|",
             row("Allocations", "allocation", c),
             row("Active allocs" + star, "active", c),
             row("GPU reserved segments", "segment", c),
             row("Non-releasable allocs", "inactive_split", c),
             "|" + "=" * (W - 2) + "|"]
    if queued_n:
        exact = st.get("rawdev.queued_frees_exact", True)
        lines.append(f"* includes {'' if exact else 'about '}{queued_n} block(s), {b(queued_b)}, freed with "
                     "cuMemFreeAsync on a stream that has not run the free yet")
    if st:
        alloc, req = st["allocated_bytes.all.current"], st["requested_bytes.all.current"]
        lines.append(f"allocated - requested = {b(alloc - req)}: padding that starts each tensor of an arena at a "
                     f"multiple of {ARENA_ALIGN} bytes")
        if "rawdev.device_free" in st:
            lines.append(f"segments: runs of the pool's 2 MiB granules holding active blocks; device free "
                         f"{b(st['rawdev.device_free'])} of {b(st['rawdev.device_total'])}")
        if st.get("rawdev.driver_error"):
            lines.append(f"driver figures unavailable ({st['rawdev.driver_error']}: the context has a sticky error); "
                         f"the rows from rawdev's own table are current, the pool's show 0")
        failed = dev.allocator.failed_frees()
        if failed:
            lines.append(f"Failed frees: {len(failed)} block(s), {b(sum(x.nbytes for x in failed))} still held by the "
                         f"pool (cuMemFreeAsync failed; a queued free is retried at the next flush):")
            for x in failed[:top]:
                lines.append(f"  {fmt_bytes(x.nbytes):>10} at 0x{x.ptr:x}  {x.owner}: {x.free_error}")
    if abbreviated or not st:
        return "\n".join(lines)
    rows = owner_table(dev)
    nblocks = st["allocation.all.current"]
    arenas = sum(1 for x in live_blocks(dev) if x.parts)
    in_arenas = sum(r["tensors"] for r in rows)
    lines += ["", f"Top owners ({len(rows)} owners; {nblocks} blocks, {arenas} of them arenas holding "
                  f"{in_arenas} tensors):",
              f"  {'owner':<40} {'bytes':>10}  held as"]

    def held(r):
        if r["arena"] is None:
            return f"{r['blocks']} block" + ("s" if r["blocks"] != 1 else "")
        if r["owner"].startswith("padding in "):
            return "arena padding"
        return f"{r['tensors']} tensor" + ("s" if r["tensors"] != 1 else "") + f" in arena {r['arena']}"

    for r in rows[:top]:
        lines.append(f"  {r['owner'][:40]:<40} {b(r['bytes']):>10}  {held(r)}")
    if len(rows) > top:
        rest = rows[top:]
        lines.append(f"  {'… ' + str(len(rest)) + ' more':<40} {b(sum(r['bytes'] for r in rest)):>10}")
    if not rows:
        lines.append("  (no live blocks)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- snapshot
def _block_dict(b, stream=True):
    d = dict(address=b.ptr, size=b.nbytes, requested_size=b.nbytes, state="active_allocated", owner=b.owner,
             stream=_stream_name(b.stream) if stream else None, time=b.time,
             parts=[dict(offset=o, size=n, owner=w) for o, n, w in _parts(b)] if b.parts else [])
    if b.free_error:
        d["free_error"] = b.free_error
    if b.stack:
        d["frames"] = _frames(b.stack)
    return d


def memory_snapshot(device: Any = None, stacks: bool = True) -> dict[str, Any]:
    """The pool as plain dicts (JSON-ready), in the shape of PyTorch's `torch.cuda.memory._snapshot()`:

    {"segments": [{device, address, total_size, allocated_size, active_size, stream, segment_type,
                   blocks: [{address, size, state: "active_allocated"|"inactive", owner, stream, parts,
                             frames?}]}],
     "device_traces": [[events...] per device] (with record_history on),
     "devices": [{index, name, pool figures, free, total}], "owners": [...]}

    Segments are runs of the pool's 2 MiB granules that hold live blocks; "inactive" blocks are the free
    gaps between live blocks inside them. Memory the pool keeps cached elsewhere is `cached` per device.
    """
    devs = [_device(device)] if device is not None else (_opened_devices() or [_device(None)])
    segments, infos, traces = [], [], []
    for dev in devs:
        a = _alloc(dev)
        for lo, hi, bs, gaps in a.segments():
            blocks = [_block_dict(b) for b in bs]
            if not stacks:
                for x in blocks:
                    x.pop("frames", None)
            blocks += [dict(address=g, size=n, requested_size=0, state="inactive", owner=None) for g, n in gaps]
            blocks.sort(key=lambda x: x["address"])
            alloc = sum(b.nbytes for b in bs)
            segments.append(dict(device=dev.index, address=lo, total_size=hi - lo, allocated_size=alloc,
                                 active_size=alloc, requested_size=alloc,
                                 stream=_stream_name(bs[0].stream), segment_type="large", blocks=blocks))
        free, total = _rm.mem_get_info(dev)
        st = a.stats
        infos.append(dict(index=dev.index, name=dev.name, capability=list(dev.capability), free=free, total=total,
                          allocated=st["allocated"], peak_allocated=st["peak"],
                          used=dev.pool_attribute("used"), used_high=dev.pool_attribute("used_high"),
                          reserved=dev.pool_attribute("reserved"), reserved_high=dev.pool_attribute("reserved_high"),
                          cached=max(0, dev.pool_attribute("reserved") - st["allocated"]),
                          num_ooms=st["num_ooms"], blocks=len(a.live),
                          owners=[dict(owner=w, bytes=n, blocks=k) for w, n, k in owner_totals(dev)]))
        traces.append(_history.events(dev.index, stacks))
    from ..runtime import seam
    return dict(version=1, generator="rawdev", time=time.time(), driver=seam.driver_name(),
                granule=_rm.SEGMENT_GRANULE, devices=infos, segments=segments, device_traces=traces)


# ----------------------------------------------------------------------------------------- history
class _History:
    """A ring buffer of (kind, time, block, device) allocator events; owners are read when dumped (an arena's
    parts are tagged just after it is allocated)."""

    def __init__(self):
        self.enabled, self.stacks, self.t0 = False, False, time.time()
        self.ring = collections.deque(maxlen=100_000)
        self.marks = collections.deque(maxlen=100_000)   # (name, stage, time): phases and user marks
        self.phase = None
        self.dropped = 0
        self._listeners = {}   # id(allocator) -> (allocator, fn)

    def attach(self, alloc):
        if id(alloc) in self._listeners:
            return
        idx = alloc.device.index
        ring = self.ring

        def on_event(kind, block, _idx=idx):
            if len(ring) == ring.maxlen:
                self.dropped += 1
            ring.append((kind, time.time(), block, _idx, block.nbytes))

        alloc.listeners.append(on_event)
        alloc.record_stacks = self.stacks
        self._listeners[id(alloc)] = (alloc, on_event)

    def detach_all(self):
        for alloc, fn in self._listeners.values():
            if fn in alloc.listeners:
                alloc.listeners.remove(fn)
            alloc.record_stacks = False
        self._listeners.clear()

    def events(self, device_index=None, stacks=True):
        out = []
        for kind, t, b, idx, n in list(self.ring):
            if device_index is not None and idx != device_index:
                continue
            e = dict(action={"free": "free_requested"}.get(kind, kind), addr=b.ptr, size=n,
                     stream=_stream_name(b.stream), owner=b.owner, time_us=int((t - self.t0) * 1e6),
                     time=t, device=idx)
            if b.parts and kind != "oom":
                e["parts"] = [dict(offset=o, size=m, owner=w) for o, m, w in _parts(b)]
            if stacks and b.stack and kind in ("alloc", "oom"):
                e["frames"] = _frames(b.stack)
            out.append(e)
        return out


_history = _History()


def _hook(alloc):
    _acct(alloc)
    if _history.enabled:
        _history.attach(alloc)


_rm.ALLOCATOR_HOOKS.append(_hook)


def record_history(enabled=True, stacks=True, max_entries=100_000):
    """Record allocator events into a ring buffer of `max_entries`: "alloc", "free_requested" (rawdev gave the
    block back with cuMemFreeAsync, ordered on its stream, as PyTorch's name says) and "oom", each with time,
    size, stream, owner and, with stacks=True, the Python stack that allocated. Applies to devices opened later too.
    `record_history(False)` stops recording (what was recorded stays until the next enable)."""
    if enabled in ("all", "state"):   # PyTorch's _record_memory_history(enabled="all")
        enabled = True
    if not enabled:
        _history.enabled = False
        _history.detach_all()
        _phases.unsubscribe(_phase)
        return
    _history.detach_all()
    _history.enabled, _history.stacks, _history.phase = True, bool(stacks), None
    _phases.subscribe(_phase)
    _history.ring = collections.deque(_history.ring, maxlen=int(max_entries))
    from ..runtime import device as _d
    for d in list(_d._devices.values()):
        _history.attach(d.allocator)


def _phase(name):
    """Subscribed to rawdev.runtime.phases while history is on: "forward" (Module.__call__), "backward"
    (autograd.backward), "optimizer step" (Optimizer.step). Records a mark when the phase changes (nested module
    calls make one "forward" mark)."""
    if _history.enabled and _history.phase != name:
        _history.phase = name
        _history.marks.append((name, "PHASE", time.time()))


class mark:
    """A user mark on the memory timeline (`rawdev mem show --html`): `memory.mark("epoch 2")` marks the moment;
    `with memory.mark("validation"):` marks a range. Recorded while history is on (record_history, or
    `rawdev mem run`); in the snapshot as PyTorch's "external_annotations" (stage START/END)."""

    def __init__(self, name):
        self.name = str(name)
        if _history.enabled:
            _history.marks.append((self.name, "START", time.time()))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if _history.enabled:
            _history.marks.append((self.name, "END", time.time()))
        return False


def annotations():
    """The recorded marks as dicts (oldest first): name, stage ("PHASE" for forward/backward/optimizer step,
    "START"/"END" for user marks), time_us (on the history's clock), time."""
    return [dict(name=n, stage=s, time_us=int((t - _history.t0) * 1e6), time=t) for n, s, t in list(_history.marks)]


def history(device=None, stacks=True):
    """The recorded events as dicts (oldest first): action, addr, size, stream, owner, time_us, frames."""
    return _history.events(None if device is None else _device(device).index, stacks)


def clear_history():
    _history.ring.clear()
    _history.marks.clear()
    _history.phase = None
    _history.dropped = 0
    _history.t0 = time.time()


def dump_snapshot(path, device=None, script=None):
    """Write memory_snapshot() (with the recorded history and marks) as JSON. Never pickle. `script`: the
    program it describes (the HTML page's title)."""
    snap = memory_snapshot(device)
    snap["history_dropped"] = _history.dropped
    snap["external_annotations"] = annotations()
    if script:
        snap["script"] = str(script)
    text = json.dumps(snap, default=str).encode()
    from ..utils.atomic_file import write_atomically  # a unique temporary: concurrent dumps never collide
    write_atomically(path, lambda fh: fh.write(text))
    return path


# --------------------------------------------------------------------------------- pointer inspection
_MEMTYPE = {0: "unknown (not a CUDA pointer)", 1: "host (pinned)", 2: "device", 3: "array", 4: "unified"}


def _ptr_of(x):
    if hasattr(x, "data_ptr"):
        return int(x.data_ptr())
    if hasattr(x, "ptr"):
        return int(x.ptr)
    return int(x)


def _find_block(ptr):
    """(device, Block, offset) of a live rawdev block containing ptr, else (None, None, None)."""
    for dev in _opened_devices():
        for b in list(dev.allocator.live.values()):
            if b.ptr <= ptr < b.ptr + max(b.nbytes, 1):
                return dev, b, ptr - b.ptr
    return None, None, None


def _part_owner(b, off):
    for o, n, who in _parts(b):
        if o <= off < o + n:
            return who
    return b.owner


def pointer_info(x):
    """What the driver and rawdev know about a pointer (an int, a tensor or a buffer): memory type, device,
    the driver's address range (for pool memory the *mapping* holding it, which may hold many blocks),
    rawdev's block (start, size, offset: None outside rawdev), buffer id, pool, and rawdev's owner for it
    (None for memory allocated outside rawdev, e.g. through cuda-python)."""
    ptr = _ptr_of(x)
    if not _opened_devices():
        _device(None).activate()
    else:
        _opened_devices()[0].activate()
    a = _rm.pointer_attributes(ptr)
    dev, b, off = _find_block(ptr)
    pool = a["MEMPOOL_HANDLE"]
    rawdev_pool = dev is not None and pool and pool == int(dev.pool)
    info = dict(ptr=ptr, memory_type=_MEMTYPE.get(a["MEMORY_TYPE"], str(a["MEMORY_TYPE"])),
                device=a["DEVICE_ORDINAL"] if a["MEMORY_TYPE"] else None,
                range_start=a["RANGE_START_ADDR"], range_size=a["RANGE_SIZE"],
                offset=ptr - a["RANGE_START_ADDR"] if a["MEMORY_TYPE"] else None,
                block_start=b.ptr if b is not None else None, block_size=b.nbytes if b is not None else None,
                block_offset=off if b is not None else None,
                buffer_id=a["BUFFER_ID"], pool=pool, pool_owner="rawdev" if rawdev_pool else (
                    "another pool" if pool else None),
                owner=_part_owner(b, off) if b is not None else None,
                block_owner=b.owner if b is not None else None,
                block_stream=_stream_name(b.stream) if b is not None else None,
                allocated_at=(_frames(b.stack) or [None])[0] if b is not None and b.stack else None)
    return info


def format_pointer_info(info):
    rows = [("pointer", f"0x{info['ptr']:x}"), ("memory type", info["memory_type"]), ("device", info["device"]),
            ("block", f"0x{info['block_start']:x} + {info['block_size']} bytes (offset {info['block_offset']})"
             if info.get("block_start") is not None else "-"),
            ("mapping", f"0x{info['range_start']:x} + {info['range_size']} bytes (offset {info['offset']})"
             if info["range_size"] else "-"),
            ("buffer id", info["buffer_id"]),
            ("pool", f"0x{info['pool']:x} ({info['pool_owner']})" if info["pool"] else "-"),
            ("owner", info["owner"] or "not allocated by rawdev"), ("stream", info["block_stream"] or "-")]
    return "\n".join(f"{k:>12}: {v}" for k, v in rows)


_FMTS = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32, "i64": np.int64,
         "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "bf16": np.uint16}


def _range_check(ptr, nbytes):
    dev, b, off = _find_block(ptr)
    if b is not None:
        if off + nbytes > b.nbytes:
            raise ValueError(f"reading {nbytes} bytes at 0x{ptr:x} runs {off + nbytes - b.nbytes} bytes past the end "
                             f"of the {b.nbytes}-byte block of {b.owner} at 0x{b.ptr:x}")
        return dev
    a = _rm.pointer_attributes(ptr)
    if a["MEMORY_TYPE"] != 2:
        raise ValueError(f"0x{ptr:x} is not device memory (cuPointerGetAttributes says: "
                         f"{_MEMTYPE.get(a['MEMORY_TYPE'], a['MEMORY_TYPE'])})")
    if ptr + nbytes > a["RANGE_START_ADDR"] + a["RANGE_SIZE"]:
        raise ValueError(f"{nbytes} bytes at 0x{ptr:x} run past its allocation (0x{a['RANGE_START_ADDR']:x} + "
                         f"{a['RANGE_SIZE']})")
    return _device(a["DEVICE_ORDINAL"])


def read_bytes(x, nbytes):
    """nbytes of device memory at x (pointer, tensor or buffer), after the device's queued work."""
    from ..runtime import get_device
    ptr = _ptr_of(x)
    dev = _range_check(ptr, nbytes) if _opened_devices() else get_device(0)
    dev.synchronize()
    out = np.empty(nbytes, np.uint8)
    if nbytes:
        _rm.copy_dtoh(out, ptr, nbytes, owner="peek")
    return out


def peek(x, n=64, fmt="hex"):
    """Read device memory for inspection: n items of `fmt` at x (a pointer, tensor or buffer).

    fmt="hex": n bytes as a hexdump (address, 16 bytes, ASCII); "f32"/"f16"/"f64"/"i32"/…: n values, 8 per
    line with addresses; "raw": the bytes. Runs after the device's queued work (it synchronizes).
    """
    ptr = _ptr_of(x)
    if fmt in ("hex", "raw"):
        data = read_bytes(ptr, n)
        if fmt == "raw":
            return data.tobytes()
        lines = []
        for i in range(0, n, 16):
            chunk = data[i:i + 16]
            hx = " ".join(f"{v:02x}" for v in chunk)
            asc = "".join(chr(v) if 32 <= v < 127 else "." for v in chunk)
            lines.append(f"0x{ptr + i:x}  {hx:<47}  |{asc}|")
        return "\n".join(lines)
    if fmt not in _FMTS:
        raise ValueError(f"peek: unknown fmt {fmt!r}: expected hex, raw or one of {', '.join(_FMTS)}")
    dt = np.dtype(_FMTS[fmt])
    vals = read_bytes(ptr, n * dt.itemsize).view(dt)
    if fmt == "bf16":
        vals = (vals.astype(np.uint32) << 16).view(np.float32)
    lines = []
    for i in range(0, n, 8):
        lines.append(f"0x{ptr + i * dt.itemsize:x}  " + " ".join(f"{v:>12.6g}" if vals.dtype.kind == "f"
                                                            else f"{v:>12d}"
                                                            for v in vals[i:i + 8]))
    return "\n".join(lines)


def poke(x, data):
    """Write bytes (or a numpy array's bytes) into device memory at x, after the device's queued work.
    A debugging and testing tool (corrupt a device copy on purpose); bounds-checked like peek."""
    ptr = _ptr_of(x)
    buf = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else \
        np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    dev = _range_check(ptr, buf.nbytes)
    dev.synchronize()
    if buf.nbytes:
        _rm.copy_htod(ptr, buf, buf.nbytes, owner="poke")


def checksum(x, nbytes):
    """crc32 of device bytes (for comparing a device copy with a file)."""
    return zlib.crc32(read_bytes(x, nbytes).tobytes())


# -------------------------------------------------------------------------------------- leak check
def _holders():
    """{block ptr: [global names of __main__ that hold it]} (tensors, buffers, modules, one level of containers)."""
    main = sys.modules.get("__main__")
    out = {}
    if main is None:
        return out

    def ptrs(v, depth=0):
        if hasattr(v, "named_parameters") and hasattr(v, "buffers"):
            for t in list(v.parameters()) + list(v.buffers()):
                yield from ptrs(t, depth + 1)
            return
        buf = getattr(v, "_buf", None)
        if buf is not None and hasattr(buf, "ptr"):
            yield buf.ptr
            return
        if type(v).__name__ == "DeviceBuffer":
            yield v.ptr
            return
        if depth == 0 and isinstance(v, (list, tuple, set, dict)):
            for x in list(v.values() if isinstance(v, dict) else v)[:10000]:
                yield from ptrs(x, 1)

    for name, v in list(vars(main).items()):
        if name.startswith("__"):
            continue
        try:
            for p in ptrs(v):
                out.setdefault(p, []).append(name)
        except Exception:
            continue
    return out


def leak_report(device=None):
    """Lines naming every block still live (owner, size, address, and the allocating stack when recorded).
    Empty when nothing is live."""
    import gc
    gc.collect()
    devs = [_device(device)] if device is not None else _opened_devices()
    lines = []
    for dev in devs:
        try:
            dev.allocator.flush()
        except Exception:
            pass
        blocks = sorted(list(dev.allocator.live.values()), key=lambda b: b.time)
        if not blocks:
            continue
        lines.append(f"rawdev leak check: {len(blocks)} block(s), {fmt_bytes(sum(b.nbytes for b in blocks))} still "
                     f"live on {dev} at exit:")
        held = _holders()
        for b in blocks:
            names = ", ".join(w for _, _, w in _parts(b)) if b.parts else b.owner
            by = sorted(set(held.get(b.ptr, [])))
            lines.append(f"  {fmt_bytes(b.nbytes):>10} at 0x{b.ptr:x}  {names}" +
                         (f"  (held by global {', '.join(by)} of __main__)" if by else "") +
                         (f"  (free failed: {b.free_error})" if b.free_error else ""))
            fr = _frames(b.stack)
            user = [f for f in fr if not _in_rawdev(f["filename"])] or fr
            for f in user[:4]:
                lines.append(f"      allocated at {f['filename']}:{f['line']} in {f['name']}: {f['code']}")
        if not any(b.stack for b in blocks):
            lines.append("  (record stacks with RAWDEV_LEAK_CHECK=stacks or rawdev.cuda.memory.record_history())")
    return lines


def _leak_check_at_exit():
    try:
        lines = leak_report()
    except Exception as e:   # the driver may already be gone; say so rather than fail at exit
        lines = [f"rawdev leak check: could not inspect device memory at exit ({e})"]
    if lines:
        print("\n".join(lines), file=sys.stderr)
    else:
        print("rawdev leak check: no device memory left allocated at exit", file=sys.stderr)


_leak_check_installed = False


def install_leak_check(stacks=False):
    """Report live blocks at interpreter exit (what RAWDEV_LEAK_CHECK=1 does; =stacks also records stacks)."""
    global _leak_check_installed
    if stacks and not _history.enabled:
        record_history(True, stacks=True, max_entries=1)
    if not _leak_check_installed:
        _leak_check_installed = True
        # weakref.finalize runs every pending finalizer at exit (queueing the frees of buffers still alive)
        # from its own atexit hook; make sure that hook exists first, so this report runs before it.
        import weakref

        class _Probe:
            pass
        weakref.finalize(_Probe(), lambda: None)
        atexit.register(_leak_check_at_exit)


def _from_env():
    v = os.environ.get("RAWDEV_LEAK_CHECK", "").strip().lower()
    if v and v not in ("0", "false", "no", "off"):
        install_leak_check(stacks=v in ("stacks", "2", "history"))


_from_env()


# PyTorch's private spellings of the above, which its memory-visualization tutorials call
def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None):
    """torch.cuda.memory._record_memory_history: record_history under PyTorch's arguments. enabled: "all" or
    "state" records, None stops; stacks: "python"/"all" keep the Python stack, None does not; context is
    accepted (rawdev records every event with its time); device: the history covers every device.

    Example:
        >>> rawdev.cuda.memory._record_memory_history(enabled="all")
    """
    if enabled not in (None, False, True, "all", "state"):
        raise ValueError(f"Invalid enabled value: {enabled!r}; expected None, 'state' or 'all'")
    record_history(enabled=enabled not in (None, False), stacks=stacks not in (None, False),
                   max_entries=max_entries)


def _snapshot(device=None):
    """torch.cuda.memory._snapshot: memory_snapshot() (segments, blocks and, with history on, device_traces).

    Example:
        >>> s = rawdev.cuda.memory._snapshot()
    """
    return memory_snapshot(device)

