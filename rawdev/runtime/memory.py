"""Device memory from rawdev's stream-ordered pool, pinned host memory, copies, and the allocation table.

Every device allocation is a `Block` in its device's `Allocator` table: address, size, stream, owner
tag (and named parts for arenas), optionally the Python stack that made it. The memory tool reads
this table; the pool's own attributes are the driver's view of the same memory.

Frees follow numba's rule: a finalizer never calls the driver, it queues the free; the queue is
flushed at safe points (the next allocation, a synchronize). The table changes only when the driver
call succeeded: a block whose cuMemFreeAsync failed stays in the table (with its owner) marked with the
error, so memory_allocated() and the memory tool still show it; a queued free that failed is retried at
the next flush, an explicit DeviceBuffer.free() that failed raises and leaves the buffer freeable.
"""
import ctypes
import os
import sys
import threading
import time
import traceback
import warnings
import weakref
from typing import Any

import numpy as np

from ..errors import CudaError, OutOfMemoryError
from . import seam
from .seam import call
from .trace import fmt_bytes

# The device registry, runtime/device.py, sits above this module (a Device owns its Allocator). It binds itself
# here when it is imported, which the runtime package does first, so this module never imports it back.
_devices: Any = None


def bind_devices(registry):
    """Called by runtime/device.py at import: the module whose ensure_context() and get_device() this one uses."""
    global _devices
    _devices = registry

