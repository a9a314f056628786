"""Device memory from rawdev's stream-ordered pool, pinned host memory, copies, and the allocation table.

Every device allocation is a `Block` in its device's `Allocator` table: address, size, stream, owner
tag (and named parts for arenas), optionally the Python stack that made it. The memory tool reads
this table; the pool's own attributes are the driver's view of the same memory.

Frees follow numba's rule: a finalizer never calls the driver, it queues the free; the queue is
flushed at safe points (the next allocation, a synchronize).
"""
import ctypes
import threading
import time
import traceback
import weakref

import numpy as np

from ..errors import OutOfMemoryError
from . import seam
from .seam import call
from .trace import fmt_bytes

ARENA_ALIGN = 256           # byte alignment of each tensor inside a move's arena (cudaMalloc's guarantee)


class Block:
    """One live device allocation, as the allocation table sees it."""
    __slots__ = ("ptr", "nbytes", "stream", "owner", "parts", "stack", "time")

    def __init__(self, ptr, nbytes, stream, owner, stack):
        self.ptr, self.nbytes, self.stream, self.owner = ptr, nbytes, stream, owner
        self.parts, self.stack, self.time = [], stack, time.time()

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
        self.lock = threading.Lock()
        self.reset_stats()

    def reset_stats(self):
        self.stats = dict(allocated=0, peak=0, allocated_total=0, freed_total=0,
                          alloc_count=0, free_count=0, num_ooms=0)

    def _notify(self, kind, block):
        for fn in self.listeners:
            fn(kind, block)

    def alloc(self, nbytes, stream, owner):
        self.flush()
        ctx = lambda: f"allocating {fmt_bytes(nbytes)} for {owner or 'an unnamed tensor'} on {self.device}"
        try:
            ptr = call("cuMemAllocFromPoolAsync", nbytes, self.device.pool, stream.handle,
                       ctx=ctx, nbytes=nbytes, stream=stream.handle, owner=owner)
        except OutOfMemoryError as e:
            self.stats["num_ooms"] += 1
            self._notify("oom", Block(0, nbytes, stream, owner, None))
            raise OutOfMemoryError(e.call, e.code, e.name, e.description, ctx(), self.oom_report(nbytes)) from None
        stack = traceback.format_stack()[:-3] if self.record_stacks else None
        block = Block(int(ptr), nbytes, stream, owner, stack)
        with self.lock:
            self.live[block.ptr] = block
            s = self.stats
            s["allocated"] += nbytes
            s["allocated_total"] += nbytes
            s["alloc_count"] += 1
            s["peak"] = max(s["peak"], s["allocated"])
        self._notify("alloc", block)
        return block

    def free(self, ptr, stream_handle):
        with self.lock:
            block = self.live.pop(ptr, None)
            if block is not None:
                self.stats["allocated"] -= block.nbytes
                self.stats["freed_total"] += block.nbytes
                self.stats["free_count"] += 1
        if block is not None:
            self._notify("free", block)
        call("cuMemFreeAsync", ptr, stream_handle, ctx=lambda: f"freeing {fmt_bytes(block.nbytes) if block else ''} "
             f"of {block.owner if block else 'memory'} on {self.device}",
             nbytes=block.nbytes if block else None, stream=stream_handle, owner=block.owner if block else None)

    def flush(self):
        """Free what finalizers queued and release objects whose copies are done. Called at safe points."""
        while self.pending_frees:
            ptr, stream_handle = self.pending_frees.pop()
            self.free(ptr, stream_handle)
        if self.kept:
            self.kept = [(ev, objs) for ev, objs in self.kept if not ev.query()]

    def oom_report(self, requested):
        """The lines an OutOfMemoryError adds: what was asked, what the device and rawdev hold, who owns it."""
        free, total = call("cuMemGetInfo", ctx="reading free device memory for an out-of-memory report")
        reserved = self.device.pool_attribute("reserved")
        owners = {}
        for b in self.live.values():
            for _, n, who in b.owners():
                owners[who or "unnamed"] = owners.get(who or "unnamed", 0) + n
        top = sorted(owners.items(), key=lambda kv: -kv[1])[:5]
        lines = [f"requested {fmt_bytes(requested)} on {self.device}; device free {fmt_bytes(free)} of "
                 f"{fmt_bytes(total)}; rawdev holds {fmt_bytes(self.stats['allocated'])} in "
                 f"{len(self.live)} blocks ({fmt_bytes(reserved)} reserved by its pool)"]
        if top:
            lines.append("top owners: " + ", ".join(f"{who} {fmt_bytes(n)}" for who, n in top))
        lines.append("advice: use rawdev.utils.checkpoint for activations, a smaller batch, "
                     "or rawdev.cuda.empty_cache() to release cached blocks")
        return "\n".join(lines)


