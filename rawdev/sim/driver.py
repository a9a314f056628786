"""The simulated GPU's driver: a drop-in for the subset of ``cuda.bindings.driver`` that rawdev calls.

Same names, same signatures, same ``(CUresult, value…)`` tuples and the real cuda-python types
(``CUstream``, ``CUdeviceptr``… constructed from ints; no libcuda needed). Driver-level errors are
returned, never raised; only argument *type* errors raise, as they do in cuda-python's bindings.

Model (see docs/INTERNALS.md, "Sim driver ↔ runtime"):

* Streams are queues. Async copies, memsets, launches, event records, stream waits and frees are
  enqueued and run only at sync points: cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize,
  a synchronous copy (cuMemcpyHtoD/DtoH/DtoD: an op on the legacy stream, run at once with what the
  legacy stream waits for -- earlier work on *blocking* streams -- but never the queued work of
  non-blocking streams, which the legacy stream does not wait for: the copy lands ahead of it),
  a device-to-*pageable*-host async copy (it returns once done, so it runs in its stream's order), or
  when something that runs depends on them (cuStreamWaitEvent, legacy-default-stream ordering).
* Each op carries a global sequence number; an op waits for (a) earlier ops on its own stream,
  (b) the legacy default stream's earlier ops if its stream is blocking (and the legacy stream waits
  for every blocking stream's earlier ops), (c) the event positions it waits on. Ops are run
  depth-first from an explicit stack, so syncing stream A never runs unrelated work on stream B.
* A fault while running (kernel out of bounds, a copy into memory freed in the meantime) is sticky,
  as on a GPU: the call that ran it returns the code, queued work is dropped, and every later call
  returns the same code until :func:`reset`. Codes: out of bounds → CUDA_ERROR_ILLEGAL_ADDRESS,
  misaligned → CUDA_ERROR_MISALIGNED_ADDRESS, a failed device-side assert() (a call of __assertfail)
  → CUDA_ERROR_ASSERT (its "file:line: function: block: [..], thread: [..] Assertion `cond` failed."
  line per failing thread goes to stderr, as the driver prints it), divergent barrier or anything else the interpreter
  raises (including NotImplementedError for an opcode it does not know) → CUDA_ERROR_LAUNCH_FAILED.
  The human detail (kernel, thread, address, nearest allocation) is in :func:`last_error_detail`.
* Pools own *segments*: ranges mapped from the device's address space (a 64 GiB window per pool),
  2 MiB-aligned, sizes a multiple of 2 MiB (``rawdev.sim.memory.SegmentAllocator``). A block is placed
  at a 256-byte-aligned address inside a segment's free space, best fit (the smallest free range that
  holds it, lowest address among equals). When none fits the pool maps the fewest 2 MiB granules that
  make a fit: a new segment right after a segment whose free tail it extends (the block straddles the
  two, as in a driver pool that maps physical memory into reserved address space), else a new
  segment of ceil(n, 2 MiB) bytes, apart from the others (so a fresh 5 MiB allocation gets a 6 MiB
  segment of its own).
  Free space is fragmented like a real pool's: small live blocks in several segments can leave no
  range that fits a bigger request, which then needs a new segment. Device capacity is charged by
  segments and by non-pool allocations (module globals); when a new segment would exceed it, every
  pool of the device first gives back its empty segments (the driver releases unused reserve before
  failing), then the call fails with CUDA_ERROR_OUT_OF_MEMORY. USED_MEM_CURRENT = sum of requested
  bytes; RESERVED_MEM_CURRENT = sum of segment sizes. Only *entirely free* segments go back (never
  one with a live or pending-free block), largest first, never below the bytes to keep: at sync
  points (stream/event/ctx synchronize) down to the release threshold (rounded down to 2 MiB), on
  cuMemPoolTrimTo down to minBytesToKeep (the driver guarantees at least that much stays reserved).
  Allocation is immediate (the address is valid at once); cuMemFreeAsync frees when
  its stream runs to it, and from then on the range serves later allocations. Bounds stay per block:
  a kernel or copy touching free bytes of a segment faults like any unallocated address (an overrun
  into an adjacent *live* block does not, as on a GPU). cuMemGetInfo's free = capacity - mapped.
* Elapsed time comes from a simulated clock that advances by the wall time of each executed op.

Choices where the simulator had to pick (each follows the real driver where its docs say):

* Sticky errors spare what needs no context: cuGetErrorName/String, cuDriverGetVersion, cuInit,
  cuDeviceGet*/cuDeviceTotalMem, cuDevicePrimaryCtxRetain/Release (so teardown works).
* cuPointerGetAttributes on an unknown pointer returns CUDA_SUCCESS with NULL/0 attributes
  (MEMORY_TYPE 0, DEVICE_ORDINAL -2): the documented behaviour of the plural call.
* cuDeviceGetName returns the whole ``length``-byte buffer (name, NUL, filler) like cuda-python.
* 0-byte cuMemAllocFromPoolAsync / cuMemHostAlloc → CUDA_ERROR_INVALID_VALUE.
* Pool *_MEM_* / RELEASE_THRESHOLD attributes are cuuint64_t both ways (an int raises, as the
  binding's ``value.getPtr()`` does); cuDeviceGetAttribute of an unmodelled attribute →
  CUDA_ERROR_INVALID_VALUE rather than a made-up number.
* Primary context released to refcount 0: the handle stops working (CUDA_ERROR_INVALID_CONTEXT) but
  the device's memory, streams and modules are kept (the real driver would destroy them).
* CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) both mean the legacy default stream.
* A copy that runs after its memory was freed (another stream freed it first) → sticky
  CUDA_ERROR_ILLEGAL_ADDRESS with a use-after-free detail.
* PTX checks at load: ``.version`` newer than the driver JITs → CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  ``.target sm_XY`` above the device's compute capability → CUDA_ERROR_INVALID_PTX; a parse error →
  CUDA_ERROR_INVALID_PTX; no interpreter importable → CUDA_ERROR_JIT_COMPILER_NOT_FOUND. The log
  text goes to CU_JIT_ERROR_LOG_BUFFER (NUL-terminated, truncated to its size) and to
  :func:`last_error_detail`.
* reset() moves the device address space and never reuses handles, so a finalizer of an object
  from before the reset can never free or touch something allocated after it.

Environment (read at import and at every reset()): RAWDEV_SIM_DEVICES (1), RAWDEV_SIM_MEMORY
(bytes, K/M/G suffixes; 4G), RAWDEV_SIM_DRIVER_VERSION (12080), RAWDEV_SIM_CC ("7.5"),
RAWDEV_SIM_FRESH (0xff: the byte new pool blocks are filled with, so reading memory nothing wrote gives
NaN/-1 as it gives garbage on a GPU; "zero" for zero-filled blocks), and the driver's own
CUDA_LAUNCH_BLOCKING (1: cuLaunchKernel runs the kernel's stream before it returns, and returns the kernel's
fault), and RAWDEV_SANITIZE (the checkers besides memcheck: initcheck, racecheck, synccheck; see
:mod:`rawdev.sim.sanitizer`). Module globals start at zero, as in CUDA.

Scheduling (RAWDEV_SIM_SCHEDULE, read at every reset()): ``eager`` (default) runs queued work when something
waits for it, and a query (cuStreamQuery/cuEventQuery/cuEventElapsedTime) that finds work pending runs it, so
the next query succeeds; ``lazy`` never runs work for a query: work runs only when something waits for it;
``random:SEED`` is lazy and, whenever work runs, interleaves the streams one op at a time in a random order the
stream semantics allow (and may run work nothing waits for yet), from a generator seeded at every reset(), so a
missing dependency shows up as wrong data and a seed replays its order.

Stream capture: during a global-mode capture (on any thread) or a thread-local one begun on the calling thread,
the "potentially unsafe" calls are refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate the
capture, as the driver does: cuModuleLoadDataEx, cuStreamQuery, cuEventQuery, cuStreamSynchronize,
cuEventSynchronize, cuCtxSynchronize. A relaxed-mode capture allows them.
"""

from __future__ import annotations

import bisect
import collections
import ctypes
import functools
import hashlib
import itertools
import os
import random
import re
import threading
import time

import numpy as np
from cuda.bindings import driver as drv

from . import kstats as _kstats
from . import sanitizer as _san
from .memory import BASE_ADDRESS, DeviceMemory, SegmentAllocator, SimInvalidValue, SimMisalignedAddress, SimOutOfMemory

R = drv.CUresult
OK = R.CUDA_SUCCESS
GRANULE = 2 << 20                    # pool segment granularity (alignment and size unit)
POOL_WINDOW = 64 << 30               # address space each pool reserves at a time for its segments
DEV_SPAN = 1 << 41                   # address space per simulated device (device i starts at base + i*SPAN)
GEN_SPAN = 1 << 45                   # each reset() moves the address space on: a stale pointer from before a
                                     # reset never names a new allocation (it is simply unknown)
U64_MAX = (1 << 64) - 1


class _Err(Exception):
    """Internal: abort the current call with this CUresult (and optional human detail)."""

    def __init__(self, code, detail=None):
        self.code, self.detail = R(int(code)), detail


# ----------------------------------------------------------------------------------------- config
def _parse_bytes(s):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", str(s).lower())
    if not m:
        raise ValueError(f"RAWDEV_SIM_MEMORY={s!r}: expected bytes, e.g. 4G, 512M, 65536")
    return int(float(m[1]) * (1 << (10 * " kmgt".index(m[2] or " "))))


def _parse_fill(s):
    """RAWDEV_SIM_FRESH: the byte new pool blocks are filled with (default 0xff: NaN as float32, -1 as
    ints), or "zero" for zero-filled memory."""
    if str(s).strip().lower() in ("zero", "zeros", "none", "off"):
        return None
    v = int(str(s), 0)
    if not 0 <= v <= 255:
        raise ValueError(f"RAWDEV_SIM_FRESH={s!r}: expected a byte (e.g. 0xff) or 'zero'")
    return v


def _config():
    cc = os.environ.get("RAWDEV_SIM_CC", "7.5").split(".")
    return dict(ndev=int(os.environ.get("RAWDEV_SIM_DEVICES", "1")),
                memory=_parse_bytes(os.environ.get("RAWDEV_SIM_MEMORY", "4G")),
                version=int(os.environ.get("RAWDEV_SIM_DRIVER_VERSION", "12080")),
                fresh=_parse_fill(os.environ.get("RAWDEV_SIM_FRESH", "0xff")),
                launch_blocking=os.environ.get("CUDA_LAUNCH_BLOCKING", "0").strip() == "1",
                cc=(int(cc[0]), int(cc[1]) if len(cc) > 1 else 0),
                schedule=_parse_schedule(os.environ.get("RAWDEV_SIM_SCHEDULE", "eager")))