ARENA_ALIGN = 256           # byte alignment of each tensor inside a move's arena (cudaMalloc's guarantee)
SEGMENT_GRANULE = 2 << 20   # the pool maps memory in 2 MiB granules; the memory tool groups blocks by them
ALLOCATOR_HOOKS: list = []  # callables(allocator) run for each new Allocator (the memory tool attaches history)
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_site():
    """'train.py:42': the first frame outside the rawdev package (the user's line that asked for memory)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_PKG_DIR) and not fn.startswith("<frozen"):
            return f"{os.path.basename(fn)}:{f.f_lineno}"
        f = f.f_back
    return "rawdev"


class Block:
    """One live device allocation, as the allocation table sees it."""
    __slots__ = ("ptr", "nbytes", "stream", "owner", "parts", "stack", "time", "free_error", "used_on")

    def __init__(self, ptr, nbytes, stream, owner, stack):
        self.ptr, self.nbytes, self.stream, self.owner = ptr, nbytes, stream, owner
        self.used_on = []   # other streams that use it (Tensor.record_stream): its free waits for their work
        self.parts, self.stack, self.time = [], stack, time.time()
        self.free_error = None   # "CUDA_ERROR_…: …" when a cuMemFreeAsync of this block failed (it is still held)

    def owners(self):
        """[(offset, nbytes, owner)]: the named parts of an arena, or the whole block."""
        return self.parts or [(0, self.nbytes, self.owner)]


class Allocator:
    """rawdev's allocation table and statistics for one device, over the driver's memory pool."""

    def __init__(self, device):
        self.device = device
        self.live = {}                  # ptr -> Block
        self.pending_frees = []         # (ptr, stream handle) queued by finalizers
        self.kept = []                  # (event, objects) alive until the event completes
        self.listeners = []             # callables(kind, block) for history: kind in alloc/free/oom
        self.record_stacks = False
        self.capture_pool = None        # the GraphPool that serves allocations while a CUDA graph is captured
        self.graph_pools = []           # GraphPools whose block is still allocated (their ranges free there)
        self.memory_fraction = 1.0      # rawdev.cuda.set_per_process_memory_fraction: a cap on allocated bytes
        self.lock = threading.RLock()   # re-entered: a listener may read the figures (and flush) inside an event
        self.reset_stats()
        for hook in ALLOCATOR_HOOKS:
            hook(self)

    def reset_stats(self):
        self.stats = dict(allocated=0, peak=0, allocated_total=0, freed_total=0,
                          alloc_count=0, free_count=0, num_ooms=0, count_peak=0)

    def _notify(self, kind, block):
        for fn in self.listeners:
            fn(kind, block)

    def alloc(self, nbytes, stream, owner):
        self.flush()
        if owner is None:   # an untagged allocation is named after the user's line that made it
            owner = f"tensor at {user_site()}"
        def ctx():
            return f"allocating {fmt_bytes(nbytes)} for {owner or 'an unnamed tensor'} on {self.device}"
        pool = self.capture_pool
        if pool is not None:   # capturing a CUDA graph: a range of its private pool, no driver call
            ptr = pool.take(nbytes, owner)
            if ptr is None:
                raise OutOfMemoryError("cuMemAllocFromPoolAsync", 2, "CUDA_ERROR_OUT_OF_MEMORY",
                                       f"the CUDA graph's private pool ({fmt_bytes(pool.nbytes)}, "
                                       f"{fmt_bytes(pool.in_use())} in use) has no free range of {fmt_bytes(nbytes)}",
                                       ctx(), "capture with a larger pool: rawdev.cuda.graph(g, pool_size=...) or "
                                       "RAWDEV_GRAPH_POOL_BYTES")
            return Block(ptr, nbytes, stream, owner, traceback.format_stack()[:-1] if self.record_stacks else None)
        if self.memory_fraction < 1.0:
            self._check_fraction(nbytes, stream, owner, ctx)
        try:
            ptr = call("cuMemAllocFromPoolAsync", nbytes, self.device.pool, stream.handle,
                       ctx=ctx, nbytes=nbytes, stream=stream.handle, owner=owner)
        except OutOfMemoryError as e:
            self.stats["num_ooms"] += 1
            self._notify("oom", Block(0, nbytes, stream, owner,
                                      traceback.format_stack()[:-1] if self.record_stacks else None))
            raise OutOfMemoryError(e.call, e.code, e.name, e.description, ctx(),
                                   self.oom_report(nbytes, owner)) from None
        stack = traceback.format_stack()[:-1] if self.record_stacks else None
        block = Block(int(ptr), nbytes, stream, owner, stack)
        with self.lock:
            live = self.live
            live[block.ptr] = block
            s = self.stats
            s["allocated"] = allocated = s["allocated"] + nbytes
            s["allocated_total"] += nbytes
            s["alloc_count"] += 1
            if allocated > s["peak"]:
                s["peak"] = allocated
            if len(live) > s["count_peak"]:
                s["count_peak"] = len(live)
        for fn in self.listeners:   # _notify, inlined: once per allocation
            fn("alloc", block)
        return block

    def _check_fraction(self, nbytes, stream, owner, ctx):
        """Refuse, as the driver would when full, an allocation that takes this process past its fraction."""
        allowed = int(self.memory_fraction * self.device.total_memory)
        if self.stats["allocated"] + nbytes <= allowed:
            return
        self.stats["num_ooms"] += 1
        self._notify("oom", Block(0, nbytes, stream, owner, None))
        raise OutOfMemoryError("cuMemAllocFromPoolAsync", 2, "CUDA_ERROR_OUT_OF_MEMORY",
                               f"not called: set_per_process_memory_fraction({self.memory_fraction:g}) allows this "
                               f"process {fmt_bytes(allowed)} and {fmt_bytes(self.stats['allocated'])} is allocated",
                               ctx(), self.oom_report(nbytes, owner))

    def free(self, ptr, stream_handle):
        """cuMemFreeAsync, then take the block out of the table: on failure the block stays, marked.

        The lock is held across the call: once the driver has the free, another thread's allocation may be
        handed the same address, and its entry must go into the table after this one has left it."""
        for pool in self.graph_pools:
            if pool.owns(ptr) and ptr in pool.taken:   # a range of a CUDA graph's pool: back to the pool
                pool.give_back(ptr)
                return
        with self.lock:
            block = self.live.get(ptr)
            try:
                if block is not None and block.used_on:   # record_stream: no reuse before those streams are done
                    for other in block.used_on:
                        if other._int != int(stream_handle) and other.device is self.device:
                            ev = other.record_event()   # held until the wait is queued
                            call("cuStreamWaitEvent", stream_handle, ev.handle, 0,
                                 ctx=f"ordering a free after the {other.label} stream's use of it",
                                 stream=stream_handle)
                    block.used_on = []
                call("cuMemFreeAsync", ptr, stream_handle,
                     ctx=lambda: f"freeing {fmt_bytes(block.nbytes) if block else ''} "
                     f"of {block.owner if block else 'memory'} on {self.device}",
                     nbytes=block.nbytes if block else None, stream=stream_handle,
                     owner=block.owner if block else None)
            except CudaError as e:
                if block is not None:
                    block.free_error = f"{e.name}: {e.description}"
                raise
            if block is not None:
                del self.live[ptr]
                self.stats["allocated"] -= block.nbytes
                self.stats["freed_total"] += block.nbytes
                self.stats["free_count"] += 1
                self._notify("free", block)

    def _flush_pool_frees(self):
        n = len(self.pending_frees)
        due, self.pending_frees[:n] = self.pending_frees[:n], []
        for ptr, stream_handle in due:
            if any(p.owns(ptr) and ptr in p.taken for p in self.graph_pools):
                self.free(ptr, stream_handle)
            else:
                self.pending_frees.append((ptr, stream_handle))

    def failed_frees(self):
        """The live blocks whose last cuMemFreeAsync failed (still held by the pool), by address."""
        return sorted((b for b in list(self.live.values()) if b.free_error), key=lambda b: b.ptr)

    def flush(self):
        """Free what finalizers queued and release objects whose copies are done. Called at safe points.

        A queued free that fails stays queued (its block stays in the table, marked) and is tried again
        at the next flush; the first failure of a block is reported as a RuntimeWarning, not raised into
        whatever unrelated allocation happened to flush the queue."""
        if self.capture_pool is not None:   # capturing: only ranges of graph pools can be given back now
            self._flush_pool_frees()
            return
        if self.kept:   # first, so buffers whose last holder was a finished copy are freed in this pass
            with self.lock:   # keep_alive() appends concurrently: prune only the entries seen here
                n = len(self.kept)
                self.kept[:n] = [(ev, objs) for ev, objs in self.kept[:n] if not ev.query()]
        failed = []
        while self.pending_frees:   # checked first: every allocation flushes, and a raised IndexError costs
            try:
                ptr, stream_handle = self.pending_frees.pop()
            except IndexError:   # another thread emptied the queue
                break
            block = self.live.get(ptr)
            first = block is None or block.free_error is None
            try:
                self.free(ptr, stream_handle)
            except CudaError as e:
                failed.append((ptr, stream_handle))
                if first:
                    warnings.warn(f"rawdev: a queued free failed and will be retried at the next flush; the block "
                                  f"stays in the allocation table: {e}", RuntimeWarning, stacklevel=2)
        if failed:
            self.pending_frees.extend(failed)

    def segments(self, granule=SEGMENT_GRANULE):
        """The live blocks grouped by address into segments (see segments_of)."""
        return segments_of(list(self.live.values()), granule)

    def fragmentation(self, device_free):
        """(largest free block, fragmentation ratio): free memory rawdev could be given is the device's free
        memory plus its pool's cached reserve; the ratio is 1 - largest/total (0: all of it in one piece)."""
        reserved = self.device.pool_attribute("reserved")
        cached = max(0, reserved - self.stats["allocated"])
        largest_gap = max((n for *_, gaps in self.segments() for _, n in gaps), default=0)
        largest = max(device_free, min(largest_gap, cached) if cached else 0)
        total = device_free + cached
        return largest, (1.0 - largest / total) if total else 0.0

    def owner_totals(self):
        """{owner: bytes} over the live blocks (arena parts by their own names)."""
        owners = {}
        for b in list(self.live.values()):
            for _, n, who in b.owners():
                owners[who or "unnamed"] = owners.get(who or "unnamed", 0) + n
        return owners

    def oom_report(self, requested, owner=None):
        """The lines an OutOfMemoryError adds: what was asked, what the device and rawdev hold, who owns it,
        the largest free block and how fragmented free memory is, and one line of advice."""
        free, total = call("cuMemGetInfo", ctx="reading free device memory for an out-of-memory report")
        reserved = self.device.pool_attribute("reserved")
        cached = max(0, reserved - self.stats["allocated"])
        largest, frag = self.fragmentation(free)
        top = sorted(self.owner_totals().items(), key=lambda kv: -kv[1])[:5]
        lines = [f"requested {fmt_bytes(requested)}" + (f" for {owner}" if owner else "") + f" on {self.device}; "
                 f"device free {fmt_bytes(free)} of {fmt_bytes(total)}; "
                 f"rawdev holds {fmt_bytes(self.stats['allocated'])} "
                 f"in {len(self.live)} blocks; reserved by rawdev's pool {fmt_bytes(reserved)} "
                 f"({fmt_bytes(cached)} of it cached, not in use)",
                 f"largest free block {fmt_bytes(largest)}; fragmentation {frag:.0%} "
                 f"(1 - largest free block / (device free + cached))"]
        if top:
            lines.append("top owners: " + ", ".join(f"{who} {fmt_bytes(n)}" for who, n in top))
        acts = sum(n for who, n in top if "output" in who or "input" in who or "activation" in who)
        if cached >= requested and largest < requested:
            # Enough cached in total, but split between live blocks: the pool already gave back its empty
            # segments before failing, so empty_cache() cannot help here.
            first = (f"freeing or moving the tensors between the free ranges (free memory is fragmented: "
                     f"{fmt_bytes(cached)} cached, no range of {fmt_bytes(requested)})")
            rest = "allocate long-lived tensors first (model.cuda() before training), or a smaller batch"
        elif cached >= requested:
            first = "rawdev.cuda.empty_cache() to release cached blocks"
            rest = "rawdev.utils.checkpoint for activations, or a smaller batch"
        elif acts * 2 >= sum(n for _, n in top):
            first = "rawdev.utils.checkpoint to recompute activations instead of keeping them"
            rest = "a smaller batch, or rawdev.cuda.empty_cache() to release cached blocks"
        else:
            first = "a smaller batch"
            rest = "rawdev.utils.checkpoint for activations, or rawdev.cuda.empty_cache() to release cached blocks"
        lines.append(f"advice: try {first}; else {rest}")
        return "\n".join(lines)


