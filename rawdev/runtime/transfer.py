"""Batched host <-> device byte transfers: the pinned staging cache, arena upload, range download, writes.

Its one job is moving bytes in as few driver copies as possible; what those bytes are (tensors, owner
names, dtypes, casts) is the caller's business (rawdev.tensor.moves plans a move and commits it; this
module never sees a Tensor). Inputs are plain data: host uint8 arrays, (DeviceBuffer, byte offset,
nbytes, name) ranges, and a description of each part for error messages.

- `upload_arena`   : pack host byte arrays at ARENA_ALIGN offsets into one pinned staging buffer, allocate
                     one device arena in the compute stream's order, tag each part's owner, one
                     cuMemcpyHtoDAsync on the copy stream between events. All-or-nothing: on any failure
                     it frees what it made and raises with what it was doing.
- `download_ranges`: ranges of device buffers back to the host: nearby ranges of one buffer merged, one
                     cuMemcpyDtoHAsync per merged span into one pinned buffer per device, on the current
                     (compute) stream, so later work there is ordered after the copy.

Lifetimes: the staging buffer, the source arrays and the source device buffers are handed to
memory.keep_alive on the copy stream, so they live until the copy is known complete; that is what
makes non-blocking moves safe. Staging buffers are reused across transfers (`release_staging` drops them).
"""

import os
import weakref

import numpy as np

from ..errors import CudaError, DeviceAssertError, IllegalAddressError, OutOfMemoryError
from . import memory
from .trace import fmt_bytes

__all__ = ["upload_arena", "DeviceSource", "download_ranges", "release_staging", "move_context",
           "reraise", "STAGING_CACHE_MAX"]

# Device->host copies of ranges of one buffer are merged when the gap between them is below this:
# copying a little unused memory is cheaper than another driver call.
_MERGE_GAP = 1 << 20

# Pinned staging buffers are reused across transfers, as PyTorch's caching host allocator reuses pinned
# blocks: cuMemHostAlloc of a large buffer costs more than the copy it serves. One idle buffer per
# device is kept (the larger one, up to this many bytes) and handed out again only once the event
# after its last copy has completed. release_staging() gives it back to the driver.
STAGING_CACHE_MAX = int(os.environ.get("RAWDEV_STAGING_CACHE_BYTES", str(2 << 30)))
_staging: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # runtime Device -> (PinnedBuffer, Event | None)


def _capturing(rdev):
    from .graphs import capturing
    return capturing(rdev.index)


def _acquire_staging(rdev, nbytes, owner):
    entry = _staging.get(rdev)
    # While a CUDA graph is captured no event may be queried (the driver refuses it and invalidates the capture):
    # the cached buffer is not offered then, a new one is made.
    if entry is not None and not _capturing(rdev):
        buf, ev = entry
        if buf.nbytes >= nbytes and (ev is None or ev.query()):
            del _staging[rdev]
            return buf
    return memory.PinnedBuffer(nbytes, owner=owner)


def _offer_staging(rdev, buf, ev=None):
    """Keep buf for the next transfer (ev: the event after its last copy). A buffer not kept is dropped; one
    still being copied from is held by memory.keep_alive until its copy completes."""
    if not 0 < buf.nbytes <= STAGING_CACHE_MAX or _capturing(rdev):
        return   # too big, or read by a captured copy at every replay of its graph: never handed out again
    entry = _staging.get(rdev)
    if entry is None or entry[0].nbytes <= buf.nbytes:
        _staging[rdev] = (buf, ev)


def release_staging():
    """Drop the cached pinned staging buffers (rawdev.cuda.empty_cache calls this)."""
    _staging.clear()


# ----------------------------------------------------------------------------- error context
def _describer(describe, names, sizes):
    """describe(i) from a callable, a list of strings, or (None) the parts' names and sizes."""
    if callable(describe):
        return describe
    if describe is not None:
        return describe.__getitem__
    if names is None:
        return lambda i: f"part {i} ({fmt_bytes(sizes[i])})"
    return lambda i: f"'{names[i]}' ({fmt_bytes(sizes[i])})"


def move_context(what, dest, sizes, describe):
    """context(indices, step) -> "moving {what} to {dest} ({n} tensors, {total}: {first names}): {step}".

    sizes[i]: part i's byte count; describe(i) (or describe[i]): how an error names part i. Names are only
    made when an error needs them (a move can have thousands of parts)."""
    describe = _describer(describe, None, sizes)

    def context(indices, step):
        idx = list(indices)
        total = sum(memory.align(sizes[i]) for i in idx)
        names = ", ".join(describe(i) for i in idx[:4]) + (f", … {len(idx) - 4} more" if len(idx) > 4 else "")
        return f"moving {what} to {dest} ({len(idx)} tensors, {fmt_bytes(total)}: {names}): {step}"
    return context