def _parse_schedule(s):
    """RAWDEV_SIM_SCHEDULE: ("eager", None), ("lazy", None) or ("random", seed)."""
    s = s.strip().lower() or "eager"
    if s in ("eager", "lazy"):
        return s, None
    if s.startswith("random:"):
        try:
            return "random", int(s.split(":", 1)[1], 0)
        except ValueError:
            pass
    raise ValueError(f"RAWDEV_SIM_SCHEDULE={s!r}: expected eager, lazy or random:SEED (an integer)")


# max PTX ISA each driver release JITs (CUDA 12.6 shipped ISA 8.5; 12.7 was never released)
_PTX_ISA = {(12, 0): (8, 0), (12, 1): (8, 1), (12, 2): (8, 2), (12, 3): (8, 3), (12, 4): (8, 4),
            (12, 5): (8, 5), (12, 6): (8, 5), (12, 8): (8, 7), (12, 9): (8, 8), (13, 0): (9, 0)}


def max_ptx_version(driver_version):
    """Newest PTX ISA ``(major, minor)`` a driver of ``driver_version`` (e.g. 12080) can JIT."""
    cu = (driver_version // 1000, driver_version % 1000 // 10)
    if cu[0] == 11:
        return (7, cu[1])
    if cu[0] == 10:
        return (6, cu[1] + 3 if cu[1] else 4)
    known = [k for k in sorted(_PTX_ISA) if k <= cu]
    return _PTX_ISA[known[-1]] if known else (6, 0)


# ---------------------------------------------------------------------------------- error strings
# what the real cuGetErrorString returns for the codes rawdev can hit; others fall back to the first
# sentence of the CUresult member's doc (the driver's own description of the code)
_ERROR_STRINGS = {
    0: "no error", 1: "invalid argument", 2: "out of memory", 3: "initialization error",
    4: "driver shutting down", 34: "CUDA driver is a stub library",
    36: "CUDA driver is too old for this call", 46: "CUDA-capable device(s) is/are busy or unavailable",
    100: "no CUDA-capable device is detected", 101: "invalid device ordinal",
    200: "device kernel image is invalid", 201: "invalid device context",
    209: "no kernel image is available for execution on the device",
    218: "a PTX JIT compilation failed", 221: "PTX JIT compiler library not found",
    222: "the provided PTX was compiled with an unsupported toolchain.",
    400: "invalid resource handle", 401: "the operation cannot be performed in the present state",
    500: "named symbol not found", 600: "device not ready",
    700: "an illegal memory access was encountered", 701: "too many resources requested for launch",
    702: "the launch timed out and was terminated", 710: "device-side assert triggered",
    715: "an illegal instruction was encountered",
    716: "misaligned address", 719: "unspecified launch failure", 800: "operation not permitted",
    801: "operation not supported", 913: "function not loaded", 999: "unknown error",
}


def _doc_sentence(code):
    doc = " ".join((R(code).__doc__ or "").split())
    doc = re.sub(r":py:obj:`~?\.?([^`]*)`", r"\1", doc)
    return doc.split(". ")[0].rstrip(".") + "." if doc else R(code).name


def describe(code):
    """The driver's long description of a CUresult (from cuda-python's CUresult docs)."""
    return " ".join(re.sub(r":py:obj:`~?\.?([^`]*)`", r"\1", R(int(code)).__doc__ or "").split())


# --------------------------------------------------------------------------------- device objects
_ATTR = drv.CUdevice_attribute


def _device_attributes(cc, nsm=16):
    A = _ATTR
    return {
        A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: cc[0], A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: cc[1],
        A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: nsm, A.CU_DEVICE_ATTRIBUTE_WARP_SIZE: 32,
        A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024, A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: 1024,
        A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: 1024, A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: 64,
        A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: 2**31 - 1, A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: 65535,
        A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: 65535, A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 49152,
        A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 65536,
        A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: 65536,
        A.CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: 65536, A.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: 65536,
        A.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: 65536,
        A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: 1024 if cc == (7, 5) else 2048,
        A.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: 16, A.CU_DEVICE_ATTRIBUTE_CLOCK_RATE: 1590000,
        A.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: 5001000, A.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: 256,
        A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: 4 << 20, A.CU_DEVICE_ATTRIBUTE_MAX_PITCH: 2**31 - 1,
        A.CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: 512, A.CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: 2,
        A.CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: 1, A.CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: 1,
        A.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: 1, A.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: 1,
        A.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: 1, A.CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: 0,
        A.CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: 1, A.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: 1,
        A.CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: 1, A.CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: 1,
        A.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: 0, A.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: 0,
        A.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: 0, A.CU_DEVICE_ATTRIBUTE_INTEGRATED: 0,
        A.CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: 0, A.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: 0,
        A.CU_DEVICE_ATTRIBUTE_ECC_ENABLED: 0, A.CU_DEVICE_ATTRIBUTE_TCC_DRIVER: 0,
        A.CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: 0, A.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: 0,
        A.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: 0, A.CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: 0,
        A.CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: 32,
        A.CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: 0,
        A.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: 1,
    }


class Device:
    def __init__(self, ordinal, cfg, handle, base):
        self.ordinal, self.capacity, self.cc = ordinal, cfg["memory"], cfg["cc"]
        self.mem = DeviceMemory(self.capacity, base=base + ordinal * DEV_SPAN, fresh_fill=cfg["fresh"])
        self.attrs = _device_attributes(self.cc)
        self.attrs[_ATTR.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] = ordinal + 1
        self.ctx, self.refcount = handle, 0   # primary context handle, retain count
        self.pools = {}                       # handle -> Pool (including destroyed ones still draining)
        self.legacy = Stream(0, self, 0, legacy=True)
        self.streams = []                     # created streams (also destroyed ones with work pending)

    def reserved(self):
        return sum(p.reserved for p in self.pools.values())


class Pool:
    def __init__(self, handle, dev):
        self.handle, self.dev = handle, dev
        self.layout = SegmentAllocator(dev.mem, GRANULE, 256, POOL_WINDOW)   # segments and blocks
        self.used = self.used_high = self.reserved_high = 0
        self.threshold, self.destroyed = 0, False
        self.reuse = {1: 1, 2: 1, 3: 1}       # CU_MEMPOOL_ATTR_REUSE_*: FOLLOW_EVENT_DEPENDENCIES (1) is modelled
        self.allocs = {}                      # addr -> requested size (of the block's latest allocation)
        self.pending = {}                     # addr -> _PendingFree: a free queued, not run, not yet reused

    @property
    def reserved(self):
        """RESERVED_MEM_CURRENT: the sum of the pool's segment sizes."""
        return self.layout.reserved

    def shrink(self, keep):
        """Give back entirely free segments while at least ``keep`` bytes stay reserved."""
        self.layout.release(keep)


class Stream:
    def __init__(self, handle, dev, flags, legacy=False):
        self.handle, self.dev, self.flags, self.legacy = handle, dev, flags, legacy
        self.q, self.destroyed = collections.deque(), False
        self.seen = {}                        # stream -> highest seq of it this stream has waited for (events)
        self.capture = None                   # the _Capture this stream records into, while capturing

    @property
    def blocking(self):
        return not (self.flags & 1)           # CU_STREAM_NON_BLOCKING

    def __repr__(self):
        return "legacy" if self.legacy else f"0x{self.handle:x}"


Op = collections.namedtuple("Op", "seq stream fn waits label")


class _PendingFree:
    """A cuMemFreeAsync queued on ``stream`` at ``seq`` (its op not run yet). ``reused``: set when a later
    allocation took the block in stream order; the queued op then hands the block over instead of freeing it."""
    __slots__ = ("addr", "stream", "seq", "nbytes", "reused")

    def __init__(self, addr, stream, nbytes):
        self.addr, self.stream, self.seq, self.nbytes, self.reused = addr, stream, None, nbytes, None


class Event:
    def __init__(self, handle, flags):
        self.handle, self.flags = handle, flags
        self.rec = None                       # (stream, seq, generation) of the last record
        self.gen, self.done, self.t = 0, True, None
        self.captured = None                  # (capture, stream, node count) when last recorded in a capture


class Module:
    def __init__(self, handle, ptx, info, text):
        self.handle, self.ptx, self.info, self.text, self.funcs = handle, ptx, info, text, {}


class Func:
    def __init__(self, handle, module, name, entry, info):
        self.handle, self.module, self.name, self.entry, self.info = handle, module, name, entry, info


# ----------------------------------------------------------------------------------------- state
class _State:
    def __init__(self):
        self.cfg = _config()
        mode, seed = self.cfg["schedule"]
        self.lazy = mode != "eager"           # queries never run pending work
        self.rng = random.Random(seed) if mode == "random" else None   # picks among the orders streams allow
        self.gen = next(_generations)
        self.base = BASE_ADDRESS + (self.gen - 1) % 4096 * GEN_SPAN
        self.initialized = False
        self.devices = [Device(i, self.cfg, self.handle(0xC7C0_0000), self.base) for i in range(self.cfg["ndev"])]
        self.streams, self.events, self.modules, self.funcs, self.pools = {}, {}, {}, {}, {}
        self.graphs, self.graph_execs = {}, {}
        self.host = {}                        # pinned: addr -> (numpy buffer, size)
        self.running = 0                      # >0 while queued work executes (finalizers may re-enter)
        self.zombies = []                     # pinned buffers freed mid-execution, released at a sync point
        self.host_bases = []                  # sorted pinned addrs
        self.pending_free = set()             # addrs with a cuMemFreeAsync queued (not yet reused)
        # addr -> {stream: [_PendingFree reused by a later allocation whose op has not run, in stream order]}:
        # by stream, so a free at a much-reused address finds what it must wait for in O(streams), not O(queue)
        self.handovers = {}
        self.alloc_pool = {}                  # device addr -> Pool
        self.buffer_ids = {}                  # device addr -> CU_POINTER_ATTRIBUTE_BUFFER_ID
        self.seq = itertools.count(1)
        self.clock = 0.0                      # simulated ms
        self.sticky = self.sticky_detail = self.last_detail = None
        self.faults = []                      # [[func_name, countdown, code]]
        self.calls = collections.Counter()
        self.kernels = collections.Counter()
        self.bytes = collections.Counter()    # HtoD / DtoH / DtoD / memset bytes run

    def handle(self, base):
        return base + next(_ids) * 0x100


_generations = itertools.count(1)
_ids = itertools.count(1)           # never restarts: a stale handle from before a reset() stays invalid
_graveyard: dict = {}                     # pinned buffers of earlier resets: runtime objects may still view them
_retired: list = []                       # sorted (start, end) of the device blocks that were live at earlier resets
_retired_handles: set = set()            # contexts, streams, events, pools, modules of earlier resets
_reset_hooks: list = []                   # callables run after every reset() (the runtime re-initializes itself)
_lock = threading.RLock()
_tls = threading.local()
_S = _State()


def _track_writes(tools):
    """initcheck needs every device memory to keep its "written" shadow (and none when it is off)."""
    for dev in _S.devices:
        dev.mem.track_writes("initcheck" in tools)


_san.add_listener(_track_writes)
_san.configure_from_env()


def _ceil(n, g):
    return -(-int(n) // g) * g


# ------------------------------------------------------------------------------- call wrapper
def _api(nout=0, init=True, ctx=True, sticky=True):
    """Wrap a cu* implementation: count, fault-inject, check init/sticky/context, shape the tuple."""

    def deco(fn):
        name = fn.__name__

        @functools.wraps(fn)
        def call(*args, **kw):
            with _lock:
                S = _S
                S.calls[name] += 1
                code = _take_fault(S, name)
                try:
                    if code is not None:
                        raise _Err(code, f"{name}: fault injected by rawdev.sim.inject_fault")
                    if init and not S.initialized:
                        raise _Err(R.CUDA_ERROR_NOT_INITIALIZED, f"{name} before cuInit(0)")
                    if sticky and S.sticky is not None:
                        raise _Err(S.sticky, S.sticky_detail)
                    if ctx:
                        _current_device()
                    out = fn(*args, **kw)
                except _Err as e:
                    S.last_detail = e.detail if e.code != R.CUDA_ERROR_NOT_READY else None
                    return (e.code,) + (None,) * nout
            return (OK,) if nout == 0 else (OK, out) if nout == 1 else (OK,) + tuple(out)

        call.sim_nout = nout
        return call

    return deco


def _take_fault(S, name):
    if not S.faults:   # the common case: nothing injected (this runs on every driver call)
        return None
    hit = None
    for f in list(S.faults):
        if f[0] == name:
            f[1] -= 1
            if f[1] == 0:
                S.faults.remove(f)
                if hit is None:
                    hit = f[2]
    return hit


def _current_device():
    cur = getattr(_tls, "ctx", None)
    if cur is None or cur[0] != _S.gen:
        raise _Err(R.CUDA_ERROR_INVALID_CONTEXT, "no context is current on this thread (cuCtxSetCurrent)")
    dev = _S.devices[cur[1]]
    if dev.refcount == 0:
        raise _Err(R.CUDA_ERROR_INVALID_CONTEXT, "the current context was released (primary context refcount 0)")
    return dev


# -------------------------------------------------------------------------- argument conversion
def _int(x, what="handle"):
    if x is None:
        return 0
    try:
        return int(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected an int or a cuda-python handle, got {type(x).__name__}") from None


def _enum(x, etype, what):
    if isinstance(x, etype):
        return x
    try:
        v = int(x)
    except (TypeError, ValueError):
        raise TypeError(f"Argument '{what}' is not instance of type (expected {etype.__name__})") from None
    try:
        return etype(v)
    except ValueError:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{v} is not a valid {etype.__name__}") from None


def _enum_list(xs, etype, what):
    if xs is None:
        return []
    if not isinstance(xs, (list, tuple)) or not all(isinstance(x, etype) for x in xs):
        raise TypeError(f"Argument '{what}' is not instance of type (expected tuple[{etype.__name__}] "
                        f"or list[{etype.__name__}]")
    return list(xs)


def _host_ptr(x):
    """A host pointer as cuda-python accepts one: int, None, buffer-protocol object, ctypes object."""
    if x is None or isinstance(x, int):
        return x or 0
    if isinstance(x, np.ndarray):
        return x.ctypes.data
    if isinstance(x, (ctypes.c_void_p, ctypes.c_char_p, ctypes._Pointer)):  # a pointer: its value
        return ctypes.cast(x, ctypes.c_void_p).value or 0
    if isinstance(x, (ctypes._SimpleCData, ctypes.Array, ctypes.Structure)):  # an object: its address
        return ctypes.addressof(x)
    if isinstance(x, bytes):  # like the real binding: the bytes object's own buffer
        return ctypes.cast(ctypes.c_char_p(x), ctypes.c_void_p).value
    try:
        return np.frombuffer(x, dtype=np.uint8).ctypes.data
    except TypeError:
        pass
    return _int(x, "host pointer")


def _stream(h):
    hv = _int(h, "hStream")
    if hv in (0, 1, 2):  # NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD (all treated as legacy)
        return _current_device().legacy
    s = _S.streams.get(hv)
    if s is None or s.destroyed:
        raise _Err(R.CUDA_ERROR_INVALID_HANDLE, _stale_handle(hv, "stream"))
    return s


def _event(h):
    hv = _int(h, "hEvent")
    e = _S.events.get(hv)
    if e is None:
        raise _Err(R.CUDA_ERROR_INVALID_HANDLE, _stale_handle(hv, "event"))
    return e


def _pool(h):
    hv = _int(h, "pool")
    p = _S.pools.get(hv)
    if p is None or p.destroyed:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, _stale_handle(hv, "memory pool"))
    return p


def _dev_of(addr):
    """The device whose address range holds ``addr`` (UVA), or None."""
    i = (addr - _S.base) // DEV_SPAN
    return _S.devices[i] if 0 <= i < len(_S.devices) else None


def _from_before_reset(addr):
    """A message when ``addr`` lies in a device block that was live when the GPU was reset, else None."""
    if not _retired:
        return None
    i = bisect.bisect_right(_retired, (addr, U64_MAX)) - 1
    if i >= 0 and _retired[i][0] <= addr < _retired[i][1]:
        return (f"0x{addr:x} was allocated before rawdev.sim.reset(): the reset gave back all device memory, so "
                f"tensors, buffers and modules made before it cannot be used after it (create them again)")
    return None


def _stale_handle(hv, what):
    """The detail for an unknown handle: says so when it is one from before a reset()."""
    if hv in _retired_handles:
        return (f"{what} 0x{hv:x} was created before rawdev.sim.reset(): the reset destroyed it, and everything "
                f"made on the old GPU (tensors, modules, streams) must be made again")
    return f"0x{hv:x} is not a live {what}"


def _dev_range(addr, n, what):
    """Check that [addr, addr+n) lies inside one live device allocation; return its device."""
    addr = _int(addr, what)
    dev = _dev_of(addr)
    hit = dev and dev.mem.find(addr)
    if not hit or addr + n > hit[0] + hit[1]:
        stale = _from_before_reset(addr)
        if stale:
            raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{what}: {stale}")
        near = dev.mem.nearest(addr, max(n, 1)) if dev else f"0x{addr:x} is not a device address"
        raise _Err(R.CUDA_ERROR_INVALID_VALUE,
                   f"{what}: {n} bytes at 0x{addr:x} is not inside one device allocation: {near}")
    return dev


def _pinned(addr, n=1):
    """(base, size) of the pinned host allocation holding [addr, addr+n), or None."""
    i = bisect.bisect_right(_S.host_bases, addr) - 1
    if i >= 0:
        base = _S.host_bases[i]
        size = _S.host[base][1]
        if addr + n <= base + size:
            return base, size
    return None


def _count(n, what):
    n = _int(n, what)
    if n < 0:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{what} must be >= 0")
    return n


# ------------------------------------------------------------------------------ stream machinery
def _enqueue(stream, fn, label, waits=()):
    cap = stream.capture
    if cap is not None:                   # capturing: the op becomes a graph node instead of running
        _capture_check(cap)
        cap.graph.nodes.append((fn, label))
        cap.tail[stream] = len(cap.graph.nodes)
        return
    if stream.legacy:
        _implicit_capture_check(stream.dev)
    stream.q.append(Op(next(_S.seq), stream, fn, tuple(waits), label))


def _deps(op):
    s = op.stream
    deps = list(op.waits)
    if s.legacy:  # the legacy stream waits for all earlier work on blocking streams …
        deps += [(t, op.seq - 1) for t in s.dev.streams if t.blocking]
    elif s.blocking:  # … and blocking streams wait for the legacy stream's earlier work
        deps.append((s.dev.legacy, op.seq - 1))
    return deps


def _run(targets):
    """Run queued ops until every ``(stream, seq)`` target has run everything up to ``seq``."""
    stack = list(targets)
    _S.running += 1
    try:
        if _S.rng is None:
            _drain(stack)
        else:
            _drain_random(stack, _S.rng)
    finally:
        _S.running -= 1


def _drain_random(targets, rng):
    """RAWDEV_SIM_SCHEDULE=random: run what the targets need one op at a time, each time picking at random among
    the streams whose next op is ready (its dependencies ran), so independent streams interleave in any order the
    stream semantics allow. Work queued on other streams of the device that nothing waits for yet may run too
    (a GPU runs queued work whenever it likes): each such stream joins the run with probability 1/2."""
    goal = {}
    for s, k in targets:
        goal[s] = max(goal.get(s, -1), k)
    devs = {s.dev for s in goal}
    for dev in devs:
        for s in _all_streams(dev):
            if s not in goal and s.q and rng.random() < 0.5:
                goal[s] = rng.choice(list(s.q)).seq
    while True:
        ready = []
        for s, k in list(goal.items()):
            if not s.q or s.q[0].seq > k:
                del goal[s]
                continue
            pending = [(d, j) for d, j in _deps(s.q[0]) if d.q and d.q[0].seq <= j]
            if pending:
                for d, j in pending:
                    goal[d] = max(goal.get(d, -1), j)
            else:
                ready.append(s)
        if not goal:
            return
        if ready:
            s = ready[rng.randrange(len(ready))]
            _execute(s.q.popleft())


def _drain(stack):
    while stack:
        s, k = stack[-1]
        if not s.q or s.q[0].seq > k:
            stack.pop()
            continue
        op = s.q[0]
        pending = [(d, j) for d, j in _deps(op) if d.q and d.q[0].seq <= j]
        if pending:
            stack.extend(pending)
            continue
        s.q.popleft()
        _execute(op)


def _execute(op):
    t0 = time.perf_counter()
    try:
        op.fn()
    except _Err as e:  # a fault: sticky, like a GPU context after an exception
        _set_sticky(e.code, e.detail)
        raise
    finally:
        _S.clock += (time.perf_counter() - t0) * 1e3


def _set_sticky(code, detail):
    _S.sticky, _S.sticky_detail = R(int(code)), detail
    for dev in _S.devices:  # a faulted context runs nothing more
        dev.legacy.q.clear()
        for s in dev.streams:
            s.q.clear()
    _S.pending_free.clear()
    _S.handovers.clear()
    for dev in _S.devices:
        for p in dev.pools.values():
            p.pending.clear()


def _all_streams(dev):
    return [dev.legacy] + dev.streams


def _run_all(dev):
    _run([(s, float("inf")) for s in _all_streams(dev)])


def _sync_point(dev):
    """After a synchronize: pools give unused reserve above their release threshold back."""
    for p in list(dev.pools.values()):
        p.shrink(p.threshold // GRANULE * GRANULE)
    dev.streams = [s for s in dev.streams if not (s.destroyed and not s.q)]
    if not _S.running:
        _S.zombies.clear()


def _pending(stream, seq=float("inf")):
    """Does ``stream`` (or anything it depends on) have work at or before ``seq`` left to run?"""
    return bool(stream.q) and stream.q[0].seq <= seq


# ============================================================================ init, device, context
@_api(init=False, ctx=False, sticky=False)
def cuInit(Flags):
    if _int(Flags, "Flags") != 0:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "cuInit flags must be 0")
    _S.initialized = True


@_api(nout=1, init=False, ctx=False, sticky=False)
def cuDriverGetVersion():
    return _S.cfg["version"]


@_api(nout=1, ctx=False, sticky=False)
def cuDeviceGetCount():
    return len(_S.devices)


def _device(dev):
    i = _int(dev, "dev")
    if not 0 <= i < len(_S.devices):
        raise _Err(R.CUDA_ERROR_INVALID_DEVICE, f"device {i} does not exist ({len(_S.devices)} simulated)")
    return _S.devices[i]


@_api(nout=1, ctx=False, sticky=False)
def cuDeviceGet(ordinal):
    return drv.CUdevice(_device(ordinal).ordinal)


@_api(nout=1, ctx=False, sticky=False)
def cuDeviceGetName(length, dev):
    _device(dev)   # validates the handle
    length = _int(length, "length")
    if length <= 0:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "length must be > 0")
    # cuda-python hands back its whole `length`-byte buffer: the NUL-terminated name, then filler
    name = b"rawdev simulated GPU"[:length - 1] + b"\0"
    return name + b" " * (length - len(name))


@_api(nout=1, ctx=False, sticky=False)
def cuDeviceGetAttribute(attrib, dev):
    a, d = _enum(attrib, _ATTR, "attrib"), _device(dev)
    if a not in d.attrs:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{a.name} is not modelled by the simulator")
    return d.attrs[a]


@_api(nout=1, ctx=False, sticky=False)
def cuDeviceTotalMem(dev):
    return _device(dev).capacity


@_api(nout=1, ctx=False, sticky=False)
def cuDevicePrimaryCtxRetain(dev):
    d = _device(dev)
    d.refcount += 1
    return drv.CUcontext(d.ctx)


# Not sticky: teardown after a fault must still be able to let go of the context. At refcount 0 the
# context handle stops working; the simulator keeps the device's memory/streams/modules (the real
# driver would destroy them), so a later retain sees the same state.
@_api(ctx=False, sticky=False)
def cuDevicePrimaryCtxRelease(dev):
    d = _device(dev)
    if d.refcount == 0:
        raise _Err(R.CUDA_ERROR_INVALID_CONTEXT, "primary context is not retained")
    d.refcount -= 1


@_api(ctx=False)
def cuCtxSetCurrent(ctx):
    h = _int(ctx, "ctx")
    if h == 0:
        _tls.ctx = None
        return
    for d in _S.devices:
        if d.ctx == h and d.refcount > 0:
            _tls.ctx = (_S.gen, d.ordinal)
            return
    raise _Err(R.CUDA_ERROR_INVALID_CONTEXT, _stale_handle(h, "context"))


@_api(nout=1, ctx=False)
def cuCtxGetCurrent():
    cur = getattr(_tls, "ctx", None)
    return drv.CUcontext(_S.devices[cur[1]].ctx if cur and cur[0] == _S.gen else 0)


@_api()
def cuCtxSynchronize():
    dev = _current_device()
    for st in _all_streams(dev):
        if st.capture is not None:
            _invalidate(st.capture)
            raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                       f"cuCtxSynchronize while stream {st!r} is capturing (the capture is invalidated)")
    _run_all(dev)
    _sync_point(dev)