class DeviceBuffer:
    """A device allocation from the pool. Freed by .free() or, once unreachable, by a queued free."""
    __slots__ = ("device", "block", "ptr", "nbytes", "_unfreed", "__weakref__")

    def __init__(self, device, block):
        self.device, self.block, self.ptr, self.nbytes = device, block, block.ptr, block.nbytes
        # The free this buffer still owes: (queue, entry), taken by whichever of free() and __del__ comes first.
        # A list popped rather than a flag tested and set: list.pop is atomic, so two threads calling free()
        # at once free it once. (__del__ rather than weakref.finalize: every op output is one of these, and a
        # finalizer costs microseconds to register and to run.)
        self._unfreed = [(device.allocator.pending_frees, (block.ptr, block.stream.handle))] if block.ptr else []

    def __del__(self):
        # never calls the driver: the free is queued and flushed at the next safe point (the next allocation)
        unfreed = self._unfreed
        if unfreed:
            queue, entry = unfreed.pop()
            queue.append(entry)

    @classmethod
    def alloc(cls, device, nbytes, stream=None, owner=None):
        """Allocate nbytes on device, ordered on `stream` (default: the device's compute stream)."""
        device.activate()
        stream = stream or device.compute_stream
        if nbytes == 0:   # the driver rejects empty allocations; an empty tensor still needs a buffer
            return cls(device, Block(0, 0, stream, owner, None))
        return cls(device, device.allocator.alloc(nbytes, stream, owner))

    @property
    def owner(self):
        return self.block.owner

    @owner.setter
    def owner(self, value):
        self.block.owner = value

    def tag(self, offset, nbytes, owner):
        """Name a sub-range of this buffer (a tensor inside an arena) for the memory tool."""
        self.block.parts.append((offset, nbytes, owner))

    def free(self, stream=None):
        """Free now, in order on `stream` (default: the stream it was allocated on). If the driver refuses,
        the CudaError propagates and the buffer stays allocated and freeable (again, or by its finalizer)."""
        try:
            owed = self._unfreed.pop()
        except IndexError:   # freed already (or an empty buffer)
            return
        try:
            self.device.allocator.free(self.ptr, (stream or self.block.stream).handle)
        except BaseException:
            self._unfreed.append(owed)
            raise

    def __repr__(self):
        return f"<DeviceBuffer {fmt_bytes(self.nbytes)} at 0x{self.ptr:x} on {self.device} owner={self.owner!r}>"