class DeviceBuffer:
    """A device allocation from the pool. Freed by .free() or, once unreachable, by a queued finalizer."""
    __slots__ = ("device", "block", "ptr", "nbytes", "_finalizer", "__weakref__")

    def __init__(self, device, block):
        self.device, self.block, self.ptr, self.nbytes = device, block, block.ptr, block.nbytes
        self._finalizer = weakref.finalize(self, device.allocator.pending_frees.append,
                                           (block.ptr, block.stream.handle)) if block.ptr else None

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
        """Free now, in order on `stream` (default: the stream it was allocated on)."""
        if self._finalizer is not None and self._finalizer.detach():
            self.device.allocator.free(self.ptr, (stream or self.block.stream).handle)

    def __repr__(self):
        return f"<DeviceBuffer {fmt_bytes(self.nbytes)} at 0x{self.ptr:x} on {self.device} owner={self.owner!r}>"


class PinnedBuffer:
    """Page-locked host memory from cuMemHostAlloc, viewed as a numpy uint8 array. Freed by finalizer."""

    def __init__(self, nbytes, owner="staging"):
        self.nbytes, self.owner = nbytes, owner
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


def copy_htod(dst, src, nbytes, stream=None, owner=None):
    """Host (int address or ndarray) → device. stream=None: synchronous cuMemcpyHtoD."""
    if stream is None:
        call("cuMemcpyHtoD", dst, _host_ptr(src), nbytes, ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} to the device",
             nbytes=nbytes, owner=owner)
    else:
        call("cuMemcpyHtoDAsync", dst, _host_ptr(src), nbytes, stream.handle,
             ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} to {stream.device}", nbytes=nbytes,
             stream=stream.handle, owner=owner)


def copy_dtoh(dst, src, nbytes, stream=None, owner=None):
    """Device → host (int address or ndarray). stream=None: synchronous cuMemcpyDtoH."""
    if stream is None:
        call("cuMemcpyDtoH", _host_ptr(dst), src, nbytes, ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} to the host",
             nbytes=nbytes, owner=owner)
    else:
        call("cuMemcpyDtoHAsync", _host_ptr(dst), src, nbytes, stream.handle,
             ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} from {stream.device} to the host",
             nbytes=nbytes, stream=stream.handle, owner=owner)


def copy_dtod(dst, src, nbytes, stream=None, owner=None):
    if stream is None:
        call("cuMemcpyDtoD", dst, src, nbytes, ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} on the device",
             nbytes=nbytes, owner=owner)
    else:
        call("cuMemcpyDtoDAsync", dst, src, nbytes, stream.handle,
             ctx=lambda: f"copying {fmt_bytes(nbytes)} of {owner or 'data'} on {stream.device}", nbytes=nbytes,
             stream=stream.handle, owner=owner)


def memset_d8(ptr, value, nbytes, stream):
    call("cuMemsetD8Async", ptr, value, nbytes, stream.handle, ctx=lambda: f"setting {fmt_bytes(nbytes)} to {value}",
         nbytes=nbytes, stream=stream.handle)


def memset_d32(ptr, value, count, stream):
    call("cuMemsetD32Async", ptr, value, count, stream.handle, ctx=lambda: f"setting {count} 32-bit words",
         nbytes=4 * count, stream=stream.handle)


def keep_alive(stream, *objs):
    """Hold objs (staging buffers, source arrays) until the work queued so far on `stream` has completed."""
    stream.device.allocator.kept.append((stream.record_event(), objs))


def pool_used(device):
    return device.pool_attribute("used")


def align(n, a=ARENA_ALIGN):
    return (n + a - 1) // a * a