_kstats.SYNCHRONIZE[:] = [cuCtxSynchronize]   # kernel_stats() blocks synchronize on exit


# ================================================================================== error strings
@_api(nout=1, init=False, ctx=False, sticky=False)
def cuGetErrorName(error):
    return _enum(error, R, "error").name.encode()


@_api(nout=1, init=False, ctx=False, sticky=False)
def cuGetErrorString(error):
    code = int(_enum(error, R, "error"))
    return (_ERROR_STRINGS.get(code) or _doc_sentence(code)).encode()


# ========================================================================================= streams
@_api(nout=1)
def cuStreamCreate(Flags):
    flags = _int(Flags, "Flags")
    if flags & ~1:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"stream flags {flags:#x}: only CU_STREAM_NON_BLOCKING (1) is valid")
    dev = _current_device()
    s = Stream(_S.handle(0x5700_0000), dev, flags)
    _S.streams[s.handle] = s
    dev.streams.append(s)
    return drv.CUstream(s.handle)


@_api()
def cuStreamDestroy(hStream):
    s = _stream(hStream)
    if s.legacy:
        raise _Err(R.CUDA_ERROR_INVALID_HANDLE, "the legacy default stream cannot be destroyed")
    s.destroyed = True  # pending work still runs (at the next sync that reaches it), as on a GPU
    del _S.streams[s.handle]