class ExternalBuffer:
    """Device memory another library owns (a DLPack import): used like a DeviceBuffer, never freed by rawdev
    and not in its allocation table; `release` (the producer's deleter) runs when the last user is gone."""
    __slots__ = ("device", "block", "ptr", "nbytes", "_finalizer", "__weakref__")

    def __init__(self, device, ptr, nbytes, release, owner="external"):
        self.device, self.ptr, self.nbytes = device, int(ptr), int(nbytes)
        self.block = Block(self.ptr, self.nbytes, device.compute_stream, owner, None)
        self._finalizer = weakref.finalize(self, release)

    @property
    def owner(self):
        return self.block.owner

    def tag(self, offset, nbytes, owner):
        self.block.parts.append((offset, nbytes, owner))

    def free(self, stream=None):
        self._finalizer()

    def __repr__(self):
        return f"<ExternalBuffer {fmt_bytes(self.nbytes)} at 0x{self.ptr:x} on {self.device} owner={self.owner!r}>"

class PinnedBuffer:
    """Page-locked host memory from cuMemHostAlloc, viewed as a numpy uint8 array. Freed by finalizer."""

    def __init__(self, nbytes, owner="staging"):
        self.nbytes, self.owner = nbytes, owner
        _devices.ensure_context()
        self.ptr = int(call("cuMemHostAlloc", max(nbytes, 1), 0, ctx=lambda: f"allocating {fmt_bytes(nbytes)} of "
                            f"pinned host memory for {owner}", nbytes=nbytes, owner=owner))
        raw = (ctypes.c_uint8 * nbytes).from_address(self.ptr)
        raw._keep = self   # the numpy view keeps the pinned memory alive
        self.array = np.ctypeslib.as_array(raw) if nbytes else np.empty(0, np.uint8)
        self._finalizer = weakref.finalize(self, _free_host, self.ptr)

    def free(self):
        self._finalizer()


