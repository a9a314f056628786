"""Execute decoded PTX: all threads of a chunk of blocks at once as numpy lanes.

Scheduling: the lanes waiting at each basic block form a group (``pending[block] = lanes``); the
group at the lowest block runs next (``lanes is None`` means every lane of the chunk: the fast,
unmasked path), so structured code from NVRTC reconverges by itself when two groups reach the same
block. A conditional branch splits a group; ``ret``/``exit`` retires lanes. ``bar.sync`` parks a
group until no other group can run; then every live thread of each block must be parked at the
same barrier (else :class:`BarrierError`), and a thread that exits while threads of its block wait
at a barrier is a :class:`BarrierError` too.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..memory import DeviceMemory, SimIllegalAddress, SimMisalignedAddress, rmw_sequential
from . import module_cache, native
from .counting import KernelCounts, counting
from .decoder import LBASE, SBASE, DecodeError, Decoder, Param, _init_bytes, _ModuleSyms
from .native_ir import FAULT_CP_MISALIGNED, FAULT_CP_QUEUE, FAULT_LDMATRIX, FAULT_VECTOR_MISALIGNED, WINDOW_FAULTS
from .parser import PtxError, parse

CHUNK_THREADS = 65536             # lanes per chunk (upper bound)
REGISTER_BUDGET = 768 << 20       # bytes of register arrays per chunk (bounds the chunk for big kernels)
SHWIN = 0x0000_4000_0000_0000     # generic-address window of shared memory
LCWIN = 0x0000_5000_0000_0000     # generic-address window of local memory
CWIN = 0x0000_6000_0000_0000      # generic-address window of the constant bank
PWIN = 0x0000_7000_0000_0000      # generic-address window of kernel parameters
GLOBAL_MIN = 0x0001_0000_0000_0000
ASSERT_LINES = 256                # stderr lines printed for the threads that failed a device-side assert


class KernelFault(SimIllegalAddress):
    """A kernel thread touched memory it may not (out of bounds, misaligned), trapped, or failed an assert().

    Subclass of :class:`SimIllegalAddress`; ``code_name`` is CUDA_ERROR_ILLEGAL_ADDRESS or
    CUDA_ERROR_MISALIGNED_ADDRESS (CUDA_ERROR_LAUNCH_FAILED for trap, CUDA_ERROR_ASSERT for a call of
    __assertfail, with ``space`` "assert" and the condition text in ``assertion``).
    """

    def __init__(self, message, *, kernel, thread, block, address, line, ptx, nearest, code_name,
                 lane_index=None, space="global", assertion=None):
        super().__init__(lane_index, address if address is not None else 0, message)
        # .address is a device (global) address or None; shared/local/const faults carry .offset instead
        self.offset = None
        if space != "global":
            self.offset, self.address = address, None
        self.kernel, self.thread, self.block = kernel, thread, block
        self.line, self.ptx, self.nearest, self.space = line, ptx, nearest, space
        self.code_name = self.code = code_name   # the CUresult name the driver should report
        self.assertion = assertion               # the failed assert()'s condition text (space "assert")


SANITIZER_SPACES = ("initcheck", "racecheck", "synccheck")


# The sanitizer's launch context class (rawdev.sim.ptx.checkers.CheckedLaunch), registered by that module: it builds
# on this one, so this one does not import it.
CHECKED_LAUNCH: list = []


class SanitizerFinding(KernelFault):
    """A sanitizer checker's report (``space`` is the checker: initcheck, racecheck or synccheck); the kernel
    stops with CUDA_ERROR_LAUNCH_FAILED. ``source`` is the CUDA source "file:line" when the PTX has line info."""

    def __init__(self, message, *, source=None, global_address=False, **kw):
        super().__init__(message, **kw)
        self.source = source
        if global_address:   # a device address (initcheck, global racecheck), not a shared-memory offset
            self.address, self.offset = self.offset, None


class BarrierError(RuntimeError):
    """bar.sync reached by only part of a thread block (a divergent barrier)."""

    code_name = code = "CUDA_ERROR_LAUNCH_FAILED"

    def __init__(self, message, *, kernel, line, block=None, arrived=None, expected=None):
        super().__init__(message)
        self.kernel, self.line, self.block, self.arrived, self.expected = kernel, line, block, arrived, expected


class _LaneFault(Exception):
    def __init__(self, iid, pos, err, space):
        self.iid, self.pos, self.err, self.space = iid, pos, err, space


@dataclass
class _Assertion:
    message: str
    file: str
    line: int
    function: str
    positions: np.ndarray   # every lane of the group that reached __assertfail (the native engine: the first ones)
    failed: int = 0         # how many threads failed it, where more than ``positions`` holds


@dataclass
class LaunchStats:
    kernel: str
    grid: tuple
    block: tuple
    thread_instructions: int = 0
    block_executions: int = 0
    chunks: int = 0
    seconds: float = 0.0
    shared_requests: int = 0       # with count_banks: warp-level shared-memory accesses (per phase)
    shared_wavefronts: int = 0     # ... and the bank passes they took (> requests means bank conflicts)
    counts: object = None          # with kernel_stats: a counting.KernelCounts (classes, global bytes, divergence)

    @property
    def bank_conflicts(self):
        """Extra shared-memory passes caused by bank conflicts (launch(..., count_banks=True))."""
        return self.shared_wavefronts - self.shared_requests

    @property
    def rate(self):
        return self.thread_instructions / self.seconds if self.seconds else 0.0


class Entry:
    """One .entry of a module: its parameter layout and sizes, and its decoded code.

    ``code`` (an :class:`~rawdev.sim.ptx.decoder.EntryCode`) is decoded at load, or, for a module loaded
    from the disk index (:mod:`rawdev.sim.ptx.module_cache`), from the entry's own lines the first time it
    is asked for; either way once, shared by every PtxModule of the same text.
    """

    def __init__(self, name, params, param_size, shared_static, local_size, code=None, decode=None):
        self.name, self.params, self.param_size = name, params, param_size
        self.shared_static, self.local_size = shared_static, local_size
        self._code, self._decode = code, decode
        self._lock = threading.Lock()

    @property
    def code(self):
        if self._code is None:
            with self._lock:
                if self._code is None:
                    self._code = self._decode()
        return self._code

    def __repr__(self):
        return (f"Entry(name={self.name!r}, param_size={self.param_size}, shared_static={self.shared_static}, "
                f"local_size={self.local_size}, decoded={self._code is not None})")


@dataclass
class _GlobalVar:
    """A module-scope .global variable: what allocating and initialising it needs."""
    name: str
    size: int
    align: int
    init: bytes


# ============================================================================== launch context
_LANE_RANGES: dict = {}
_SPANS: dict = {}   # module key -> where each entry's body lies in the text


@dataclass
class _BarrierAt:
    """What a barrier report needs of the barrier (the decoder's Block has these)."""
    line: int
    text: str


def _cstring(mem, addr, iid, pos):
    """The NUL-terminated string at device address ``addr`` (the driver reads it from the module's global data); a
    pointer into no allocation, or no NUL before its end, faults as a load would."""
    hit = mem.find(addr)
    raw = mem.read(addr, hit[0] + hit[1] - addr) if hit else b""
    if b"\0" not in raw:
        end = addr + len(raw)
        raise _LaneFault(iid, pos, SimIllegalAddress(None, end, mem._describe_oob(end, 1)), "global")
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


@dataclass
class _FaultCtx:
    """What reporting a native engine's fault needs of a launch context."""
    T: int
    mem: DeviceMemory


def _lane_range(n):
    """np.arange(n) as int64, shared read-only between launches (lane indices never change)."""
    r = _LANE_RANGES.get(n)
    if r is None:
        if len(_LANE_RANGES) > 256:
            _LANE_RANGES.clear()
        r = np.arange(n, dtype=np.int64)
        r.flags.writeable = False
        _LANE_RANGES[n] = r
    return r


class _Ctx:
    SHWIN, LCWIN, CWIN, PWIN = SHWIN, LCWIN, CWIN, PWIN

    def __init__(self, module, code, params, memory, shsize, T, nb, gaddr):
        self.module, self.code, self.params, self.mem = module, code, params, memory
        self.shsize = shsize                     # bytes of shared memory per block (static + dynamic)
        self.shstride = -(-max(shsize, 1) // 16) * 16
        self.lsize = code.local_size
        self.T = T
        self.nb = nb
        self.n = T * nb
        self.gaddr = gaddr
        self.cbank = module._cbank
        self.pbank = np.frombuffer(params + b"\0" * 16, np.uint8)
        self.S = np.zeros(self.shstride * nb, np.uint8)
        self.L = np.zeros(max(self.lsize, 16) * self.n, np.uint8) if self.lsize else None
        self.all_lanes = _lane_range(self.n)
        self._wsize = None
        self._warp = None
        self._cp_open, self._cp_groups = [], []   # cp.async copies in flight: not yet committed / committed
        self.count_banks = False
        self.bank_requests = self.bank_wavefronts = 0
        self.lanes = None       # the lanes of the block running now (None: all): set by the scheduler
        self.kstats = None      # the launch's KernelCounts in the statistics mode (counting.counting sets it)
        self.synccheck = False  # warp instructions check their membermask (the sanitizer's launch context)

    def barrier_passed(self):
        """Every live thread of the chunk's blocks passed a bar.sync (the sanitizer's context counts these)."""

    def warp_sync(self, n, iid, m, mask):
        """bar.warp.sync (__syncwarp) by the lanes ``m`` of the running block: the scheduler keeps a warp's converged
        lanes together, so there is nothing to do (the sanitizer's context checks and counts it)."""

    # -- lanes ↔ warps
    def warp_of(self, lanes):
        if self._warp is None:
            wpb = -(-self.T // 32)
            self._warp = (self.all_lanes // self.T) * wpb + (self.all_lanes % self.T) // 32
        return self._warp[lanes]

    def warp_size_of(self, lanes):
        if self._wsize is None:
            lin = self.all_lanes % self.T
            self._wsize = np.minimum(32, self.T - (lin // 32) * 32)
        return self._wsize[lanes]

    # -- params
    def ldparam(self, off, dt):
        dt = np.dtype(dt)
        if off + dt.itemsize > len(self.params):
            raise DecodeError(f"ld.param at offset {off} past the {len(self.params)}-byte parameter buffer")
        return np.frombuffer(self.params, dt, 1, off)[0]

    # -- memory access (called by the generated code)
    @staticmethod
    def _addr(n, base, off, m):
        if base is None:
            a = np.full(n, off & 0xFFFFFFFFFFFFFFFF, np.uint64)
        else:
            b = np.asarray(base)
            if b.dtype != np.uint64:
                b = b.view(np.uint64) if b.dtype.itemsize == 8 else b.astype(np.uint64)
            if b.ndim == 0:
                b = np.full(n, b, np.uint64)
            a = b + np.uint64(off & 0xFFFFFFFFFFFFFFFF) if off else b
        if m is not None:
            a = a[m]
        return a

    # -- cp.async: read global memory at issue, land in shared memory only at the wait that covers the group
    def cp_async(self, n, dbase, doff, sbase, soff, size, src_size, iid, m, sb):
        da = self._addr(n, dbase, doff, m)
        _, bi = self._space_index("shared", da, sb, None, size, iid, m)   # bounds and alignment checked
        sa = self._addr(n, sbase, soff, m)
        if src_size is None:
            ss = np.full(sa.shape[0], size, np.int64)
        else:
            ss = np.asarray(src_size).astype(np.int64)
            ss = np.full(sa.shape[0], int(ss), np.int64) if ss.ndim == 0 else (ss[m] if m is not None else ss)
        if sa.shape[0] and int(np.bitwise_or.reduce(sa)) & (size - 1):
            k = int(np.argmax((sa & np.uint64(size - 1)) != 0))
            self._fault(iid, m, k, SimMisalignedAddress(k, int(sa[k]), f"misaligned {size}-byte cp.async source "
                                                        f"at 0x{int(sa[k]):x}"), "global")
        data = np.zeros((sa.shape[0], size), np.uint8)
        read = np.arange(size)[None, :] < np.minimum(ss, size)[:, None]   # bytes past src-size are zero-filled
        if read.any():
            aa = (sa[:, None] + np.arange(size, dtype=np.uint64))[read]
            try:
                data[read] = self.mem.load(aa, np.dtype(np.uint8))
            except SimIllegalAddress as e:
                lane = int(np.flatnonzero(read.any(axis=1))[0]) if e.lane_index is None else \
                    int(np.nonzero(read)[0][e.lane_index])
                self._fault(iid, m, lane, e, "global")
        self._cp_open.append((np.asarray(bi, np.uint64), data))

    def cp_commit(self):
        self._cp_groups.append(self._cp_open)
        self._cp_open = []

    def cp_wait(self, keep, everything=False):
        """cp.async.wait_group keep (all but the `keep` newest committed groups land) / wait_all (all land)."""
        if everything:
            self.cp_commit()
        while len(self._cp_groups) > keep:
            for bi, data in self._cp_groups.pop(0):
                if data.size:
                    self.S[(bi[:, None] + np.arange(data.shape[1], dtype=np.uint64)).reshape(-1)] = data.reshape(-1)

    def _count_banks(self, bi, width, m):
        """Bank passes of one shared-memory access: per warp (per phase of 8 lanes for 16-byte accesses, 16 for
        8-byte ones, as the hardware splits them), the most distinct 4-byte words any of the 32 banks serves;
        lanes reading the same word share it (a broadcast)."""
        lanes = self.all_lanes if self.lanes is None else self.lanes   # a part_ block's n lanes are these
        if m is not None:
            lanes = lanes[m]
        if lanes.shape[0] == 0:
            return
        words = max(1, width // 4)
        phase = 32 if width <= 4 else (16 if width == 8 else 8)
        lane = (lanes % self.T) % 32
        group = self.warp_of(lanes).astype(np.int64) * 4 + lane // phase
        w = ((np.asarray(bi, np.uint64).astype(np.int64) // 4)[:, None] + np.arange(words)).reshape(-1)
        g = np.repeat(group, words)
        keys = np.unique((g << 40) | ((w % 32) << 34) | (w & ((1 << 34) - 1)))
        gb, per_bank = np.unique(keys >> 34, return_counts=True)      # distinct words per (group, bank)
        groups, inv = np.unique(gb >> 6, return_inverse=True)
        most = np.zeros(groups.shape[0], np.int64)
        np.maximum.at(most, inv, per_bank)
        self.bank_requests += int(groups.shape[0])
        self.bank_wavefronts += int(most.sum())

    def _fault(self, iid, m, k, err, space):
        pos = int(np.flatnonzero(m)[k]) if m is not None else k
        raise _LaneFault(iid, pos, err, space)

    def _local_check(self, a, size, limit, what, iid, m):
        if a.shape[0] == 0:
            return
        hi = int(a.max())
        bad_align = int(np.bitwise_or.reduce(a)) & (size - 1) if size > 1 else 0
        if hi + size > limit or bad_align:
            lane = int(np.argmax((a + np.uint64(size) > np.uint64(limit)) | ((a & np.uint64(size - 1)) != 0)))
            addr = int(a[lane])
            if addr + size > limit:
                msg = (f"{size}-byte {what} access at offset 0x{addr:x} is outside the {limit}-byte {what} window")
                err = SimIllegalAddress(lane, addr, msg)
            else:
                err = SimMisalignedAddress(lane, addr, f"misaligned {size}-byte {what} access at offset 0x{addr:x}")
            self._fault(iid, m, lane, err, what)

    def _space_index(self, space, a, sb, lb, isz, iid, m):
        """Byte index into the backing array of shared/local/const/param space."""
        if space == "shared":
            self._local_check(a, isz, self.shsize, "shared", iid, m)
            s = np.asarray(sb)[m] if m is not None else sb
            return self.S, a + s
        if space == "local":
            self._local_check(a, isz, self.lsize, "local", iid, m)
            s = np.asarray(lb)[m] if m is not None else lb
            return self.L, a + s
        if space == "const":
            self._local_check(a, isz, len(self.module._const_bank), "const", iid, m)
            return self.cbank, a
        if space == "param":
            self._local_check(a, isz, len(self.params), "param", iid, m)
            return self.pbank, a
        raise AssertionError(space)

    def ld(self, space, n, base, off, dt, vec, iid, m, sb, lb):
        dt = np.dtype(dt)
        a = self._addr(n, base, off, m)
        if space == "generic":
            res = self._generic(a, dt, vec, iid, m, sb, lb, None)
        else:
            res = self._ld(space, a, dt, vec, iid, m, sb, lb)
        if m is not None:
            out = np.zeros((vec, n), dt)
            out[:, m] = res
            res = out
        return res[0] if vec == 1 else res

    def _ld(self, space, a, dt, vec, iid, m, sb, lb):
        isz = dt.itemsize
        if space == "global":
            if vec > 1:
                if a.shape[0] and int(np.bitwise_or.reduce(a)) & (isz * vec - 1):
                    k = int(np.argmax((a & np.uint64(isz * vec - 1)) != 0))
                    self._fault(iid, m, k, SimMisalignedAddress(
                        k, int(a[k]), f"misaligned {isz * vec}-byte vector access at 0x{int(a[k]):x}"), "global")
                aa = (a[:, None] + np.arange(vec, dtype=np.uint64) * np.uint64(isz)).reshape(-1)
                try:
                    r = self.mem.load(aa, dt)
                except SimIllegalAddress as e:
                    self._fault(iid, m, e.lane_index // vec, e, "global")
                return np.ascontiguousarray(r.reshape(-1, vec).T)
            try:
                return self.mem.load(a, dt)[None, :]
            except SimIllegalAddress as e:
                self._fault(iid, m, e.lane_index, e, "global")
        buf, bi = self._space_index(space, a, sb, lb, isz * vec, iid, m)
        if self.count_banks and space == "shared":
            self._count_banks(bi, isz * vec, m)
        view = buf.view(dt)
        if vec == 1:
            if isz > 1:
                bi = bi >> np.uint64(isz.bit_length() - 1)   # never in place: bi may be the address register
            return view[bi][None, :]
        if vec in (2, 4) and view.shape[0] % vec == 0:
            # aligned to isz*vec (checked): gather whole rows, one per lane
            bi = bi >> np.uint64((isz * vec).bit_length() - 1)
            return np.ascontiguousarray(view.reshape(-1, vec)[bi].T)
        ei = bi >> np.uint64(isz.bit_length() - 1)
        return np.stack([view[ei + np.uint64(k)] for k in range(vec)])

    def st(self, space, n, base, off, vals, dt, iid, m, sb, lb):
        dt = np.dtype(dt)
        a = self._addr(n, base, off, m)
        vec = len(vals)
        vs = []
        for v in vals:
            v = np.asarray(v)
            if v.dtype != dt:
                v = v.view(dt) if v.dtype.itemsize == dt.itemsize else v.astype(dt)
            if v.ndim == 0:
                v = np.full(a.shape[0] if m is not None else n, v, dt)
            elif m is not None:
                v = v[m]
            vs.append(v)
        if space == "generic":
            self._generic(a, dt, vec, iid, m, sb, lb, vs)
            return
        self._st(space, a, vs, dt, iid, m, sb, lb)

    def _st(self, space, a, vs, dt, iid, m, sb, lb):
        isz = dt.itemsize
        vec = len(vs)
        if space == "global":
            try:
                if vec == 1:
                    self.mem.store(a, vs[0], dt)
                else:
                    if a.shape[0] and int(np.bitwise_or.reduce(a)) & (isz * vec - 1):
                        k = int(np.argmax((a & np.uint64(isz * vec - 1)) != 0))
                        self._fault(iid, m, k, SimMisalignedAddress(
                            k, int(a[k]), f"misaligned {isz * vec}-byte vector access at 0x{int(a[k]):x}"), "global")
                    aa = (a[:, None] + np.arange(vec, dtype=np.uint64) * np.uint64(isz)).reshape(-1)
                    self.mem.store(aa, np.stack(vs, axis=1).reshape(-1), dt)
            except SimIllegalAddress as e:
                self._fault(iid, m, e.lane_index // vec, e, "global")
            return
        if space in ("const", "param"):
            raise DecodeError(f"store to .{space}")
        buf, bi = self._space_index(space, a, sb, lb, isz * vec, iid, m)
        if self.count_banks and space == "shared":
            self._count_banks(bi, isz * vec, m)
        view = buf.view(dt)
        shift = np.uint64(isz.bit_length() - 1)
        ei = (bi >> shift) if isz > 1 else bi
        for k in range(vec):
            view[ei + np.uint64(k) if k else ei] = vs[k]

    def _generic(self, a, dt, vec, iid, m, sb, lb, vals):
        """Generic addressing: split the lanes by window (shared, local, else global)."""
        if a.shape[0] == 0 or int(a.min()) >= GLOBAL_MIN:
            if vals is None:
                return self._ld("global", a, dt, vec, iid, m, sb, lb)
            return self._st("global", a, vals, dt, iid, m, sb, lb)
        win = np.full(a.shape[0], 0, np.int8)
        win[(a >= np.uint64(SHWIN)) & (a < np.uint64(SHWIN + (1 << 40)))] = 1
        win[(a >= np.uint64(LCWIN)) & (a < np.uint64(LCWIN + (1 << 40)))] = 2
        win[(a >= np.uint64(CWIN)) & (a < np.uint64(CWIN + (1 << 40)))] = 3
        win[(a >= np.uint64(PWIN)) & (a < np.uint64(PWIN + (1 << 40)))] = 4
        out = np.zeros((vec, a.shape[0]), dt) if vals is None else None
        full_m = m if m is not None else np.ones(a.shape[0], bool)
        for w, space, base in ((0, "global", 0), (1, "shared", SHWIN), (2, "local", LCWIN), (3, "const", CWIN),
                               (4, "param", PWIN)):
            sel = win == w
            if not sel.any():
                continue
            aa = a[sel] - np.uint64(base)
            # a mask relative to the original n lanes, for fault positions and base registers
            sub_m = full_m.copy()
            sub_m[np.flatnonzero(full_m)[~sel]] = False
            if vals is None:
                out[:, sel] = self._ld(space, aa, dt, vec, iid, sub_m, sb, lb)
            else:
                self._st(space, aa, [v[sel] for v in vals], dt, iid, sub_m, sb, lb)
        return out

    def atom(self, space, n, op, base, off, val, cmp, dt, iid, m, sb, ret):
        dt = np.dtype(dt)
        a = self._addr(n, base, off, m)
        k = a.shape[0]

        def prep(v):
            if v is None:
                return None
            v = np.asarray(v)
            if v.dtype != dt:
                v = v.view(dt) if v.dtype.itemsize == dt.itemsize else v.astype(dt)
            if v.ndim == 0:
                return np.full(k, v, dt)
            return v[m] if m is not None else v
        v, c = prep(val), prep(cmp)
        if space == "generic":
            if k and int(a.min()) < GLOBAL_MIN:
                sh = (a >= np.uint64(SHWIN)) & (a < np.uint64(SHWIN + (1 << 40)))
                if sh.all():
                    space, a = "shared", a - np.uint64(SHWIN)
                elif sh.any():
                    raise DecodeError("generic atomic mixing shared and global addresses")
                else:
                    space = "global"
            else:
                space = "global"
        self._atomic_access(space, a, dt, iid, m)
        if space == "global":
            try:
                old = self.mem.atomic(op, a, v, dt, compare=c, return_old=ret)
            except SimIllegalAddress as e:
                self._fault(iid, m, e.lane_index, e, "global")
        else:
            buf, bi = self._space_index("shared", a, sb, None, dt.itemsize, iid, m)
            view = buf.view(dt)
            ei = (bi >> np.uint64(dt.itemsize.bit_length() - 1)).astype(np.intp)
            old = rmw_sequential(op, view, ei, v, c, return_old=ret)
        if not ret:
            return None
        if m is not None:
            out = np.zeros(n, dt)
            out[m] = old
            return out
        return old

    def _atomic_access(self, space, a, dt, iid, m):
        """An atomic of the lanes ``m`` at ``a`` in ``space`` (resolved) is about to run: nothing to do here
        (the sanitizer's context checks and records it)."""

    def trap(self, n, iid, m):
        lanes = np.flatnonzero(m) if m is not None else np.arange(n)
        if lanes.shape[0]:
            raise _LaneFault(iid, int(lanes[0]), None, "trap")

    def _cstring(self, addr, iid, pos):
        return _cstring(self.mem, addr, iid, pos)

    def assertfail(self, n, iid, m, message, file, line, function):
        """__assertfail(message, file, line, function, charSize) in the lanes ``m`` (all when None): every
        such thread fails the assertion; the kernel stops (CUDA_ERROR_ASSERT), reported for the first."""
        lanes = np.flatnonzero(m) if m is not None else np.arange(n)
        if not lanes.shape[0]:
            return
        k = int(lanes[0])

        def at(v):
            v = np.asarray(v)
            return int(v if v.ndim == 0 else v[k])

        info = _Assertion(self._cstring(at(message), iid, k), self._cstring(at(file), iid, k), at(line),
                          self._cstring(at(function), iid, k), lanes)
        raise _LaneFault(iid, k, info, "assert")


# ============================================================================== module
_CACHE: dict = {}
_MISSING = object()
_CACHE_LOCK = threading.Lock()


def _decode_entry(text, spans, name, want):
    """Decode one entry of an indexed module from its own lines (every other body blanked)."""
    ast = parse(module_cache.only_entry(text, spans, name))
    code = Decoder(ast, _ModuleSyms(ast), ast.functions[name]).decode()
    got = (code.params, code.param_size, code.shared_static, code.local_size)
    if got != want:   # the index does not describe this text: never run a kernel laid out differently
        raise DecodeError(f"{name}: the simulator's module index disagrees with the PTX ({got} != {want}); "
                          f"delete {module_cache.cache_dir()}")
    return code


class PtxModule:
    """A parsed and decoded PTX module (decoding happens once, here)."""

    def __init__(self, text, key=None):
        """key: the sha256 hex digest of text, when the caller knows it (the simulated driver keeps it per image)."""
        if isinstance(text, (bytes, bytearray, memoryview)):
            text = bytes(text).split(b"\0", 1)[0].decode()
        if key is None:
            key = hashlib.sha256(text.encode()).hexdigest()
        with _CACHE_LOCK:
            cached = _CACHE.get(key)
        if cached is None:
            cached = self._from_index(text, key)
            if cached is None:
                cached = self._decode(text)
                self._write_index(text, key, cached)
            with _CACHE_LOCK:
                cached = _CACHE.setdefault(key, cached)
        self.version, self.target, self.entries, self._const_bank, self._globals, self.opcodes = cached
        self.key, self._text = key, text
        self._cbank = np.frombuffer(self._const_bank, np.uint8) if self._const_bank else np.zeros(16, np.uint8)
        self._global_addrs = {}   # id(memory) -> (memory, [addresses])

    @staticmethod
    def _decode(text):
        """Parse and decode the whole module now (the first load of a text: every error is raised here)."""
        ast = parse(text)
        msyms = _ModuleSyms(ast)
        entries = {}
        opcodes = set()
        for name, fn in ast.functions.items():
            if fn.kind != "entry":
                raise NotImplementedError(f".func {name} (line {fn.line}): device functions / calls are not "
                                          f"supported by the simulator")
            dec = Decoder(ast, msyms, fn)
            code = dec.decode()
            opcodes |= code.opcodes
            entries[name] = Entry(name, code.params, code.param_size, code.shared_static, code.local_size, code)
        globals_ = [_GlobalVar(v.name, v.size, v.align, _init_bytes(v)) for v in msyms.global_vars]
        return ast.version, ast.target, entries, msyms.const_bank, globals_, opcodes

    @staticmethod
    def _write_index(text, key, cached):
        """Record what this load learned (module_cache), when every entry's body could be located."""
        version, target, entries, const_bank, globals_, opcodes = cached
        if module_cache.cache_dir() is None:
            return
        spans = module_cache.body_spans(text)
        if set(spans) != set(entries):
            return
        _SPANS[key] = spans
        module_cache.save(key, {
            "version": list(version), "target": target, "const_bank": const_bank.hex(),
            "globals": [[v.name, v.size, v.align, v.init.hex()] for v in globals_], "opcodes": sorted(opcodes),
            "entries": [[e.name, [[p.name, p.type, p.size, p.align, p.offset] for p in e.params], e.param_size,
                         e.shared_static, e.local_size, list(spans[e.name])] for e in entries.values()]})

    @staticmethod
    def _from_index(text, key):
        """The module from its disk index (no parsing now; each entry decodes from its own lines on first use),
        or None when there is no usable index."""
        rec = module_cache.load(key)
        if rec is None:
            return None
        try:
            spans = {e[0]: (int(e[5][0]), int(e[5][1])) for e in rec["entries"]}
            _SPANS[key] = spans   # entry_text needs them too: finding them again costs 0.2 s in a big file
            entries = {}
            for name, params, param_size, shared_static, local_size, _ in rec["entries"]:
                ps = [Param(str(a), str(b), int(c), int(d), int(o)) for a, b, c, d, o in params]
                want = (ps, int(param_size), int(shared_static), int(local_size))
                entries[name] = Entry(name, *want, decode=functools.partial(_decode_entry, text, spans, name, want))
            globals_ = [_GlobalVar(str(n), int(sz), int(al), bytes.fromhex(init)) for n, sz, al, init in rec["globals"]]
            return (tuple(int(x) for x in rec["version"]), str(rec["target"]), entries,
                    bytes.fromhex(rec["const_bank"]), globals_, set(rec["opcodes"]))
        except (KeyError, TypeError, ValueError, IndexError):
            return None

    def entry_text(self, name):
        """The module's text with every body but ``name``'s blanked (line numbers kept): what parsing one kernel
        needs (the native engine lowers one kernel at a time)."""
        spans = _SPANS.get(self.key)
        if spans is None:
            spans = _SPANS[self.key] = module_cache.body_spans(self._text)
        if name not in spans:
            return self._text
        return module_cache.only_entry(self._text, spans, name)

    # -- module globals live in device memory, allocated on first launch with that memory
    def _gaddr(self, memory):
        if not self._globals:
            return []
        ent = self._global_addrs.get(id(memory))
        if ent is None or ent[0] is not memory:
            addrs = []
            for v in self._globals:
                addr = memory.alloc(max(v.size, 1), align=max(v.align, 256))
                memory.write(addr, v.init)
                addrs.append(addr)
            ent = self._global_addrs[id(memory)] = (memory, addrs)
        return ent[1]

    def global_address(self, name, memory):
        for v, a in zip(self._globals, self._gaddr(memory)):
            if v.name == name:
                return a
        raise KeyError(name)

    # -- launch
    def launch(self, name, grid=(1, 1, 1), block=(1, 1, 1), params=b"", dynamic_shared=0, memory=None,
               max_chunk_threads=None, count_banks=False, sanitize=frozenset(), kernel_stats=False):
        """Run ``name`` on ``grid`` x ``block`` threads; ``sanitize`` names the checkers to run besides memcheck
        (initcheck, racecheck, synccheck: :mod:`rawdev.sim.sanitizer`); ``kernel_stats`` counts instructions by
        class, global bytes, divergence (``stats.counts``) and bank passes (:mod:`rawdev.sim.ptx.counting`)."""
        if name not in self.entries:
            raise KeyError(f"no .entry {name!r} in the module (has: {', '.join(self.entries)})")
        entry = self.entries[name]
        grid = tuple(int(x) for x in (tuple(grid) + (1, 1, 1))[:3])
        block = tuple(int(x) for x in (tuple(block) + (1, 1, 1))[:3])
        params = bytes(params)
        if len(params) < entry.param_size:
            raise ValueError(f"{name}: parameter buffer has {len(params)} bytes, the kernel takes {entry.param_size}")
        if memory is None:
            memory = DeviceMemory()
        T = block[0] * block[1] * block[2]
        nblocks = grid[0] * grid[1] * grid[2]
        stats = LaunchStats(name, grid, block)
        if kernel_stats:
            stats.counts = KernelCounts()
            count_banks = True
        if T == 0 or nblocks == 0:
            return stats
        gaddr = self._gaddr(memory)
        engine = native.mode()
        if (engine != "interp" and not (sanitize and set(sanitize) - {"memcheck"}) and not count_banks
                and max_chunk_threads is None and memory.shadow is None and native.available()):
            k = native.kernel(self, name)
            if k is not None:
                if engine == "diff":
                    return self._launch_diff(k, entry, grid, block, params, int(dynamic_shared), memory, stats)
                self._launch_native(k, entry, grid, block, params, memory, stats, int(dynamic_shared))
                return stats
        return self._launch_interp(entry.code, grid, block, params, dynamic_shared, memory, stats, gaddr,
                                   max_chunk_threads, count_banks, sanitize, kernel_stats, T, nblocks)

    def _launch_native(self, k, entry, grid, block, params, memory, stats, dynamic_shared=0, reverse=False,
                       blocks=None):
        f = native.run(k, grid, block, params, memory, stats, dynamic_shared, reverse, blocks,
                       self._gaddr(memory) if k.gbase is not None else ())
        if f is None:
            return
        code = entry.code
        T = block[0] * block[1] * block[2]
        if f[0] == native.STOP_ASSERT:   # (5, threads failing, instruction, message, file, line, function, positions)
            _, nfail, iid, message, file, line, function, pos = f
            lanes = np.array([b * T + t for b, t in pos], np.int64)
            info = _Assertion(_cstring(memory, message, iid, 0), _cstring(memory, file, iid, 0), line,
                              _cstring(memory, function, iid, 0), lanes, nfail)
            self._kernel_fault(code, _LaneFault(iid, int(lanes[0]), info, "assert"), None, _FaultCtx(T, memory), 0,
                               grid, block)
        what, a, b_, c, d, blk, t = f
        if what == 1 and a == FAULT_LDMATRIX:   # the decoder's own check, worded as it words it
            raise DecodeError(f"line {code.insts[b_][0]}: ldmatrix row address not 16-byte aligned inside the shared "
                              f"window")
        if what == 6:   # a warp-wide instruction some lanes of the warp did not reach
            line, text = code.insts[k.barriers[a]]
            op = text.split()[0].split(".")[0]
            raise DecodeError(f"line {line}: {op}.sync.aligned executed by a partial warp" +
                              (" (every lane of the warp must execute it together)" if op == "mma" else ""))
        if what == 1:   # a faulting thread: (kind, instruction, address, size)
            kind, iid, addr, size = a, b_, c, d
            space = "global"
            window = next((sp for sp, kinds in WINDOW_FAULTS.items() if kind in kinds), None)
            if kind == FAULT_CP_QUEUE:
                raise native.EngineMismatch(
                    f"kernel {code.name}: thread {self._tid(t, block)} of block {self._bid(blk, grid)} has more than "
                    f"{addr} cp.async copies in flight (line {code.insts[iid][0]}), more than the native engine's "
                    f"queue holds; RAWDEV_SIM_ENGINE=interp runs this kernel")
            if kind == FAULT_VECTOR_MISALIGNED:
                err = SimMisalignedAddress(0, addr, f"misaligned {size}-byte vector access at 0x{addr:x}")
            elif kind == FAULT_CP_MISALIGNED:
                err = SimMisalignedAddress(0, addr, f"misaligned {size}-byte cp.async source at 0x{addr:x}")
            elif window is not None:   # the interpreter's _local_check wording
                space = window
                limit = (k.dyn_shared_offset + int(dynamic_shared) if dynamic_shared else k.shared_static) \
                    if window == "shared" else code.local_size if window == "local" else k.param_size
                if kind == WINDOW_FAULTS[window][0]:
                    err = SimIllegalAddress(0, addr, f"{size}-byte {window} access at offset 0x{addr:x} is outside "
                                                     f"the {limit}-byte {window} window")
                else:
                    err = SimMisalignedAddress(0, addr, f"misaligned {size}-byte {window} access at offset "
                                                        f"0x{addr:x}")
            else:
                try:   # the memory's own check gives the interpreter's error for this address and size
                    memory._raise_lane(np.array([addr], np.uint64), 0, size)
                except SimIllegalAddress as e:
                    err = e
            self._kernel_fault(code, _LaneFault(iid, t, err, space), None, _FaultCtx(T, memory), blk, grid, block)
        line, text = code.insts[k.barriers[a]]
        bar = _BarrierAt(line, text)
        if what == 4:   # the interpreter runs such lanes apart, each reading its partners' registers as they are
            other = code.insts[k.barriers[b_]][0]
            raise native.EngineMismatch(
                f"kernel {code.name}: threads of a warp in block {self._bid(blk, grid)} reach two different "
                f"shfl instructions (lines {line} and {other}, thread {self._tid(t, block)}): the native engine "
                f"runs a warp's shfl only when all its running threads are at it; RAWDEV_SIM_ENGINE=interp runs "
                f"this kernel")
        if what == 2:   # threads at two barriers
            other = code.insts[k.barriers[b_]][0]
            self._barrier_error(code, bar, blk, grid, block, c, T,
                                f"threads of the block wait at different barriers: at line {line} and at line "
                                f"{other} (thread {self._tid(t, block)})")
        self._barrier_error(code, bar, blk, grid, block, b_, b_ + c,
                            f"{c} thread(s) exited without reaching it (first: threadIdx {self._tid(d, block)})")

    def _launch_diff(self, k, entry, grid, block, params, dyn, memory, stats):
        """RAWDEV_SIM_ENGINE=diff: the interpreter, then the native engine from the same memory; same bytes or
        EngineMismatch. A fault must happen on both (the interpreter's is raised)."""
        before = native.snapshot(memory)
        ref = None
        try:
            st = self.launch(entry.name, grid, block, params, dyn, memory, max_chunk_threads=CHUNK_THREADS)
        except (KernelFault, BarrierError, DecodeError) as e:
            ref = e
        after = native.snapshot(memory)
        native.restore(memory, before)
        try:
            self._launch_native(k, entry, grid, block, params, memory, stats, dyn)
        except (KernelFault, BarrierError, DecodeError) as e:
            if ref is None:
                raise native.EngineMismatch(f"kernel {entry.name}: the native engine faulted, the interpreter "
                                            f"did not: {e}") from None
            if isinstance(e, DecodeError) or isinstance(ref, DecodeError):   # a warp-wide instruction's misuse
                if str(e) != str(ref):
                    raise native.EngineMismatch(f"kernel {entry.name}: the native engine stopped with {e!r}, the "
                                                f"interpreter with {ref!r}") from None
                raise ref from None
            if e.code_name != ref.code_name:
                raise native.EngineMismatch(f"kernel {entry.name}: the native engine faulted with {e.code_name}, "
                                            f"the interpreter with {ref.code_name}") from None
            raise ref from None
        if ref is not None:
            raise native.EngineMismatch(f"kernel {entry.name}: the interpreter faulted, the native engine did "
                                        f"not: {ref}")
        try:
            native.compare(memory, after, entry.name, st.thread_instructions, stats.thread_instructions)
        except native.EngineMismatch as e:
            # a race? run the threads in reverse order from the same memory: a different end means the result
            # depends on the order of the threads
            forward = native.snapshot(memory)
            native.restore(memory, before)
            self._launch_native(k, entry, grid, block, params, memory, LaunchStats(entry.name, grid, block), dyn,
                                True)
            try:
                native.compare(memory, forward, entry.name, 0, 0)
            except native.EngineMismatch:
                e.race = True
                e.args = (f"{e.args[0]} (the native engine's own threads in reverse order end differently too: "
                          f"they race on these bytes)",)
            nblocks = grid[0] * grid[1] * grid[2]
            if not e.race and nblocks > 1 and native.blocks_overlap(
                    memory, before, lambda b: self._launch_native(
                        k, entry, grid, block, params, memory, LaunchStats(entry.name, grid, block), dyn,
                        blocks=(b, b + 1)), nblocks):
                e.race = True
                e.args = (f"{e.args[0]} (two thread blocks write the same bytes: a race between blocks)",)
            native.restore(memory, forward)
            raise e from None
        return stats

    def _launch_interp(self, code, grid, block, params, dynamic_shared, memory, stats, gaddr, max_chunk_threads,
                       count_banks, sanitize, kernel_stats, T, nblocks):
        bytes_per_lane = code.__dict__.get("_bytes_per_lane")
        if bytes_per_lane is None:
            bytes_per_lane = code._bytes_per_lane = sum(dt.itemsize for dt in code.slot_dtypes) + 8
        cap = max_chunk_threads or CHUNK_THREADS
        lanes = max(T, min(cap, REGISTER_BUDGET // bytes_per_lane))
        bpc = max(1, lanes // T)
        shsize = code.dyn_shared_offset + int(dynamic_shared) if dynamic_shared else code.shared_static
        checked = None
        if sanitize and set(sanitize) - {"memcheck"}:
            # the checkers' context, chosen once per launch; rawdev.sim.ptx.checkers builds on this module and
            # registers itself here when rawdev.sim.ptx is imported
            checked = CHECKED_LAUNCH[0](frozenset(sanitize), T, nblocks, grid, block)
            bpc = checked.blocks_per_chunk(bpc, shsize)
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):
            for b0 in range(0, nblocks, bpc):
                nb = min(bpc, nblocks - b0)
                if checked is None:
                    X = _Ctx(self, code, params, memory, shsize, T, nb, gaddr)
                else:
                    X = checked.context(self, code, params, memory, shsize, T, nb, gaddr, b0)
                X.count_banks = count_banks
                if kernel_stats:
                    counting(X, stats.counts)
                R = self._registers(code, X, b0, grid, block, int(dynamic_shared))
                self._run_chunk(code, X, R, b0, grid, block, stats)
                stats.chunks += 1
                stats.shared_requests += X.bank_requests
                stats.shared_wavefronts += X.bank_wavefronts
        stats.seconds = time.perf_counter() - t0
        return stats

    @staticmethod
    def _registers(code, X, b0, grid, block, dyn):
        """The register file of one chunk: special registers set, the rest zero. Built once per launch shape
        and kept on the kernel's code; every array in it is read-only, so the generated code's writes (which
        rebind R[s], or copy a read-only array before a partial write) never change the kept one."""
        key = (X.n, X.T, b0, grid, block, dyn, X.shstride, X.lsize, X.shsize)
        cache = code.__dict__.get("_register_files")
        if cache is None:
            cache = code._register_files = {}
        R = cache.get(key)
        if R is None:
            R = PtxModule._build_registers(code, X, b0, grid, block, dyn)
            for a in R:
                a.flags.writeable = False
            if len(cache) >= 32:
                cache.clear()
            cache[key] = R
        return list(R)

    @staticmethod
    def _build_registers(code, X, b0, grid, block, dyn):
        n, T = X.n, X.T
        R = [None] * len(code.slot_names)
        lanes = X.all_lanes
        lin = lanes % T
        cta = lanes // T + b0
        bx, by, bz = block
        gx, gy, gz = grid
        vals = {}
        for name, s in code.specials.items():
            if name == "%tid.x":
                v = lin % bx
            elif name == "%tid.y":
                v = (lin // bx) % by
            elif name == "%tid.z":
                v = lin // (bx * by)
            elif name == "%ctaid.x":
                v = cta % gx
            elif name == "%ctaid.y":
                v = (cta // gx) % gy
            elif name == "%ctaid.z":
                v = cta // (gx * gy)
            elif name in ("%ntid.x", "%ntid.y", "%ntid.z"):
                v = np.full(n, block["xyz".index(name[-1])])
            elif name in ("%nctaid.x", "%nctaid.y", "%nctaid.z"):
                v = np.full(n, grid["xyz".index(name[-1])])
            elif name == "%laneid":
                v = lin % 32
            elif name == "%warpid":
                v = lin // 32
            elif name == "%nwarpid":
                v = np.full(n, -(-T // 32))
            elif name.startswith("%lanemask_"):
                ln = (lin % 32).astype(np.int64)
                kind = name[len("%lanemask_"):]
                full = np.int64(0xFFFFFFFF)
                v = {"eq": 1 << ln, "lt": (1 << ln) - 1, "le": (1 << (ln + 1)) - 1,
                     "ge": full & ~((1 << ln) - 1), "gt": full & ~((1 << (ln + 1)) - 1)}[kind]
            elif name == SBASE:
                v = (lanes // T).astype(np.uint64) * np.uint64(X.shstride)
            elif name == LBASE:
                v = lanes.astype(np.uint64) * np.uint64(max(X.lsize, 16))
            elif name == "%dynamic_smem_size":
                v = np.full(n, dyn)
            elif name == "%total_smem_size":
                v = np.full(n, X.shsize)
            else:   # %smid, %nsmid, %gridid, clocks, timers
                v = np.full(n, 1 if name == "%nsmid" else 0)
            vals[s] = v
        zeros = {}
        for s, dt in enumerate(code.slot_dtypes):
            if s in vals:
                R[s] = np.ascontiguousarray(vals[s]).astype(dt)
            else:
                z = zeros.get(dt)
                if z is None:   # one shared read-only zero array per type; copied on first partial write
                    z = zeros[dt] = np.zeros(n, dt)
                    z.flags.writeable = False
                R[s] = z
        return R

    # -- the scheduler
    def _run_chunk(self, code, X, R, b0, grid, block, stats):
        blocks = code.blocks
        n, T, nb = X.n, X.T, X.nb
        pending = {0: None}
        parked = {}
        waiting = np.zeros(nb, bool)
        alive = np.full(nb, T, np.int64)
        ti = 0
        execs = 0
        ks = X.kstats

        def add(b, lanes):
            if lanes is not None and lanes.shape[0] == 0:
                return
            cur = pending.get(b, _MISSING)
            if cur is _MISSING:
                pending[b] = lanes
                return
            merged = np.concatenate([X.all_lanes if cur is None else cur, X.all_lanes if lanes is None else lanes])
            merged.sort(kind="stable")
            pending[b] = None if merged.shape[0] == n else merged

        retired = []   # lanes that exited, counted into `alive` only when a barrier needs the counts

        def settle():
            if retired:
                alive[:] -= np.bincount(np.concatenate(retired) // T, minlength=nb)
                retired.clear()

        def retire(lanes, blk):
            arr = X.all_lanes if lanes is None else lanes
            if not parked:   # no thread waits at a barrier: nothing to check now
                retired.append(arr)
                return
            settle()
            ctas = arr // T
            cnt = np.bincount(ctas, minlength=nb)
            if (waiting & (cnt > 0)).any():
                c = int(np.flatnonzero(waiting & (cnt > 0))[0])
                bar = next(bb for bb, ls in parked.items() if (ls // T == c).any())
                arrived = int(((parked[bar] // T) == c).sum())
                first = int(arr[np.flatnonzero(ctas == c)[0]])
                self._barrier_error(code, blocks[bar], c + b0, grid, block, arrived, int(alive[c]),
                                    f"{int(cnt[c])} thread(s) exited without reaching it "
                                    f"(first: threadIdx {self._tid(first % T, block)})")
            alive[:] -= cnt

        while pending or parked:
            if not pending:
                settle()
                self._release(code, X, parked, pending, waiting, alive, b0, grid, block)
                continue
            b = min(pending)
            lanes = pending.pop(b)
            blk = blocks[b]
            cnt = n if lanes is None else lanes.shape[0]
            if blk.kind == "bar":
                arr = X.all_lanes if lanes is None else lanes
                cur = parked.get(b)
                parked[b] = arr if cur is None else np.sort(np.concatenate([cur, arr]))
                waiting[np.unique(arr // T)] = True
                ti += cnt
                if ks is not None:
                    ks.executed(X, blk, lanes, cnt, False)
                continue
            X.lanes = lanes
            if blk.kind == "warp":
                try:
                    blk.warp(R, X, lanes)
                except _LaneFault as f:
                    self._kernel_fault(code, f, lanes, X, b0, grid, block)
                ti += cnt
                if ks is not None:
                    ks.executed(X, blk, lanes, cnt, False)
                add(b + 1, lanes)
                continue
            try:
                res = blk.full(R, X) if lanes is None else blk.part(R, X, lanes)
            except _LaneFault as f:
                self._kernel_fault(code, f, lanes, X, b0, grid, block)
            ti += cnt * blk.ninst
            execs += 1
            if ks is not None:
                ks.executed(X, blk, lanes, cnt, True)
            term = blk.term
            if term == "fall":
                add(blk.nxt, lanes)
            elif term == "bra":
                add(blk.target, lanes)
            elif term == "exit":
                retire(lanes, blk)
            else:
                p = np.asarray(res)
                if p.ndim == 0:
                    p = np.full(cnt, bool(p))
                other = blk.target if term == "cbra" else None
                k = np.count_nonzero(p)
                if k == cnt:
                    if term == "cbra":
                        add(other, lanes)
                    else:
                        retire(lanes, blk)
                elif k == 0:
                    add(blk.nxt, lanes)
                else:
                    arr = X.all_lanes if lanes is None else lanes
                    taken, rest = arr[p], arr[~p]
                    if term == "cbra":
                        add(other, taken)
                    else:
                        retire(taken, blk)
                    add(blk.nxt, rest)
        stats.thread_instructions += ti
        stats.block_executions += execs

    def _release(self, code, X, parked, pending, waiting, alive, b0, grid, block):
        T, nb = X.T, X.nb
        counts = {b: np.bincount(ls // T, minlength=nb) for b, ls in parked.items()}
        bars = list(parked)
        if len(bars) > 1:
            present = np.array([counts[b] > 0 for b in bars])
            multi = present.sum(axis=0) > 1
            if multi.any():
                c = int(np.flatnonzero(multi)[0])
                at = [(code.blocks[b].line, int(counts[b][c])) for b in bars if counts[b][c]]
                b = bars[0]
                self._barrier_error(code, code.blocks[b], c + b0, grid, block, int(counts[b][c]), int(alive[c]),
                                    "threads of the block wait at different barriers: " +
                                    ", ".join(f"{k} at line {ln}" for ln, k in at))
        for b in bars:
            c_ = counts[b]
            bad = (c_ > 0) & (c_ != alive)
            if bad.any():
                c = int(np.flatnonzero(bad)[0])
                self._barrier_error(code, code.blocks[b], c + b0, grid, block, int(c_[c]), int(alive[c]),
                                    "the other threads of the block never arrived")
        for b in bars:
            ls = parked.pop(b)
            nxt = code.blocks[b].nxt
            cur = pending.get(nxt)
            if cur is not None or nxt in pending:
                ls = np.sort(np.concatenate([X.all_lanes if cur is None else cur, ls]))
            pending[nxt] = None if ls.shape[0] == X.n else ls
        waiting[:] = False
        X.barrier_passed()

    @staticmethod
    def _tid(lin, block):
        bx, by, _ = block
        return (lin % bx, (lin // bx) % by, lin // (bx * by))

    @staticmethod
    def _bid(bl, grid):
        gx, gy, _ = grid
        return (bl % gx, (bl // gx) % gy, bl // (gx * gy))

    def _barrier_error(self, code, blk, cta, grid, block, arrived, expected, why):
        bid = self._bid(cta, grid)
        raise BarrierError(
            f"divergent barrier in kernel {code.name}: `{blk.text}` at PTX line {blk.line}: in block "
            f"({bid[0]},{bid[1]},{bid[2]}) only {arrived} of {expected} live threads arrived; {why}",
            kernel=code.name, line=blk.line, block=bid, arrived=arrived, expected=expected)

    def _kernel_fault(self, code, f, lanes, X, b0, grid, block):
        lane = int(f.pos if lanes is None else lanes[f.pos])
        tid = self._tid(lane % X.T, block)
        bid = self._bid(lane // X.T + b0, grid)
        line, text = code.insts[f.iid]
        src = code.source_line(f.iid)   # the CUDA source line, when the PTX has -lineinfo's .loc directives
        where = (f"in kernel {code.name}, thread ({tid[0]},{tid[1]},{tid[2]}) of block ({bid[0]},{bid[1]},{bid[2]}), "
                 f"at PTX line {line} `{text}`" + (f" (CUDA source line {src})" if src else ""))
        if f.space == "assert":
            a = f.err
            nfail = max(a.failed, len(a.positions))
            lines = []
            for pos in a.positions[:ASSERT_LINES]:
                ln = int(pos if lanes is None else lanes[pos])
                t, b = self._tid(ln % X.T, block), self._bid(ln // X.T + b0, grid)
                lines.append(f"{a.file}:{a.line}: {a.function}: block: [{b[0]},{b[1]},{b[2]}], "
                             f"thread: [{t[0]},{t[1]},{t[2]}] Assertion `{a.message}` failed.")
            # what the driver prints to stderr, a line per failing thread, when the host next synchronizes (its
            # buffer is bounded too: the simulator prints the first ASSERT_LINES and counts the rest)
            rest = [f"[rawdev.sim] ... {nfail - len(lines)} more thread(s) failed the assertion"] \
                if nfail > len(lines) else []
            sys.stderr.write("".join(s + "\n" for s in lines + rest))
            more = f" ({nfail - 1} more thread(s) failed it too)" if nfail > 1 else ""
            raise KernelFault(f"device-side assert {where}: {lines[0]}{more}", kernel=code.name, thread=tid,
                              block=bid, address=None, line=line, ptx=text, nearest=None,
                              code_name="CUDA_ERROR_ASSERT", space="assert", assertion=a.message) from None
        if f.space in SANITIZER_SPACES:
            raise SanitizerFinding(f"{f.space}: {f.err.kind} {where}: {f.err.detail}", kernel=code.name,
                                   thread=tid, block=bid, address=f.err.address, line=line, ptx=text,
                                   nearest=f.err.nearest, code_name="CUDA_ERROR_LAUNCH_FAILED", lane_index=lane,
                                   space=f.space, source=src,
                                   global_address=f.err.global_address) from None
        if f.err is None:
            raise KernelFault(f"trap {where}", kernel=code.name, thread=tid, block=bid, address=None, line=line,
                              ptx=text, nearest=None, code_name="CUDA_ERROR_LAUNCH_FAILED", space="trap") from None
        err = f.err
        misaligned = isinstance(err, SimMisalignedAddress)
        kind = "misaligned address" if misaligned else "illegal address"
        if f.space == "global":
            near = X.mem.nearest(err.address)
            detail = err.message[len("illegal address: "):] if err.message.startswith("illegal address: ") \
                else err.message
        else:
            near = None
            detail = f"{f.space} memory: {err.message}"
        raise KernelFault(f"{kind} {where}: {detail}", kernel=code.name, thread=tid, block=bid,
                          address=err.address, line=line, ptx=text, nearest=near,
                          code_name="CUDA_ERROR_MISALIGNED_ADDRESS" if misaligned else "CUDA_ERROR_ILLEGAL_ADDRESS",
                          lane_index=lane, space=f.space) from None


__all__ = ["PtxModule", "PtxError", "KernelFault", "SanitizerFinding", "BarrierError", "Entry", "LaunchStats"]