@_api()
def cuStreamSynchronize(hStream):
    s = _stream(hStream)
    _not_while_capturing(s, "cuStreamSynchronize")
    _unsafe_while_capturing("cuStreamSynchronize")
    _run([(s, float("inf"))])
    _sync_point(s.dev)


@_api()
def cuStreamQuery(hStream):
    s = _stream(hStream)
    _not_while_capturing(s, "cuStreamQuery")
    _unsafe_while_capturing("cuStreamQuery")
    if _pending(s):
        if not _S.lazy:
            _run([(s, float("inf"))])  # eager: run it now so that the next query says SUCCESS
        raise _Err(R.CUDA_ERROR_NOT_READY)


@_api()
def cuStreamWaitEvent(hStream, hEvent, Flags):
    s, e = _stream(hStream), _event(hEvent)
    if _int(Flags, "Flags") not in (0, 1):
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "flags must be CU_EVENT_WAIT_DEFAULT")
    if e.captured is not None:            # an event recorded in a capture: a dependency inside the graph
        cap, src, upto = e.captured
        if s.capture is None:             # another stream joins the capture (fork)
            if s.legacy:
                raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "the legacy stream cannot join a capture")
            s.capture = cap
            cap.streams.append(s)
        elif s.capture is not cap:
            _invalidate(s.capture)
            raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "waiting on an event of another capture")
        _capture_check(cap)
        if s is cap.origin and src is not s:
            cap.joined[src] = max(cap.joined.get(src, 0), upto)
        return
    if s.capture is not None and e.rec is not None:
        _invalidate(s.capture)
        raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                   f"stream {s!r} is capturing and event 0x{e.handle:x} was recorded outside the capture: the "
                   f"dependency would cross the capture boundary (the capture is invalidated)")
    if e.rec is not None and not e.done:  # a completed or never-recorded event is no dependency
        src, seq, _ = e.rec
        _enqueue(s, lambda: None, f"wait event 0x{e.handle:x}", waits=[(src, seq)])
        if src is not s:
            s.seen[src] = max(s.seen.get(src, 0), seq)


# ========================================================================================== events
@_api(nout=1)
def cuEventCreate(Flags):
    flags = _int(Flags, "Flags")
    if flags & ~0x7:  # DEFAULT 0, BLOCKING_SYNC 1, DISABLE_TIMING 2, INTERPROCESS 4
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"event flags {flags:#x}")
    if flags & 4 and not flags & 2:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING")
    e = Event(_S.handle(0xE700_0000), flags)
    _S.events[e.handle] = e
    return drv.CUevent(e.handle)


@_api()
def cuEventRecord(hEvent, hStream):
    e, s = _event(hEvent), _stream(hStream)
    if s.capture is not None:             # inside a capture an event is an edge of the graph, not a node
        _capture_check(s.capture)
        e.captured = (s.capture, s, len(s.capture.graph.nodes))
        return
    e.captured = None
    e.gen += 1
    gen = e.gen

    def complete():
        if e.gen == gen:  # a later re-record supersedes this marker
            e.done, e.t = True, _S.clock

    e.done = False
    _enqueue(s, complete, f"record event 0x{e.handle:x}")
    e.rec = (s, s.q[-1].seq, gen)


def _event_pending(e):
    return e.rec is not None and not e.done


@_api()
def cuEventSynchronize(hEvent):
    e = _event(hEvent)
    _not_captured(e, "cuEventSynchronize")
    _unsafe_while_capturing("cuEventSynchronize")
    if _event_pending(e):
        _run([e.rec[:2]])
        _sync_point(e.rec[0].dev)


@_api()
def cuEventQuery(hEvent):
    e = _event(hEvent)
    _not_captured(e, "cuEventQuery")
    _unsafe_while_capturing("cuEventQuery")
    if _event_pending(e):
        if not _S.lazy:
            _run([e.rec[:2]])
        raise _Err(R.CUDA_ERROR_NOT_READY)


@_api(nout=1)
def cuEventElapsedTime(hStart, hEnd):
    a, b = _event(hStart), _event(hEnd)
    if a.rec is None or b.rec is None:
        raise _Err(R.CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event was never recorded")
    if (a.flags | b.flags) & 2:
        raise _Err(R.CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event was created with CU_EVENT_DISABLE_TIMING")
    if not (a.done and b.done):
        if not _S.lazy:
            _run([x.rec[:2] for x in (a, b) if not x.done])
        raise _Err(R.CUDA_ERROR_NOT_READY)
    return float(b.t - a.t)


@_api()
def cuEventDestroy(hEvent):
    e = _event(hEvent)
    del _S.events[e.handle]  # a pending record marker still runs harmlessly


# =========================================================================================== pools
@_api(nout=1, ctx=False)
def cuMemPoolCreate(poolProps):
    if poolProps is None:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "poolProps is NULL")
    if poolProps.allocType != drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "poolProps.allocType must be CU_MEM_ALLOCATION_TYPE_PINNED")
    if poolProps.location.type != drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "poolProps.location.type must be CU_MEM_LOCATION_TYPE_DEVICE")
    if int(poolProps.handleTypes) != 0:
        raise _Err(R.CUDA_ERROR_NOT_SUPPORTED, "the simulator's pools are not exportable (handleTypes must be 0)")
    dev = _device(poolProps.location.id)
    p = Pool(_S.handle(0x9000_0000), dev)
    _S.pools[p.handle] = dev.pools[p.handle] = p
    return drv.CUmemoryPool(p.handle)


_PA = drv.CUmemPool_attribute
_POOL_U64 = {_PA.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, _PA.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
             _PA.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, _PA.CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
             _PA.CU_MEMPOOL_ATTR_USED_MEM_HIGH}


@_api(nout=1, ctx=False)
def cuMemPoolGetAttribute(pool, attr):
    p, a = _pool(pool), _enum(attr, _PA, "attr")
    if a in _POOL_U64:
        return drv.cuuint64_t({_PA.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p.threshold,
                               _PA.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: p.reserved,
                               _PA.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: p.reserved_high,
                               _PA.CU_MEMPOOL_ATTR_USED_MEM_CURRENT: p.used,
                               _PA.CU_MEMPOOL_ATTR_USED_MEM_HIGH: p.used_high}[a])
    if int(a) in p.reuse:
        return p.reuse[int(a)]
    raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{a.name} is not modelled by the simulator")