def _free_host(ptr):
    drv = seam._drv
    if drv is not None:
        drv.cuMemFreeHost(ptr)   # cannot raise from a finalizer; a failure here means the context is gone


def _host_ptr(x):
    return x.ctypes.data if isinstance(x, np.ndarray) else int(x)


def _device_of(ptr):
    """The opened Device whose memory holds device address `ptr` (from the driver's pointer attributes)."""
    from cuda.bindings.driver import CUpointer_attribute

    ordinal, = call("cuPointerGetAttributes", 1, [CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL], int(ptr),
                    ctx=lambda: f"finding the device of 0x{int(ptr):x}")
    return _devices.get_device(int(ordinal) if int(ordinal) >= 0 else 0)


def _ordered(dev_ptr, stream):
    """(stream to order a copy on, whether to wait for it): a copy without a stream runs on the compute stream
    of the pointer's device and is waited for, never on the legacy stream (rawdev's streams are non-blocking:
    the legacy stream does not wait for them, so a synchronous cuMemcpy would race the kernels queued there)."""
    if stream is not None:
        stream.device.activate()
        return stream, False
    dev = _device_of(dev_ptr)
    dev.activate()
    return dev.compute_stream, True


def copy_htod(dst, src, nbytes, stream=None, owner=None):
    """Host (int address or ndarray) → device, in order on `stream`. stream=None: in order on the device's compute
    stream, returning once the data has landed (so the source may be reused and any stream may read it)."""
    s, wait = _ordered(dst, stream)
    call("cuMemcpyHtoDAsync", dst, _host_ptr(src), nbytes, s.handle,
         ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} to {s.device}", nbytes=nbytes,
         stream=s.handle, owner=owner)
    if wait:
        s.synchronize()


def copy_dtoh(dst, src, nbytes, stream=None, owner=None):
    """Device → host (int address or ndarray), in order on `stream`. stream=None: in order on the device's compute
    stream (after the kernels queued there), returning once the bytes are in `dst`."""
    s, wait = _ordered(src, stream)
    call("cuMemcpyDtoHAsync", _host_ptr(dst), src, nbytes, s.handle,
         ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} from {s.device} to the host",
         nbytes=nbytes, stream=s.handle, owner=owner)
    if wait:
        s.synchronize()


def copy_dtod(dst, src, nbytes, stream=None, owner=None):
    """Device → device, in order on `stream`. stream=None: on the compute stream, waited for."""
    s, wait = _ordered(dst, stream)
    call("cuMemcpyDtoDAsync", dst, src, nbytes, s.handle,
         ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} on {s.device}", nbytes=nbytes,
         stream=s.handle, owner=owner)
    if wait:
        s.synchronize()


def memset_d8(ptr, value, nbytes, stream):
    stream.device.activate()
    call("cuMemsetD8Async", ptr, value, nbytes, stream.handle, ctx=lambda: f"setting {fmt_bytes(nbytes)} to {value}",
         nbytes=nbytes, stream=stream.handle)