def reraise(e, context):
    """Re-raise a driver error with what the transfer was doing; other errors get a note."""
    if type(e) in (CudaError, OutOfMemoryError, IllegalAddressError, DeviceAssertError):
        inner = f"; {e.context}" if e.context else ""
        raise type(e)(e.call, e.code, e.name, e.description, context + inner, e.detail) from e
    if isinstance(e, CudaError):
        raise e
    e.add_note(context)
    raise e


# ----------------------------------------------------------------------------- host -> new device arena
class DeviceSource:
    """A part of an arena upload whose bytes are already on the arena's device: copied device to device."""
    __slots__ = ("ptr", "nbytes")

    def __init__(self, ptr, nbytes):
        self.ptr, self.nbytes = int(ptr), int(nbytes)


def upload_arena(rdev, parts, owner, describe=None, context=None):
    """Place host bytes in one new device arena on rdev: one staging buffer, one allocation, one copy.

    parts: [(name, host uint8 array or DeviceSource)]; each part is tagged `name` in the arena (the memory
    tool's owner). Host parts go through the staging buffer in one HtoD copy (over the span up to the last
    host part); DeviceSource parts are then copied device to device on the compute stream.
    owner: the arena's owner tag and the copy's owner in traces. describe(i) / context(indices, step): see
    move_context (default: moving {owner} to {rdev}). Returns (arena DeviceBuffer, [byte offset of each part]).
    The copy is ordered before later work on rdev's compute stream. Nothing outside this function sees the
    arena until it returns; on failure it frees what it made and raises with the step it was at.
    """
    sizes = [data.nbytes for _, data in parts]
    on_device = [isinstance(data, DeviceSource) for _, data in parts]
    describe = _describer(describe, [n for n, _ in parts], sizes)
    if context is None:
        context = move_context(owner, rdev, sizes, describe)
    offsets, off = [], 0
    for n in sizes:
        offsets.append(off)
        off += memory.align(n)
    total = off
    host_end = total if not any(on_device) else \
        max([offsets[i] + sizes[i] for i in range(len(parts)) if not on_device[i]], default=0)
    staging = arena = None
    copied = False
    packing = None   # the part being packed, described only if something fails
    step = "allocating the pinned staging buffer"
    try:
        if host_end:
            staging = _acquire_staging(rdev, host_end, f"staging for {owner}")
        step = "packing the staging buffer"
        for i, (_, data) in enumerate(parts):
            if sizes[i] and not on_device[i]:
                arr = staging.array
                packing = i
                arr[offsets[i]:offsets[i] + sizes[i]] = data
        packing = None
        step = f"allocating the {fmt_bytes(total)} device arena"
        # Allocated in the compute stream's order, so that its eventual free is ordered after the
        # kernels that use it; the copy stream then waits for that point before writing into it.
        arena = memory.DeviceBuffer.alloc(rdev, total, stream=rdev.compute_stream, owner=owner)
        for (name, _), o, n in zip(parts, offsets, sizes):
            arena.tag(o, n, name)
        step = "ordering the copy after the arena's allocation"
        rdev.copy_stream.wait_event(rdev.compute_stream.record_event())
        if host_end:
            step = "copying the staging buffer to the device arena"
            memory.copy_htod(arena.ptr, staging.ptr, host_end, stream=rdev.copy_stream, owner=owner)
            copied = True
        step = "ordering the compute stream after the copy"
        copied_ev = rdev.copy_stream.record_event()
        rdev.compute_stream.wait_event(copied_ev)
        for i, (name, data) in enumerate(parts):
            if on_device[i] and sizes[i]:
                packing = i
                step = "copying device to device into the arena"
                memory.copy_dtod(arena.ptr + offsets[i], data.ptr, sizes[i], stream=rdev.compute_stream, owner=name)
        packing = None
        if staging is not None:
            memory.keep_alive(rdev.copy_stream, staging, *[d for d, dev in zip((d for _, d in parts), on_device)
                                                           if not dev], event=copied_ev)
            _offer_staging(rdev, staging, copied_ev)
        return arena, offsets
    except BaseException as e:
        _undo_upload(rdev, staging, arena, copied)
        if packing is not None:
            step = (f"copying {describe(packing)} device to device into the arena" if on_device[packing]
                    else f"packing {describe(packing)} into the staging buffer")
        reraise(e, context(range(len(parts)), step))