@_api(ctx=False)
def cuMemPoolSetAttribute(pool, attr, value):
    p, a = _pool(pool), _enum(attr, _PA, "attr")
    if a in _POOL_U64:
        if not isinstance(value, drv.cuuint64_t):  # the real binding calls value.getPtr()
            raise AttributeError(f"'{type(value).__name__}' object has no attribute 'getPtr' "
                                 f"({a.name} takes a cuuint64_t)")
        v = int(value)
        if a == _PA.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            p.threshold = v
        elif a in (_PA.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, _PA.CU_MEMPOOL_ATTR_USED_MEM_HIGH) and v == 0:
            p.reserved_high, p.used_high = ((p.reserved, p.used_high) if a == _PA.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
                                            else (p.reserved_high, p.used))
        else:  # the *_CURRENT attributes are read-only; highs can only be reset (to 0)
            raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{a.name} cannot be set to {v}")
    elif int(a) in p.reuse:
        p.reuse[int(a)] = int(value)
    else:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{a.name} is not modelled by the simulator")


@_api(ctx=False)
def cuMemPoolTrimTo(pool, minBytesToKeep):
    p = _pool(pool)
    p.shrink(_ceil(_count(minBytesToKeep, "minBytesToKeep"), GRANULE))


@_api(ctx=False)
def cuMemPoolDestroy(pool):
    p = _pool(pool)
    p.destroyed = True  # outstanding allocations keep it alive until they are freed
    del _S.pools[p.handle]
    p.shrink(0)
    if not p.allocs:
        p.dev.pools.pop(p.handle, None)


@_api(nout=1)
def cuMemAllocFromPoolAsync(bytesize, pool, hStream):
    n, p = _count(bytesize, "bytesize"), _pool(pool)
    s = _stream(hStream)   # allocation is immediate; the stream decides which queued frees it may reuse
    _no_memory_nodes(s, "cuMemAllocFromPoolAsync")
    if n == 0:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "cuMemAllocFromPoolAsync of 0 bytes")
    dev = p.dev
    pf = _reusable(p, s, n)
    if pf is not None:
        return _reuse(p, pf, n)
    try:
        addr = p.layout.alloc(n)
    except SimOutOfMemory:
        for q in list(dev.pools.values()):  # like the driver: release unused reserve before failing
            q.shrink(0)
        try:
            addr = p.layout.alloc(n)
        except SimOutOfMemory as e:
            raise _Err(R.CUDA_ERROR_OUT_OF_MEMORY,
                       f"cannot allocate {n} bytes: no free range in the pool's {len(p.layout.segments())} segments "
                       f"fits it (reserved {p.reserved} bytes, {p.used} in use, largest free range "
                       f"{p.layout.largest_free()} bytes), and a new {e.requested}-byte segment would exceed the "
                       f"simulated device: {dev.mem.used} of {dev.capacity} bytes are mapped ({dev.reserved()} "
                       f"reserved by pools, {sum(q.used for q in dev.pools.values())} of that in use)") from None
    p.used += n
    p.allocs[addr] = n
    p.used_high, p.reserved_high = max(p.used_high, p.used), max(p.reserved_high, p.reserved)
    _S.alloc_pool[addr] = p
    _S.buffer_ids[addr] = next(_ids)
    return drv.CUdeviceptr(addr)


def _reusable(p, s, n):
    """The queued free whose block an ``n``-byte allocation on stream ``s`` may take now, or None: one queued on
    ``s`` itself (stream order puts the new owner's work after the free), or on a stream ``s`` has waited for
    past the free (an event dependency: CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES). Best fit."""
    if not p.pending:
        return None
    fp = _ceil(n, 256)
    follow = p.reuse.get(1, 1)
    best = None
    for pf in p.pending.values():
        if pf.stream is s or (follow and s.seen.get(pf.stream, 0) >= pf.seq):
            size = p.layout.footprint(pf.addr)
            if size >= fp and (best is None or (size, pf.addr) < best[0]):
                best = ((size, pf.addr), pf)
    return best and best[1]


def _reuse(p, pf, n):
    """Hand the block of queued free ``pf`` to a new ``n``-byte allocation. Work queued before the free still sees
    the old bytes; the queued free op turns the block into the new one (fresh garbage) when its stream gets there."""
    addr = pf.addr
    del p.pending[addr]
    pf.reused = n
    _S.handovers.setdefault(addr, {}).setdefault(pf.stream, []).append(pf)
    if n > p.dev.mem.find(addr)[1]:   # the new owner's calls may address more of the footprint from now on
        p.layout.resize(addr, n)
    p.allocs[addr] = n
    p.used += n - pf.nbytes          # the freed block's bytes are the new allocation's now: counted once
    p.used_high = max(p.used_high, p.used)
    _S.pending_free.discard(addr)
    _S.buffer_ids[addr] = next(_ids)
    return drv.CUdeviceptr(addr)


@_api()
def cuMemFreeAsync(dptr, hStream):
    addr, s = _int(dptr, "dptr"), _stream(hStream)
    _no_memory_nodes(s, "cuMemFreeAsync")
    p = _S.alloc_pool.get(addr)
    if p is None or addr in _S.pending_free:
        what = "already has a free queued" if p else "is not a pool allocation"
        dev = _dev_of(addr)
        raise _Err(R.CUDA_ERROR_INVALID_VALUE,
                   f"cuMemFreeAsync(0x{addr:x}): the pointer {what}" + (f"; {dev.mem.nearest(addr)}" if dev else ""))
    _S.pending_free.add(addr)
    pf = _PendingFree(addr, s, p.allocs[addr])
    # a hand-over of this block still queued on another stream runs first (it makes the block this allocation)
    # (another stream's hand-overs run in its order: waiting for its newest covers the older ones)
    waits = [(st, q[-1].seq) for st, q in _S.handovers.get(addr, {}).items() if st is not s and q]

    def free():
        if pf.reused:                     # a later allocation took the block: from here on its bytes are its own
            later = _S.handovers[addr]
            mine = later[pf.stream]
            mine.remove(pf)               # the oldest of its stream's (they run in order): found at the front
            if not mine:
                del later[pf.stream]
            if later:                     # that one was freed and reused again: keep the footprint for them
                p.dev.mem.resize(addr, pf.reused, fresh=True)
            else:
                del _S.handovers[addr]
                p.layout.resize(addr, pf.reused, fresh=True)
            return
        p.pending.pop(addr, None)
        p.layout.free(addr)               # the range serves every stream's allocations from now on
        p.used -= p.allocs.pop(addr)
        del _S.alloc_pool[addr]
        _S.buffer_ids.pop(addr, None)
        _S.pending_free.discard(addr)
        if p.destroyed:                   # a destroyed pool gives its memory back as its blocks go
            p.shrink(0)
            if not p.allocs:
                p.dev.pools.pop(p.handle, None)

    _enqueue(s, free, f"free 0x{addr:x}", waits)
    pf.seq = s.q[-1].seq
    p.pending[addr] = pf


@_api(nout=2)
def cuMemGetInfo():
    dev = _current_device()
    return dev.capacity - dev.mem.used, dev.capacity


# ====================================================================================== host memory
_HOST_FLAGS = 0x1 | 0x2 | 0x4  # PORTABLE, DEVICEMAP, WRITECOMBINED


@_api(nout=1)
def cuMemHostAlloc(bytesize, Flags):
    n, flags = _count(bytesize, "bytesize"), _int(Flags, "Flags")
    if n == 0 or flags & ~_HOST_FLAGS:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"cuMemHostAlloc({n}, {flags:#x})")
    buf = np.empty(n + 4096, dtype=np.uint8)  # real host memory, page aligned like pinned pages
    addr = _ceil(buf.ctypes.data, 4096)
    _S.host[addr] = (buf, n)
    bisect.insort(_S.host_bases, addr)
    return addr


@_api()
def cuMemFreeHost(p):
    addr = _host_ptr(p)
    if addr not in _S.host:
        if _graveyard.pop(addr, None) is not None:  # from before a reset(): release it, but say so
            raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"cuMemFreeHost(0x{addr:x}): allocated before rawdev.sim.reset()")
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"cuMemFreeHost(0x{addr:x}): not a cuMemHostAlloc pointer")
    if not _S.running:  # cuMemFreeHost synchronizes: no queued copy may still read or write it
        for dev in _S.devices:
            _run_all(dev)
    buf = _S.host.pop(addr)[0]
    _S.host_bases.remove(addr)
    if _S.running:  # a finalizer ran mid-execution: it cannot sync, so keep the memory until the next sync point
        _S.zombies.append(buf)


# ============================================================================== copies and memsets
def _checked(fn, label):
    """Run a device access; memory freed since enqueue is a fault (sticky ILLEGAL_ADDRESS)."""
    try:
        fn()
    except SimInvalidValue as e:
        raise _Err(R.CUDA_ERROR_ILLEGAL_ADDRESS, f"{label}: {e}") from None


def _htod(dst, src, n):
    """src: a host address (read when the copy runs) or bytes (already staged)."""
    def run():
        data = src if isinstance(src, bytes) else ctypes.string_at(src, n)
        _checked(lambda: _dev_of(dst).mem.write(dst, data), f"cuMemcpyHtoD 0x{dst:x}")
        _S.bytes["HtoD"] += n
    return run


def _dtoh(dst, src, n):
    def run():
        _checked(lambda: ctypes.memmove(dst, _dev_of(src).mem.read(src, n), n), f"cuMemcpyDtoH 0x{src:x}")
        _S.bytes["DtoH"] += n
    return run


def _dtod(dst, src, n):
    def run():
        _checked(lambda: _dev_of(dst).mem.write(dst, _dev_of(src).mem.read(src, n)), f"cuMemcpyDtoD 0x{src:x}")
        _S.bytes["DtoD"] += n
    return run


def _host_arg(x, n, what):
    addr = _host_ptr(x)
    if n and not addr:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{what} is NULL")
    return addr


def _sync_copy(op, label):
    """A synchronous cuMemcpy: an op on the legacy stream, run before the call returns. The legacy stream waits
    for the blocking streams' earlier work only: queued work on non-blocking streams stays queued, so the copy
    lands ahead of it (one order a GPU may take: nothing orders the two)."""
    leg = _current_device().legacy
    _enqueue(leg, op, label)
    _run([(leg, leg.q[-1].seq)])


@_api()
def cuMemcpyHtoD(dstDevice, srcHost, ByteCount):
    n = _count(ByteCount, "ByteCount")
    dst, src = _int(dstDevice, "dstDevice"), _host_arg(srcHost, n, "srcHost")
    if n:
        _dev_range(dst, n, "dstDevice")
        _sync_copy(_htod(dst, src, n), f"pyHtoD {n} (synchronous)")