def memset_d32(ptr, value, count, stream):
    stream.device.activate()
    call("cuMemsetD32Async", ptr, value, count, stream.handle, ctx=lambda: f"setting {count} 32-bit words",
         nbytes=4 * count, stream=stream.handle)


def keep_alive(stream, *objs, event=None):
    """Hold objs (staging buffers, source arrays) until the work queued so far on `stream` has completed
    (`event`: one the caller just recorded there, so as not to record a second at the same point).
    While a CUDA graph is captured the copies are graph nodes that every replay runs again: objs then live as long
    as the graph's private pool (no event of a capture may be queried)."""
    alloc = stream.device.allocator
    if alloc.capture_pool is not None:
        alloc.capture_pool.held.extend(objs)
        return
    alloc.kept.append((event or stream.record_event(), objs))


def pool_used(device):
    return device.pool_attribute("used")


def align(n, a=ARENA_ALIGN):
    return (n + a - 1) // a * a


# ------------------------------------------------------------------ for the memory tool (rawdev.cuda.memory)
def mem_get_info(device):
    """(free, total) bytes of the device, from cuMemGetInfo."""
    device.activate()
    return tuple(int(x) for x in call("cuMemGetInfo", ctx=f"reading free memory of {device}"))


def trim_pool(device, keep=0):
    """Release the pool's cached (reserved, unused) memory down to `keep` bytes: cuMemPoolTrimTo."""
    device.synchronize()   # frees queued on streams land first, so their memory can go back too
    call("cuMemPoolTrimTo", device.pool, keep, ctx=f"releasing cached memory of {device}")


def reset_pool_peaks(device):
    """Reset the pool's USED_MEM_HIGH / RESERVED_MEM_HIGH (the driver only accepts 0: 'reset to current')."""
    from cuda.bindings.driver import CUmemPool_attribute, cuuint64_t
    for a in ("CU_MEMPOOL_ATTR_USED_MEM_HIGH", "CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH"):
        call("cuMemPoolSetAttribute", device.pool, getattr(CUmemPool_attribute, a), cuuint64_t(0),
             ctx="resetting the pool's peak figures")


POINTER_ATTRIBUTES = ("MEMORY_TYPE", "DEVICE_ORDINAL", "RANGE_START_ADDR", "RANGE_SIZE", "BUFFER_ID",
                      "MEMPOOL_HANDLE", "CONTEXT")


def pointer_attributes(ptr):
    """{name: int} from cuPointerGetAttributes for any pointer (rawdev's, cuda-python's, or unknown: zeros)."""
    from cuda.bindings.driver import CUpointer_attribute
    attrs = [getattr(CUpointer_attribute, "CU_POINTER_ATTRIBUTE_" + a) for a in POINTER_ATTRIBUTES]
    vals = call("cuPointerGetAttributes", len(attrs), attrs, int(ptr), ctx=f"reading the attributes of 0x{int(ptr):x}")
    out = {}
    for a, v in zip(POINTER_ATTRIBUTES, vals):
        try:
            out[a] = int(v)
        except (TypeError, ValueError):
            out[a] = int(getattr(v, "value", 0) or 0)
    return out


def driver_version():
    """The driver's CUDA version as an int (12080 = 12.8)."""
    return int(call("cuDriverGetVersion", ctx="reading the driver version"))


def segments_of(blocks, granule=SEGMENT_GRANULE):
    """Blocks grouped by address into segments (runs of the pool's 2 MiB granules that hold them):
    [(start, end, [Block...], [(gap_start, gap_size)...])], sorted by address."""
    segs = []
    for b in sorted((b for b in blocks if b.ptr), key=lambda b: b.ptr):
        lo, hi = b.ptr // granule * granule, -(-(b.ptr + b.nbytes) // granule) * granule
        if segs and lo <= segs[-1][1]:
            segs[-1][1] = max(segs[-1][1], hi)
            segs[-1][2].append(b)
        else:
            segs.append([lo, hi, [b]])
    out = []
    for lo, hi, bs in segs:
        gaps, at = [], lo
        for b in bs:
            if b.ptr > at:
                gaps.append((at, b.ptr - at))
            at = max(at, b.ptr + b.nbytes)
        if hi > at:
            gaps.append((at, hi - at))
        out.append((lo, hi, bs, gaps))
    return out