def _undo_upload(rdev, staging, arena, copied):
    if copied:  # the copy may still be reading the staging buffer
        try:
            rdev.copy_stream.synchronize()
        except Exception:
            pass
    if arena is not None:
        try:
            arena.free()
        except Exception:
            pass
    if staging is not None:
        staging.free()


# ----------------------------------------------------------------------------- device ranges -> host
def download_ranges(ranges, owner, non_blocking=False, describe=None, context=None):
    """Read ranges of device buffers to the host: one pinned buffer and one DtoH per merged span per device.

    ranges: [(DeviceBuffer, byte offset, nbytes, name)]; name is the copy's owner in traces when a span holds
    one range (else `owner`). describe(i) / context(indices, step): see move_context (default: moving
    {owner} to cpu). Returns [(host uint8 array, event, pinned buffer)] in the order of `ranges`:
    - blocking: each array is a view of one private host copy per device; event and buffer are None;
    - non_blocking: each array is a view of a pinned buffer that the copy fills once `event` completes
      (read it only after event.synchronize()); the buffer is the range's own (never a cached one).
    The copies are ordered after the work queued so far on each device's compute stream; the source
    buffers live until the copies complete. On failure nothing is returned and the staging is freed.
    """
    sizes = [r[2] for r in ranges]
    describe = _describer(describe, [r[3] for r in ranges], sizes)
    if context is None:
        context = move_context(owner, "cpu", sizes, describe)
    by_dev = {}
    for i, r in enumerate(ranges):
        by_dev.setdefault(r[0].device, []).append(i)
    out = [None] * len(ranges)
    for rdev, idx in by_dev.items():
        for i, res in zip(idx, _download_one_device(rdev, ranges, idx, owner, non_blocking, describe, context)):
            out[i] = res
    return out


def _download_one_device(rdev, ranges, idx, owner, non_blocking, describe, context):
    # Group by source buffer; merge nearby ranges so an arena comes back in one copy.
    by_buf = {}
    for i in idx:
        buf = ranges[i][0]
        by_buf.setdefault(id(buf), (buf, []))[1].append(i)
    spans = []  # [buf, lo, hi, range indices]
    for buf, its in by_buf.values():
        its.sort(key=lambda i: ranges[i][1])
        cur = None
        for i in its:
            lo, hi = ranges[i][1], ranges[i][1] + ranges[i][2]
            if cur and lo - cur[2] <= _MERGE_GAP:
                cur[2] = max(cur[2], hi)
                cur[3].append(i)
            else:
                cur = [buf, lo, hi, [i]]
                spans.append(cur)
    off, layout = 0, []
    for span in spans:
        layout.append(off)
        off += memory.align(span[2] - span[1])
    total = off
    staging, step = None, "allocating the pinned staging buffer"
    try:
        # Non-blocking: the results will live in this buffer, so it is their own (never a cached one).
        staging = memory.PinnedBuffer(total, owner=f"{owner} on the host") if non_blocking else \
            _acquire_staging(rdev, total, f"staging for {owner}")
        # On the current (compute) stream, as PyTorch issues it: work queued after the copy (an in-place update of
        # the source, a kernel reusing its freed memory) is then ordered after it. On a side copy stream nothing
        # would make later compute work wait for a non-blocking copy.
        stream = rdev.compute_stream
        for (buf, lo, hi, its), soff in zip(spans, layout):
            if hi > lo:
                step = f"copying {fmt_bytes(hi - lo)} holding {', '.join(describe(i) for i in its[:3])} to the host"
                memory.copy_dtoh(staging.ptr + soff, buf.ptr + lo, hi - lo, stream=stream,
                                 owner=ranges[its[0]][3] if len(its) == 1 else owner)
        step = "recording the copy's completion event"
        done = stream.record_event()
        # The source device buffers must outlive the copy even when their owners move on.
        memory.keep_alive(stream, *[s[0] for s in spans], event=done)
    except BaseException as e:
        if staging is not None:
            try:
                rdev.compute_stream.synchronize()
            except Exception:
                pass
            staging.free()
        reraise(e, context(idx, step))
    if non_blocking:
        block = staging.array     # the results live in pinned memory; reads wait for `done`
    else:
        # One host copy of the whole block frees the pinned buffer at once; the results are views of it,
        # as they were views of one arena on the device.
        done.synchronize()
        block = np.array(staging.array[:total], copy=True)
        _offer_staging(rdev, staging)
    result = {}
    for (_, lo, _, its), soff in zip(spans, layout):
        for i in its:
            start = soff + ranges[i][1] - lo
            result[i] = block[start:start + ranges[i][2]]
    ev, pinned = (done, staging) if non_blocking else (None, None)
    return [(result[i], ev, pinned) for i in idx]


# ----------------------------------------------------------------------------- host -> existing device buffers