@_api()
def cuMemcpyDtoH(dstHost, srcDevice, ByteCount):
    n = _count(ByteCount, "ByteCount")
    dst, src = _host_arg(dstHost, n, "dstHost"), _int(srcDevice, "srcDevice")
    if n:
        _dev_range(src, n, "srcDevice")
        _sync_copy(_dtoh(dst, src, n), f"pyDtoH {n} (synchronous)")


@_api()
def cuMemcpyDtoD(dstDevice, srcDevice, ByteCount):
    n = _count(ByteCount, "ByteCount")
    dst, src = _int(dstDevice, "dstDevice"), _int(srcDevice, "srcDevice")
    if n:
        _dev_range(dst, n, "dstDevice"), _dev_range(src, n, "srcDevice")
        _sync_copy(_dtod(dst, src, n), f"pyDtoD {n} (synchronous)")


@_api()
def cuMemcpyHtoDAsync(dstDevice, srcHost, ByteCount, hStream):
    n = _count(ByteCount, "ByteCount")
    dst, src, s = _int(dstDevice, "dstDevice"), _host_arg(srcHost, n, "srcHost"), _stream(hStream)
    if not n:
        return
    _dev_range(dst, n, "dstDevice")
    if _pinned(src, n):  # DMA from pinned memory happens when the stream gets there
        _enqueue(s, _htod(dst, src, n), f"HtoD {n}")
    else:  # pageable: the driver stages the source before returning; the device write stays queued
        _pageable_in_capture(s, "cuMemcpyHtoDAsync")
        _enqueue(s, _htod(dst, ctypes.string_at(src, n), n), f"HtoD {n} (pageable)")


@_api()
def cuMemcpyDtoHAsync(dstHost, srcDevice, ByteCount, hStream):
    n = _count(ByteCount, "ByteCount")
    dst, src, s = _host_arg(dstHost, n, "dstHost"), _int(srcDevice, "srcDevice"), _stream(hStream)
    if not n:
        return
    _dev_range(src, n, "srcDevice")
    if _pinned(dst, n):
        _enqueue(s, _dtoh(dst, src, n), f"DtoH {n}")
    else:  # pageable destination: the real driver returns only once the copy is done
        _pageable_in_capture(s, "cuMemcpyDtoHAsync")
        _enqueue(s, _dtoh(dst, src, n), f"DtoH {n} (pageable)")
        _run([(s, s.q[-1].seq)])


@_api()
def cuMemcpyDtoDAsync(dstDevice, srcDevice, ByteCount, hStream):
    n = _count(ByteCount, "ByteCount")
    dst, src, s = _int(dstDevice, "dstDevice"), _int(srcDevice, "srcDevice"), _stream(hStream)
    if n:
        _dev_range(dst, n, "dstDevice"), _dev_range(src, n, "srcDevice")
        _enqueue(s, _dtod(dst, src, n), f"DtoD {n}")


def _memset(ptr, value, count, dtype, hStream, name):
    n, dst, s = _count(count, "N"), _int(ptr, "dstDevice"), _stream(hStream)
    size = n * np.dtype(dtype).itemsize
    if dst % np.dtype(dtype).itemsize:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{name}: 0x{dst:x} is not {np.dtype(dtype).itemsize}-byte aligned")
    if not n:
        return
    _dev_range(dst, size, "dstDevice")

    def run():
        _checked(lambda: _dev_of(dst).mem.fill(dst, value, n, dtype), f"{name} 0x{dst:x}")
        _S.bytes["memset"] += size

    _enqueue(s, run, f"{name} {size}")


@_api()
def cuMemsetD8Async(dstDevice, uc, N, hStream):
    _memset(dstDevice, _int(uc, "uc") & 0xFF, N, np.uint8, hStream, "cuMemsetD8Async")


@_api()
def cuMemsetD32Async(dstDevice, ui, N, hStream):
    _memset(dstDevice, _int(ui, "ui") & 0xFFFFFFFF, N, np.uint32, hStream, "cuMemsetD32Async")


# ========================================================================================= modules
_J = drv.CUjit_option
_TYPE_SIZE = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}


def _ptx_module_class():
    from .ptx import PtxModule  # the interpreter (imported late: it may be absent while being built)
    return PtxModule


# module image bytes -> [its text, sha256 of the text, its _scan_entries once a load succeeded]: kept across resets
# (a function of the bytes), since tests reset the simulated GPU and load the same modules again thousands of times
# and scanning elementwise.ptx's 1.5 MB costs about 10 ms. The 64 newest images; the scans are only read.
_IMAGES: dict = {}


def _scan_entries(text):
    """What the driver's JIT would tell us per .entry: params (size, offset), static shared bytes,
    virtual register count, .maxntid. Parsed here so that the driver does not depend on the
    interpreter's internals; the interpreter's own param layout wins where it has one."""
    out = {}
    heads = list(re.finditer(r"\.entry\s+([\w$]+)\s*\(", text))
    for k, m in enumerate(heads):
        close = text.find(")", m.end())
        name, plist = m[1], text[m.end():close]
        body = text[close:heads[k + 1].start() if k + 1 < len(heads) else len(text)]
        params, off = [], 0
        for pm in re.finditer(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+[\w$]+(?:\[(\d+)\])?", plist):
            elt = _TYPE_SIZE.get(pm[2], 8)
            size, align = elt * int(pm[3] or 1), int(pm[1] or elt)
            off = _ceil(off, align)
            params.append((size, off))
            off += size
        shared = sum(_TYPE_SIZE.get(t, 1) * int(k) for t, k in
                     re.findall(r"\.shared\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+[\w$]+\[(\d+)\]", body))
        regs = sum(int(k) for k in re.findall(r"\.reg\s+\.\w+\s+%\w+<(\d+)>", body))
        ntid = re.search(r"\.maxntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", body.split("{", 1)[0])
        maxntid = int(np.prod([int(x) for x in ntid.groups() if x])) if ntid else 1024
        out[name] = dict(params=params, param_size=off, shared=shared, regs=min(255, max(16, regs)),
                         maxntid=maxntid)
    return out


def _write_log(addr, size, text):
    if addr and size > 0:
        data = text.encode()[:size - 1] + b"\0"
        ctypes.memmove(addr, data, len(data))


@_api(nout=1)
def cuModuleLoadDataEx(image, numOptions, options, optionValues):
    _unsafe_while_capturing("cuModuleLoadDataEx")
    opts = _enum_list(options, _J, "options")
    vals = list(optionValues or [])
    if _int(numOptions, "numOptions") > len(opts) or len(vals) < len(opts):
        raise RuntimeError(f"List is too small: {len(opts)} < {numOptions}")
    o = dict(zip(opts[:numOptions], vals))
    logs = {k: (_host_ptr(o.get(buf)), _int(o.get(sz, 0), "log size")) for k, buf, sz in (
        ("error", _J.CU_JIT_ERROR_LOG_BUFFER, _J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES),
        ("info", _J.CU_JIT_INFO_LOG_BUFFER, _J.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES))}
    if isinstance(image, int):
        image = ctypes.string_at(image) if image else b""
    raw = image.encode() if isinstance(image, str) else bytes(image)
    seen = _IMAGES.get(raw)   # the same bytes object again (rawdev keeps its files'): its hash is cached, O(1)
    if seen is None:
        text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        seen = [text, hashlib.sha256(text.encode()).hexdigest(), None]
        if len(_IMAGES) >= 64:   # users' own modules (RawModule, NVRTC) come and go: keep the newest
            del _IMAGES[next(iter(_IMAGES))]
        _IMAGES[raw] = seen
    text, key = seen[0], seen[1]

    def fail(code, msg):
        _write_log(*logs["error"], msg)
        raise _Err(code, msg)

    ver = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", text, re.M)
    if not ver:
        fail(R.CUDA_ERROR_INVALID_PTX if text.strip() else R.CUDA_ERROR_INVALID_IMAGE,
             "ptxas application ptx input, line 1; fatal   : Missing .version directive at start of file")
    line = text[:ver.start(1)].count("\n") + 1
    have, top = (int(ver[1]), int(ver[2])), max_ptx_version(_S.cfg["version"])
    if have > top:
        fail(R.CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
             f"ptxas application ptx input, line {line}; fatal   : Unsupported .version {have[0]}.{have[1]}; "
             f"current version is '{top[0]}.{top[1]}'\nptxas fatal   : Ptx assembly aborted due to errors")
    dev = _current_device()
    tgt = re.search(r"^\s*\.target\s+sm_(\d+)", text, re.M)
    if tgt and int(tgt[1]) > dev.cc[0] * 10 + dev.cc[1]:
        fail(R.CUDA_ERROR_INVALID_PTX,
             f"ptxas application ptx input, line {text[:tgt.start()].count(chr(10)) + 2}; error   : "
             f"SM version specified by .target is higher than default SM version assumed "
             f"(sm_{tgt[1]} > sm_{dev.cc[0]}{dev.cc[1]})\nptxas fatal   : Ptx assembly aborted due to errors")
    try:
        PtxModule = _ptx_module_class()
    except ImportError as e:
        fail(R.CUDA_ERROR_JIT_COMPILER_NOT_FOUND, f"the simulator's PTX interpreter is not available: {e}")
    try:
        ptx = PtxModule(text, key=key)
    except Exception as e:  # the interpreter's parse error, with its line, goes into the JIT log
        fail(R.CUDA_ERROR_INVALID_PTX,
             f"ptxas application ptx input: error   : {type(e).__name__}: {e}\n"
             f"ptxas fatal   : Ptx assembly aborted due to errors")
    info = seen[2]
    if info is None:
        info = seen[2] = _scan_entries(text)
    arch = f"sm_{dev.cc[0]}{dev.cc[1]}"
    if logs["info"][0]:   # formatted only when the caller gave a buffer for it
        _write_log(*logs["info"], "".join(
            f"ptxas info    : Compiling entry function '{n}' for '{arch}'\n"
            f"ptxas info    : Used {i['regs']} registers, {i['shared']} bytes smem, {i['param_size']} bytes cmem[0]\n"
            for n, i in info.items()))
    _write_log(*logs["error"], "")
    m = Module(_S.handle(0x3D00_0000), ptx, info, text)
    _S.modules[m.handle] = m
    return drv.CUmodule(m.handle)


def _module(h):
    hv = _int(h, "hmod")
    m = _S.modules.get(hv)
    if m is None:
        raise _Err(R.CUDA_ERROR_INVALID_HANDLE, f"0x{hv:x} is not a loaded module")
    return m


@_api()
def cuModuleUnload(hmod):
    m = _module(hmod)
    del _S.modules[m.handle]
    for f in m.funcs.values():  # queued launches keep their own reference and still run
        _S.funcs.pop(f.handle, None)


@_api(nout=1)
def cuModuleGetFunction(hmod, name):
    if not isinstance(name, bytes):
        raise TypeError(f"expected bytes, {type(name).__name__} found")
    m, key = _module(hmod), name.decode()
    if key not in m.funcs:
        entries = getattr(m.ptx, "entries", None) or m.info
        if key not in entries:
            raise _Err(R.CUDA_ERROR_NOT_FOUND, f"no .entry {key!r} in the module (has: {', '.join(entries)})")
        info = m.info.get(key) or dict(params=[], param_size=0, shared=0, regs=32, maxntid=1024)
        ent = entries[key]
        ps = getattr(ent, "params", None)
        if ps is not None and all(hasattr(p, "size") and hasattr(p, "offset") for p in ps):
            # the interpreter's layout is the one its ld.param reads
            layout = [(int(p.size), int(p.offset)) for p in ps]
            info = dict(info, params=layout, param_size=int(getattr(
                ent, "param_size", max((o + n for n, o in layout), default=0))))
        f = Func(_S.handle(0xF000_0000), m, key, ent, info)
        m.funcs[key] = f
        _S.funcs[f.handle] = f
    return drv.CUfunction(m.funcs[key].handle)


def _func(h):
    hv = _int(h, "hfunc")
    f = _S.funcs.get(hv)
    if f is None:
        raise _Err(R.CUDA_ERROR_INVALID_HANDLE, f"0x{hv:x} is not a function of a loaded module")
    return f


_FA = drv.CUfunction_attribute


@_api(nout=1)
def cuFuncGetAttribute(attrib, hfunc):
    a, f = _enum(attrib, _FA, "attrib"), _func(hfunc)
    i, dev = f.info, _current_device()
    ver = re.search(r"\.version\s+(\d+)\.(\d+)", f.module.text)
    vals = {_FA.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: i["maxntid"],
            _FA.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: i["shared"],
            _FA.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: 0, _FA.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: 0,
            _FA.CU_FUNC_ATTRIBUTE_NUM_REGS: i["regs"],
            _FA.CU_FUNC_ATTRIBUTE_PTX_VERSION: int(ver[1]) * 10 + int(ver[2]) if ver else 80,
            _FA.CU_FUNC_ATTRIBUTE_BINARY_VERSION: dev.cc[0] * 10 + dev.cc[1],
            _FA.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: 49152 - i["shared"]}
    if a not in vals:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{a.name} is not modelled by the simulator")
    return vals[a]


# ========================================================================================== launch
@functools.cache
def _ptr_array(n):
    """The ctypes ``void*[n]`` type (made once per n: creating an array type costs microseconds per launch)."""
    return ctypes.c_void_p * n


def _pack_params(f, kernelParams):
    """The packed .param buffer from a ``void*[n]`` address (what rawdev passes) or cuda-python's
    ``(values, ctypes types)`` tuple form."""
    params = f.info["params"]
    buf = bytearray(f.info["param_size"])
    if not params:
        return bytes(buf)
    if isinstance(kernelParams, tuple) and len(kernelParams) == 2:
        vals, types = kernelParams
        if len(vals) != len(params):
            raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{f.name} takes {len(params)} arguments, got {len(vals)}")
        raw = [bytes(t(v)) if t is not None else (bytes(v) if isinstance(v, ctypes._SimpleCData)
                                                   else int(v).to_bytes(8, "little")) for v, t in zip(vals, types)]
    else:
        addr = _host_ptr(kernelParams)
        if not addr:
            raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{f.name} takes {len(params)} arguments but kernelParams is NULL")
        ptrs = _ptr_array(len(params)).from_address(addr)[:]
        if not all(ptrs):
            raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{f.name}: a kernelParams entry is NULL")
        out = ctypes.create_string_buffer(f.info["param_size"])
        base = ctypes.addressof(out)
        for (size, off), p in zip(params, ptrs):   # each argument's bytes from where its void* points
            ctypes.memmove(base + off, p, size)
        return out.raw
    for (size, off), b in zip(params, raw):
        buf[off:off + size] = b[:size].ljust(size, b"\0")
    return bytes(buf)


@_api()
def cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                   kernelParams, extra):
    fn, s = _func(f), _stream(hStream)
    grid = (_int(gridDimX, "gridDim"), _int(gridDimY, "gridDim"), _int(gridDimZ, "gridDim"))
    block = (_int(blockDimX, "blockDim"), _int(blockDimY, "blockDim"), _int(blockDimZ, "blockDim"))
    shmem = _int(sharedMemBytes, "sharedMemBytes")
    bad = (min(grid + block) < 1 or grid[0] > 2**31 - 1 or max(grid[1:]) > 65535 or max(block[:2]) > 1024
           or block[2] > 64 or block[0] * block[1] * block[2] > min(1024, fn.info["maxntid"]))
    if bad:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE,
                   f"{fn.name}: invalid launch configuration grid={grid} block={block} "
                   f"(block ≤ (1024, 1024, 64) and ≤ {min(1024, fn.info['maxntid'])} threads)")
    if shmem < 0 or shmem + fn.info["shared"] > 49152:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{fn.name}: {shmem} bytes dynamic + {fn.info['shared']} static "
                                               f"shared memory exceeds 49152 bytes per block")
    if extra not in (None, 0) and not (isinstance(extra, (list, tuple)) and not extra):
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "the simulator does not support `extra` launch parameters")
    params, ptx, mem = _pack_params(fn, kernelParams), fn.module.ptx, s.dev.mem
    if _retired:   # a pointer argument from before a reset would fault mid-kernel: refuse the launch instead
        for i, (size, off) in enumerate(fn.info["params"]):
            if size == 8:
                stale = _from_before_reset(int.from_bytes(params[off:off + 8], "little"))
                if stale:
                    raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{fn.name}: argument {i}: {stale}")
    label = _LaunchLabel(fn.name, grid, block, shmem, s)
    tools = _san.active_tools()   # the checkers of the sanitize() block (or RAWDEV_SANITIZE) that launched it
    collectors = _kstats.active()  # the kernel_stats() blocks that launched it

    checks = {"sanitize": tools} if tools else {}
    if collectors:
        checks["kernel_stats"] = True

    def run():
        try:
            st = ptx.launch(fn.name, grid, block, params=params, dynamic_shared=shmem, memory=mem, **checks)
        except Exception as e:
            if getattr(e, "space", None) in _san.TOOLS:
                _san.record(_san.Finding(e.space, e.kernel, e.block, e.thread, e.line, e.ptx, str(e)))
            raise _Err(_fault_code(e), _fault_detail(e, label, mem)) from None
        _S.kernels[fn.name] += 1
        if collectors:
            _kstats.record(collectors, st)

    _enqueue(s, run, label)
    if _S.cfg["launch_blocking"]:   # CUDA_LAUNCH_BLOCKING=1: the launch returns once the kernel ran, with its error
        _run([(s, float("inf"))])


class _LaunchLabel:
    """What a queued launch says in a fault or a graph listing, formatted only when something prints it (a launch
    that runs cleanly never does)."""
    __slots__ = ("name", "grid", "block", "shmem", "stream")

    def __init__(self, name, grid, block, shmem, stream):
        self.name, self.grid, self.block, self.shmem, self.stream = name, grid, block, shmem, stream

    def __str__(self):
        return f"kernel {self.name} grid={self.grid} block={self.block} shared={self.shmem} stream={self.stream!r}"


def _fault_code(e):
    chain, x = [], e  # the interpreter may wrap the memory error: look through __cause__/__context__
    while x is not None and len(chain) < 8:
        chain.append(x)
        x = x.__cause__ or x.__context__
    for x in chain:
        code = getattr(x, "code", None)
        if isinstance(code, str) and hasattr(R, code):
            return getattr(R, code)
        if isinstance(code, int) and not isinstance(code, bool):
            try:
                return R(int(code))
            except ValueError:
                pass
    names = {c.__name__ for x in chain for c in type(x).__mro__} | {str(getattr(x, "code_name", "")) for x in chain}
    if isinstance(e, SimMisalignedAddress) or any("Misaligned" in n for n in names) \
            or "CUDA_ERROR_MISALIGNED_ADDRESS" in names:
        return R.CUDA_ERROR_MISALIGNED_ADDRESS
    if any("Barrier" in n for n in names) or isinstance(e, NotImplementedError):
        return R.CUDA_ERROR_LAUNCH_FAILED
    if any("IllegalAddress" in n or "KernelFault" in n for n in names) or "CUDA_ERROR_ILLEGAL_ADDRESS" in names:
        return R.CUDA_ERROR_ILLEGAL_ADDRESS
    return R.CUDA_ERROR_LAUNCH_FAILED


def _fault_detail(e, label, mem):
    msg = f"{label}: {type(e).__name__}: {e}"
    addr = getattr(e, "address", None)
    if addr is not None and "allocation" not in str(e):
        msg += f"\n  {mem.nearest(int(addr))}"
    return msg


# ================================================================================ pointer attributes
_PT = drv.CUpointer_attribute


@_api(nout=1, ctx=False)
def cuPointerGetAttributes(numAttributes, attributes, ptr):
    attrs = _enum_list(attributes, _PT, "attributes")
    if _int(numAttributes, "numAttributes") > len(attrs):
        raise RuntimeError(f"List is too small: {len(attrs)} < {numAttributes}")
    addr = _int(ptr, "ptr")
    dev, kind, base, size, pool, bid = _dev_of(addr), 0, 0, 0, 0, 0
    hit = dev and dev.mem.find(addr)
    if hit:
        kind, (base, size) = 2, hit
        p = _S.alloc_pool.get(base)
        pool, bid = (p.handle if p else 0), _S.buffer_ids.get(base, 0)
        if p is not None:   # a pool block: the range is the mapping (segment) holding it, not the block
            base, size = next((b, n) for b, n, _ in p.layout.segments() if b <= addr < b + n)
    else:
        hp = _pinned(addr)
        if hp:
            kind, (base, size), dev = 1, hp, _S.devices[0]
    # like the real driver: an unknown pointer is not an error, its attributes are NULL/0
    known = {_PT.CU_POINTER_ATTRIBUTE_CONTEXT: drv.CUcontext(dev.ctx if kind else 0),
             _PT.CU_POINTER_ATTRIBUTE_MEMORY_TYPE: kind,
             _PT.CU_POINTER_ATTRIBUTE_DEVICE_POINTER: drv.CUdeviceptr(addr if kind else 0),
             _PT.CU_POINTER_ATTRIBUTE_HOST_POINTER: addr if kind == 1 else 0,
             _PT.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: False,
             _PT.CU_POINTER_ATTRIBUTE_BUFFER_ID: bid,
             _PT.CU_POINTER_ATTRIBUTE_IS_MANAGED: False,
             _PT.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: dev.ordinal if kind else -2,
             _PT.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: False,
             _PT.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: drv.CUdeviceptr(base),
             _PT.CU_POINTER_ATTRIBUTE_RANGE_SIZE: size,
             _PT.CU_POINTER_ATTRIBUTE_MAPPED: bool(kind),
             _PT.CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: 0,
             _PT.CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: 0,
             _PT.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: 3 if kind else 0,
             _PT.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: drv.CUmemoryPool(pool)}
    out = []
    for a in attrs[:int(numAttributes)]:
        if a not in known:
            raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"{a.name} is not supported by cuPointerGetAttributes here")
        out.append(known[a])
    return out


# ==================================================================================== stream capture, graphs
class _Graph:
    def __init__(self, handle):
        self.handle, self.nodes = handle, []  # nodes: [(op fn, label)] in capture order (a topological order)


class _Capture:
    """One stream capture: the graph it fills, the stream it began on, the streams that joined it."""

    def __init__(self, graph, origin, mode):
        self.graph, self.origin, self.mode = graph, origin, mode
        self.thread = threading.get_ident()   # the thread that began it (thread-local mode forbids calls there)
        self.streams, self.invalid = [origin], None
        self.tail = {}                        # stream -> node count after its last captured op
        self.joined = {}                      # stream -> node count the origin has waited for (join)


def _capture_check(cap):
    if cap.invalid:
        raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, f"the capture was invalidated: {cap.invalid}")


def _invalidate(cap, why="an unsupported operation"):
    if cap.invalid is None:
        cap.invalid = why


def _captures(dev):
    return [st.capture for st in _all_streams(dev) if st.capture is not None]


def _implicit_capture_check(dev):
    """Work on the legacy stream while a global-mode capture is under way would synchronize with it."""
    for cap in _captures(dev):
        if cap.mode == 0 and not cap.invalid:
            _invalidate(cap, "the legacy stream was used")
            raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                       f"work on the legacy stream while stream {cap.origin!r} is capturing in global mode "
                       f"(the capture is invalidated)")


def _not_while_capturing(s, name):
    if s.capture is not None:
        _invalidate(s.capture, name)
        raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                   f"{name} on stream {s!r} while it is capturing (the capture is invalidated)")


def _unsafe_while_capturing(name):
    """A call the driver refuses while a capture forbids "potentially unsafe API calls" (module loads, event and
    stream queries and synchronizes): a global-mode capture on any thread, or a thread-local one begun on this
    thread. Like the driver, the refusal invalidates that capture."""
    me = threading.get_ident()
    for dev in _S.devices:
        for cap in _captures(dev):
            if cap.mode == 0 or (cap.mode == 1 and cap.thread == me):
                _invalidate(cap, name)
                raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                           f"{name} while stream {cap.origin!r} is capturing in "
                           f"{'global' if cap.mode == 0 else 'thread-local'} mode (the capture is invalidated)")


def _not_captured(e, name):
    if e.captured is not None:
        raise _Err(R.CUDA_ERROR_CAPTURED_EVENT, f"{name}: event 0x{e.handle:x} was last recorded in a capture")


def _no_memory_nodes(s, name):
    if s.capture is not None:
        _invalidate(s.capture, name)
        raise _Err(R.CUDA_ERROR_NOT_SUPPORTED,
                   f"{name} on a capturing stream would make a graph memory node, which the simulator does not "
                   f"model (rawdev allocates from a private pool while capturing)")


def _pageable_in_capture(s, name):
    if s.capture is not None:
        _invalidate(s.capture, name)
        raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                   f"{name} with pageable host memory on a capturing stream (only pinned memory can be a graph "
                   f"memcpy node)")


@_api()
def cuStreamBeginCapture(hStream, mode):
    s = _stream(hStream)
    m = _int(mode, "mode")
    if m not in (0, 1, 2):
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"capture mode {m}")
    if s.legacy:
        raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the legacy stream cannot be captured")
    if s.capture is not None:
        raise _Err(R.CUDA_ERROR_ILLEGAL_STATE, f"stream {s!r} is already capturing")
    g = _Graph(_S.handle(0x6A00_0000))
    _S.graphs[g.handle] = g
    s.capture = _Capture(g, s, m)


@_api(nout=1)
def cuStreamEndCapture(hStream):
    s = _stream(hStream)
    cap = s.capture
    if cap is None or cap.origin is not s:
        raise _Err(R.CUDA_ERROR_ILLEGAL_STATE, f"stream {s!r} did not begin a capture")
    for st in cap.streams:
        st.capture = None
    if cap.invalid:
        _S.graphs.pop(cap.graph.handle, None)
        raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, f"the capture was invalidated: {cap.invalid}")
    unjoined = [st for st in cap.streams if st is not s and cap.tail.get(st, 0) > cap.joined.get(st, 0)]
    if unjoined:
        _S.graphs.pop(cap.graph.handle, None)
        raise _Err(R.CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                   f"streams {unjoined} have captured work the origin stream never waited for")
    return drv.CUgraph(cap.graph.handle)


@_api(nout=1)
def cuStreamIsCapturing(hStream):
    s = _stream(hStream)
    st = drv.CUstreamCaptureStatus
    if s.capture is None:
        return st.CU_STREAM_CAPTURE_STATUS_NONE
    return st.CU_STREAM_CAPTURE_STATUS_INVALIDATED if s.capture.invalid else st.CU_STREAM_CAPTURE_STATUS_ACTIVE


def _graph(h):
    g = _S.graphs.get(_int(h, "hGraph"))
    if g is None:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"0x{_int(h, 'hGraph'):x} is not a graph")
    return g


@_api(nout=2)
def cuGraphGetNodes(hGraph, numNodes=0):
    g = _graph(hGraph)
    n = _int(numNodes, "numNodes")
    return [drv.CUgraphNode(0)] * min(n, len(g.nodes)), len(g.nodes)


@_api(nout=1)
def cuGraphInstantiate(hGraph, flags):
    g = _graph(hGraph)
    if _int(flags, "flags") & ~0xF:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, f"instantiate flags {_int(flags, 'flags'):#x}")
    ex = _Graph(_S.handle(0x6B00_0000))
    ex.nodes = list(g.nodes)              # an executable graph is a snapshot: later edits of g don't reach it
    _S.graph_execs[ex.handle] = ex
    return drv.CUgraphExec(ex.handle)


@_api()
def cuGraphLaunch(hGraphExec, hStream):
    ex = _S.graph_execs.get(_int(hGraphExec, "hGraphExec"))
    if ex is None:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "not an executable graph")
    s = _stream(hStream)
    if s.capture is not None:
        _invalidate(s.capture, "cuGraphLaunch")
        raise _Err(R.CUDA_ERROR_NOT_SUPPORTED, "the simulator does not capture graph launches (child graphs)")
    for fn, label in ex.nodes:
        _enqueue(s, fn, f"graph 0x{ex.handle:x}: {label}")
    if _S.cfg["launch_blocking"]:
        _run([(s, float("inf"))])


@_api()
def cuGraphExecDestroy(hGraphExec):
    if _S.graph_execs.pop(_int(hGraphExec, "hGraphExec"), None) is None:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "not an executable graph")


@_api()
def cuGraphDestroy(hGraph):
    if _S.graphs.pop(_int(hGraph, "hGraph"), None) is None:
        raise _Err(R.CUDA_ERROR_INVALID_VALUE, "not a graph")


# ==================================================================================== test helpers
def reset():
    """Power-cycle the simulated GPU: memory, pools, streams, events, modules, pinned memory, sticky
    error, armed faults, counters; re-reads the RAWDEV_SIM_* environment and CUDA_LAUNCH_BLOCKING. cuInit is
    needed again (the
    runtime registers a hook here that does it and forgets its devices, so rawdev is usable at once).
    Device blocks live at the reset are remembered: a launch or copy that names one later is refused
    (CUDA_ERROR_INVALID_VALUE, saying so) instead of faulting on an address that is gone."""
    global _S
    with _lock:
        _graveyard.update({a: b for a, (b, _) in _S.host.items()})
        _retired.extend((a, a + n) for p in _S.pools.values() for a, n in p.allocs.items())
        _retired_handles.update([d.ctx for d in _S.devices], _S.streams, _S.events, _S.pools, _S.modules)
        _S = _State()
        _san.configure_from_env()
        # the address window of the new generation may be one used 4096 resets ago: forget blocks there
        _retired[:] = sorted(r for r in _retired if not _S.base <= r[0] < _S.base + GEN_SPAN)
    for hook in list(_reset_hooks):
        hook()


def on_reset(fn):
    """Run ``fn()`` after every reset() (once per function, however often it is registered)."""
    with _lock:
        if fn not in _reset_hooks:
            _reset_hooks.append(fn)


def inject_fault(func_name, code, nth=1):
    """Make the ``nth`` next call of ``func_name`` (e.g. "cuMemAllocFromPoolAsync") return ``code``
    (a CUresult or int) without doing anything. Several faults can be armed at once."""
    if not callable(globals().get(func_name)) or not func_name.startswith("cu"):
        raise ValueError(f"rawdev.sim has no driver function {func_name!r}")
    if int(nth) < 1:
        raise ValueError("nth counts from 1 (the next call)")
    with _lock:
        _S.faults.append([func_name, int(nth), R(int(code))])


def clear_faults():
    with _lock:
        _S.faults.clear()


def last_error_detail():
    """Human detail of the most recent failing call (kernel, thread, address, nearest allocation for
    a fault; sizes for OOM; the JIT log for a PTX error), or None."""
    return _S.last_detail


def sticky_error():
    """The sticky CUresult the simulated context is in, or None."""
    return _S.sticky


def stats():
    """Calls per function, kernels run (per name), bytes moved by executed copies/memsets, pending ops."""
    with _lock:
        S = _S
        return dict(calls=dict(S.calls), kernels=dict(S.kernels), kernels_run=sum(S.kernels.values()),
                    bytes=dict(S.bytes), bytes_copied=S.bytes["HtoD"] + S.bytes["DtoH"] + S.bytes["DtoD"],
                    pending_ops=sum(len(s.q) for d in S.devices for s in _all_streams(d)),
                    clock_ms=S.clock, faults_armed=len(S.faults))


def peek(dptr, nbytes):
    """Device memory as it is *now* (queued work not run): what a GPU's memory holds mid-stream."""
    addr = int(dptr)
    with _lock:
        return _dev_of(addr).mem.read(addr, int(nbytes))


def device_memory(ordinal=0):
    """The :class:`DeviceMemory` of a simulated device (for tests and tools)."""
    return _S.devices[ordinal].mem


def pool_segments(pool):
    """[(base, size, blocks overlapping it)] of a live pool's segments, sorted by address (tests, tools)."""
    with _lock:
        p = _S.pools.get(_int(pool, "pool"))
        if p is None:
            raise ValueError(f"{pool!r} is not a live memory pool")
        return p.layout.segments()


__all__ = [n for n in list(globals()) if n.startswith("cu") and callable(globals()[n])]
