"""Simulated device memory: an address space with an allocation table and checked vector access.

Used by the sim driver (cuMemAlloc*/cuMemcpy*/cuMemset*) and by the PTX interpreter (every global
load, store and atomic of a kernel goes through :meth:`DeviceMemory.load` / ``store`` / ``atomic``).

* Addresses start at ``0x1_0000_0000_0000`` (2**48: never a valid host address on x86-64).
* Every allocation (*block*) is backed by its own zeroed numpy ``uint8`` array; the block table is
  kept sorted by base address (``bisect`` for scalar lookups, ``np.searchsorted`` for vectors of lane
  addresses). Only blocks are readable: any byte outside every live block faults.
* Two ways to make a block. :meth:`DeviceMemory.alloc` (module globals, tests, tools) takes fresh
  address space from a bump pointer, never reused, with a guard gap after it; it charges its size
  (rounded up to 256 bytes) against the capacity. The pool's way mirrors the driver's virtual memory
  calls: :meth:`~DeviceMemory.reserve_address` takes address space only (cuMemAddressReserve),
  :meth:`~DeviceMemory.map` / :meth:`~DeviceMemory.unmap` charge and give back a range inside it
  (cuMemCreate + cuMemMap; a mapped range is not readable by itself), and
  :meth:`~DeviceMemory.alloc_at` registers a block at a chosen address inside mapped ranges (no charge
  of its own). :class:`SegmentAllocator` is that pool layout: segments, free ranges, best fit.
* A freed range is remembered (bounded) so that an access to it is reported as a use after free
  ("inside the freed … allocation") until a new block is placed over it.
* Host-side misuse (``read``/``write``/``view``/``free`` with a bad pointer or range) raises
  :class:`SimInvalidValue` (the driver answers ``CUDA_ERROR_INVALID_VALUE``); a kernel touching memory
  outside every allocation raises :class:`SimIllegalAddress` (``CUDA_ERROR_ILLEGAL_ADDRESS``) or its
  subclass :class:`SimMisalignedAddress` (``CUDA_ERROR_MISALIGNED_ADDRESS``).
"""

from __future__ import annotations

import bisect
import threading

import numpy as np

BASE_ADDRESS = 0x1_0000_0000_0000
DEFAULT_ALIGN = 256
_GUARD = 256  # bytes of unmapped address space left after every allocation
_FREED_KEEP = 4096  # how many freed ranges are remembered for use-after-free messages


class SimMemoryError(Exception):
    """Base class of the sim memory errors."""


class SimOutOfMemory(SimMemoryError):
    """An allocation would exceed the configured capacity (CUDA_ERROR_OUT_OF_MEMORY)."""

    code_name = "CUDA_ERROR_OUT_OF_MEMORY"

    def __init__(self, requested, used, capacity):
        self.requested, self.used, self.capacity = requested, used, capacity
        super().__init__(
            f"out of simulated device memory: asked for {requested} bytes with {used} of "
            f"{capacity} bytes in use ({capacity - used} free)")


class SimInvalidValue(SimMemoryError, ValueError):
    """A host-side call passed a pointer or range that is not valid (CUDA_ERROR_INVALID_VALUE)."""

    code_name = "CUDA_ERROR_INVALID_VALUE"


class SimIllegalAddress(SimMemoryError):
    """A kernel lane accessed memory outside every allocation (CUDA_ERROR_ILLEGAL_ADDRESS).

    ``lane_index`` is the index of the offending lane in the address vector that was passed
    (the interpreter maps it back to a thread), ``address`` the offending address.
    """

    code_name = "CUDA_ERROR_ILLEGAL_ADDRESS"

    def __init__(self, lane_index, address, message):
        self.lane_index = None if lane_index is None else int(lane_index)
        self.address = int(address)
        self.message = message
        super().__init__(message)


class SimMisalignedAddress(SimIllegalAddress):
    """A kernel lane accessed an address that is not a multiple of the access size
    (CUDA_ERROR_MISALIGNED_ADDRESS)."""

    code_name = "CUDA_ERROR_MISALIGNED_ADDRESS"


def _fmt_size(n):
    return f"{n}-byte"


class DeviceMemory:
    """The simulated GPU's global memory."""

    def __init__(self, capacity_bytes=4 << 30, base=BASE_ADDRESS, fresh_fill=None):
        self.capacity = int(capacity_bytes)
        # byte every block placed with alloc_at (pool allocations) starts filled with (None: zeros). A GPU
        # hands out whatever its pool held before, so the simulated driver poisons them: code that reads
        # memory it never wrote shows NaN (0xFF bytes) on the simulator instead of a lucky zero.
        self.fresh_fill = fresh_fill
        self.used = 0
        self._next = int(base)
        self._bases: list[int] = []          # sorted
        self._allocs: dict[int, tuple[int, np.ndarray, int]] = {}  # base -> (size, buf, charged)
        self._freed_bases: list[int] = []    # sorted, bounded
        self._freed: dict[int, int] = {}     # base -> size
        self._np_tables = None               # (bases uint64, ends uint64) cache for searchsorted
        self._rows = None                    # (rows [n, 3] uint64: base, end, host pointer; buffers): native_rows
        self._va: dict[int, int] = {}        # base -> size: address space taken by reserve_address
        self._va_bases: list[int] = []       # sorted
        self._maps: dict[int, int] = {}      # base -> size: mapped ranges (charged; not readable themselves)
        self._map_bases: list[int] = []      # sorted
        self._lock = threading.RLock()
        # initcheck: base -> bool per byte ("written since allocated") for pool blocks allocated while it is on;
        # None when off (no cost). A block without an entry counts as written (it predates the checker).
        self.shadow: dict | None = None

    # ------------------------------------------------------------------ allocation
    def alloc(self, nbytes, align=DEFAULT_ALIGN) -> int:
        nbytes = int(nbytes)
        align = int(align)
        if nbytes <= 0:
            raise SimInvalidValue(f"cannot allocate {nbytes} bytes")
        if align <= 0 or align & (align - 1):
            raise SimInvalidValue(f"alignment {align} is not a power of two")
        charged = -(-nbytes // DEFAULT_ALIGN) * DEFAULT_ALIGN  # the device's allocation granularity
        with self._lock:
            if self.used + charged > self.capacity:
                raise SimOutOfMemory(nbytes, self.used, self.capacity)
            base = -(-self._next // align) * align
            # round the backing array up to 16 bytes so it can be viewed as any scalar dtype
            buf = np.zeros(-(-nbytes // 16) * 16, dtype=np.uint8)   # module globals: zero, as CUDA's
            self._allocs[base] = (nbytes, buf, charged)
            self._bases.append(base)  # bump pointer: always the largest base
            self._next = base + nbytes + _GUARD
            self.used += charged
            self._table_insert(len(self._bases) - 1, base)
            return base

    def free(self, addr):
        """Free a block (from :meth:`alloc` or :meth:`alloc_at`)."""
        addr = int(addr)
        with self._lock:
            entry = self._allocs.pop(addr, None)
            if entry is None:
                raise SimInvalidValue(f"free of 0x{addr:x}, which is not the start of an allocation: "
                                      + self.nearest(addr))
            size, _buf, charged = entry
            if self.shadow is not None:
                self.shadow.pop(addr, None)
            i = bisect.bisect_left(self._bases, addr)
            del self._bases[i]
            self.used -= charged
            self._table_delete(i)
            self._forget_freed(addr, addr + size)
            bisect.insort(self._freed_bases, addr)
            self._freed[addr] = size             # dict order = age: the oldest record goes first
            if len(self._freed) > _FREED_KEEP:
                old = next(iter(self._freed))
                del self._freed[old]
                del self._freed_bases[bisect.bisect_left(self._freed_bases, old)]

    def _forget_freed(self, lo, hi):
        """Drop the freed-range records overlapping [lo, hi) (a new block lives there now)."""
        fb = self._freed_bases
        k = bisect.bisect_right(fb, lo) - 1
        if k < 0 or fb[k] + self._freed[fb[k]] <= lo:
            k += 1
        while k < len(fb) and fb[k] < hi:
            del self._freed[fb.pop(k)]

    # ------------------------------------------------------------------ address space and mappings (pools)
    def reserve_address(self, nbytes, align=DEFAULT_ALIGN) -> int:
        """Take ``nbytes`` of address space (like cuMemAddressReserve): nothing is charged or readable
        until :meth:`map` maps a range of it. Never given back (address space is plentiful)."""
        nbytes, align = int(nbytes), int(align)
        if nbytes <= 0 or align <= 0 or align & (align - 1):
            raise SimInvalidValue(f"cannot reserve {nbytes} bytes of address space aligned to {align}")
        with self._lock:
            base = -(-self._next // align) * align
            self._next = base + nbytes + _GUARD
            self._va[base] = nbytes
            self._va_bases.append(base)      # bump pointer: always the largest base
            return base

    def map(self, addr, nbytes):
        """Map ``nbytes`` at ``addr`` inside one :meth:`reserve_address` range, charging them against the
        capacity (cuMemCreate + cuMemMap). Raises :class:`SimOutOfMemory` when they do not fit,
        :class:`SimInvalidValue` when the range is outside reserved address space or already mapped."""
        addr, nbytes = int(addr), int(nbytes)
        with self._lock:
            i = bisect.bisect_right(self._va_bases, addr) - 1
            if nbytes <= 0 or i < 0 or addr + nbytes > self._va_bases[i] + self._va[self._va_bases[i]]:
                raise SimInvalidValue(f"map of {nbytes} bytes at 0x{addr:x}: not inside reserved address space")
            j = bisect.bisect_right(self._map_bases, addr)
            if (j > 0 and self._map_bases[j - 1] + self._maps[self._map_bases[j - 1]] > addr) or \
                    (j < len(self._map_bases) and self._map_bases[j] < addr + nbytes):
                raise SimInvalidValue(f"map of {nbytes} bytes at 0x{addr:x}: overlaps a mapped range")
            if self.used + nbytes > self.capacity:
                raise SimOutOfMemory(nbytes, self.used, self.capacity)
            self._maps[addr] = nbytes
            self._map_bases.insert(j, addr)
            self.used += nbytes

    def unmap(self, addr):
        """Give back a range :meth:`map` mapped at ``addr``; no live block may overlap it."""
        addr = int(addr)
        with self._lock:
            size = self._maps.get(addr)
            if size is None:
                raise SimInvalidValue(f"unmap of 0x{addr:x}, which is not the start of a mapped range")
            i = bisect.bisect_left(self._bases, addr)
            if (i < len(self._bases) and self._bases[i] < addr + size) or \
                    (i > 0 and self._bases[i - 1] + self._allocs[self._bases[i - 1]][0] > addr):
                raise SimInvalidValue(f"unmap of the {size}-byte range at 0x{addr:x}: a live allocation is inside it")
            del self._maps[addr]
            del self._map_bases[bisect.bisect_left(self._map_bases, addr)]
            self.used -= size

    def _fresh(self, nbytes):
        size = -(-nbytes // 16) * 16
        if self.fresh_fill is None:
            return np.zeros(size, dtype=np.uint8)
        return np.full(size, self.fresh_fill, dtype=np.uint8)

    def alloc_at(self, addr, nbytes) -> int:
        """Register an ``nbytes`` block at ``addr``: the range must lie in mapped memory (VA-adjacent mapped
        ranges count as one) and overlap no live block. Charges nothing (the mapping is charged)."""
        addr, nbytes = int(addr), int(nbytes)
        if nbytes <= 0:
            raise SimInvalidValue(f"cannot allocate {nbytes} bytes")
        end = addr + nbytes
        with self._lock:
            mb, at = self._map_bases, addr
            i = bisect.bisect_right(mb, addr) - 1
            while True:
                if i < 0 or i >= len(mb) or mb[i] > at or mb[i] + self._maps[mb[i]] <= at:
                    raise SimInvalidValue(f"alloc_at: {nbytes} bytes at 0x{addr:x} are not all mapped")
                at = mb[i] + self._maps[mb[i]]
                if at >= end:
                    break
                i += 1
            j = bisect.bisect_right(self._bases, addr)
            if (j > 0 and self._bases[j - 1] + self._allocs[self._bases[j - 1]][0] > addr) or \
                    (j < len(self._bases) and self._bases[j] < end):
                raise SimInvalidValue(f"alloc_at: {nbytes} bytes at 0x{addr:x} overlap a live allocation: "
                                      + self.nearest(addr, nbytes))
            buf = self._fresh(nbytes)
            self._allocs[addr] = (nbytes, buf, 0)
            if self.shadow is not None:
                self.shadow[addr] = np.zeros(nbytes, bool)
            self._bases.insert(j, addr)
            self._table_insert(j, addr)
            self._forget_freed(addr, end)
            return addr

    def resize(self, addr, nbytes, fresh=False):
        """Give the block at ``addr`` a new size (the caller owns the bytes up to the new end): its bytes are kept
        (up to the shorter size), or, with ``fresh``, it starts over as a new block (garbage fill)."""
        addr, nbytes = int(addr), int(nbytes)
        with self._lock:
            size, buf, charged = self._allocs[addr]
            new = self._fresh(nbytes)
            if not fresh:
                k = min(len(buf), len(new))
                new[:k] = buf[:k]
            self._allocs[addr] = (nbytes, new, charged)
            self._table_replace(bisect.bisect_left(self._bases, addr), addr)
            if self.shadow is not None:
                old = self.shadow.pop(addr, None)
                if fresh or old is not None:
                    sh = self.shadow[addr] = np.zeros(nbytes, bool)
                    if old is not None and not fresh:
                        k = min(old.shape[0], nbytes)
                        sh[:k] = old[:k]

    def mappings(self):
        """[(base, size)] of the mapped ranges, sorted by address."""
        return [(b, self._maps[b]) for b in self._map_bases]

    @property
    def free_bytes(self):
        return self.capacity - self.used

    def allocations(self):
        """[(base, size)] sorted by address."""
        return [(b, self._allocs[b][0]) for b in self._bases]

    # ------------------------------------------------------------------ lookup
    def find(self, addr):
        """(base, size) of the allocation containing ``addr``, or None."""
        addr = int(addr)
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0:
            b = self._bases[i]
            size = self._allocs[b][0]
            if addr < b + size:
                return b, size
        return None

    def nearest(self, addr, nbytes=1) -> str:
        """Describe where ``addr`` lies relative to the closest allocation."""
        addr = int(addr)
        if addr == 0:
            return "0x0 is a null pointer"
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0:
            b = self._bases[i]
            size = self._allocs[b][0]
            if addr < b + size:
                if addr + nbytes > b + size:
                    return (f"0x{addr:x} ({nbytes}-byte access) runs {addr + nbytes - (b + size)} bytes past the end "
                            f"of the {_fmt_size(size)} allocation at 0x{b:x}")
                return f"0x{addr:x} is {addr - b} bytes into the {_fmt_size(size)} allocation at 0x{b:x}"
        # freed?
        j = bisect.bisect_right(self._freed_bases, addr) - 1
        if j >= 0:
            fb = self._freed_bases[j]
            fsize = self._freed[fb]
            if addr < fb + fsize:
                return (f"0x{addr:x} is {addr - fb} bytes into the freed {_fmt_size(fsize)} allocation "
                        f"at 0x{fb:x} (use after free)")
        cands = []
        if i >= 0:
            b = self._bases[i]
            size = self._allocs[b][0]
            cands.append((addr - (b + size), f"0x{addr:x} is {addr - (b + size)} bytes past the end of the "
                          f"{_fmt_size(size)} allocation at 0x{b:x}"))
        if i + 1 < len(self._bases):
            b = self._bases[i + 1]
            size = self._allocs[b][0]
            cands.append((b - addr, f"0x{addr:x} is {b - addr} bytes before the {_fmt_size(size)} "
                          f"allocation at 0x{b:x}"))
        if not cands:
            return f"0x{addr:x} is not near any allocation (no live allocations)"
        return min(cands)[1]

    def _describe_oob(self, addr, nbytes):
        return f"illegal address: {nbytes}-byte access at 0x{int(addr):x}: " + self.nearest(addr, nbytes)

    def _host_range(self, addr, nbytes, what):
        addr, nbytes = int(addr), int(nbytes)
        if nbytes < 0:
            raise SimInvalidValue(f"{what}: negative size {nbytes}")
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0:
            b = self._bases[i]
            size, buf, _ = self._allocs[b]
            if addr + nbytes <= b + size:
                off = addr - b
                return buf, off
        raise SimInvalidValue(f"{what}: {nbytes} bytes at 0x{addr:x} is not inside one allocation: "
                              + self.nearest(addr, max(nbytes, 1)))

    # ------------------------------------------------------------------ host access
    def read(self, addr, nbytes) -> bytes:
        buf, off = self._host_range(addr, nbytes, "read")
        return buf[off:off + int(nbytes)].tobytes()

    def write(self, addr, data):
        mv = memoryview(data).cast("B")
        n = mv.nbytes
        buf, off = self._host_range(addr, n, "write")
        buf[off:off + n] = np.frombuffer(mv, dtype=np.uint8)
        if self.shadow is not None:
            self._mark_range(addr, n)

    def view(self, addr, nbytes) -> np.ndarray:
        """A writable uint8 numpy view of ``nbytes`` at ``addr`` (checked). For memcpy/memset."""
        buf, off = self._host_range(addr, nbytes, "view")
        return buf[off:off + int(nbytes)]

    def fill(self, addr, value, nbytes_or_count, dtype=np.uint8):
        """memset: ``count`` elements of ``dtype`` set to ``value`` starting at addr."""
        dt = np.dtype(dtype)
        n = int(nbytes_or_count) * dt.itemsize
        v = self.view(addr, n)
        if self.shadow is not None:
            self._mark_range(addr, n)
        if dt.itemsize == 1:
            v[:] = np.array(value).astype(dt).view(np.uint8)
        else:
            v.view(dt)[:] = np.array(value).astype(dt)

    # ------------------------------------------------------------------ initcheck shadow
    def track_writes(self, on):
        """initcheck on: pool blocks allocated from now on start unwritten and every write marks its bytes;
        off: forget the shadow (no cost)."""
        with self._lock:
            if not on:
                self.shadow = None
            elif self.shadow is None:
                self.shadow = {}

    def _mark_range(self, addr, n):
        i = bisect.bisect_right(self._bases, addr) - 1
        sh = self.shadow.get(self._bases[i]) if i >= 0 else None
        if sh is not None:
            off = addr - self._bases[i]
            sh[off:off + n] = True

    def _shadow_parts(self, addrs):
        """[(lane selector, shadow array, byte offsets)] for the lanes whose allocation has a shadow."""
        bases, _ = self._tables()
        idx = np.searchsorted(bases, addrs, side="right").astype(np.int64) - 1
        out = []
        for k in np.unique(idx):
            if k < 0:
                continue
            base = self._bases[int(k)]
            sh = self.shadow.get(base)
            if sh is not None:
                sel = np.flatnonzero(idx == k)
                out.append((sel, sh, (addrs[sel] - np.uint64(base)).astype(np.int64)))
        return out

    def unwritten(self, addrs, width):
        """Per lane: is any of the ``width`` bytes at ``addrs`` (checked in bounds) still unwritten?"""
        addrs = np.asarray(addrs, np.uint64).reshape(-1)
        out = np.zeros(addrs.shape[0], bool)
        if not self.shadow or not addrs.shape[0]:
            return out
        span = np.arange(width, dtype=np.int64)
        for sel, sh, off in self._shadow_parts(addrs):
            out[sel] = ~sh[off[:, None] + span].all(axis=1)
        return out

    def mark_written(self, addrs, width):
        """A kernel wrote ``width`` bytes at each of ``addrs``."""
        addrs = np.asarray(addrs, np.uint64).reshape(-1)
        if not self.shadow or not addrs.shape[0]:
            return
        span = np.arange(width, dtype=np.int64)
        for _, sh, off in self._shadow_parts(addrs):
            sh[(off[:, None] + span).reshape(-1)] = True

    # ------------------------------------------------------------------ kernel (vector) access
    def _tables(self):
        t = self._np_tables
        if t is None:
            bases = np.array(self._bases, dtype=np.uint64)
            ends = np.array([b + self._allocs[b][0] for b in self._bases], dtype=np.uint64)
            t = self._np_tables = (bases, ends)
        return t

    def native_rows(self):
        """(rows, count, buffers, address of rows) of the live allocations in address order: rows[i] = (base, end,
        host pointer of its bytes), the buffers those pointers point into (held by whoever runs compiled code on
        them, so that a free by another thread mid-kernel cannot release them). The arrays are replaced, never
        changed, when an allocation comes or goes: a caller may keep the ones it got."""
        with self._lock:
            r = self._rows
            if r is None:
                bufs = [self._allocs[b][1] for b in self._bases]
                rows = np.array([(b, b + self._allocs[b][0], buf.ctypes.data) for b, buf in zip(self._bases, bufs)],
                                np.uint64).reshape(-1, 3)
                r = self._rows = (rows, len(bufs), bufs, rows.ctypes.data)
            return r

    # Each allocation, free or resize updates the cached tables by one row (new arrays: copies of n rows are
    # memcpy-cheap, where rebuilding them from the block dict costs ~0.5 ms per launch with hundreds of blocks;
    # slices and concatenate, ~2 us, not np.insert/np.delete, ~4-11 us).
    def _table_insert(self, i, base):
        size, buf, _ = self._allocs[base]
        t = self._np_tables
        if t is not None:
            b, e = t
            self._np_tables = (np.concatenate((b[:i], np.array([base], np.uint64), b[i:])),
                               np.concatenate((e[:i], np.array([base + size], np.uint64), e[i:])))
        r = self._rows
        if r is not None:
            rows = np.concatenate((r[0][:i], np.array([[base, base + size, buf.ctypes.data]], np.uint64), r[0][i:]))
            bufs = list(r[2])
            bufs.insert(i, buf)
            self._rows = (rows, len(bufs), bufs, rows.ctypes.data)

    def _table_delete(self, i):
        t = self._np_tables
        if t is not None:
            self._np_tables = (np.concatenate((t[0][:i], t[0][i + 1:])), np.concatenate((t[1][:i], t[1][i + 1:])))
        r = self._rows
        if r is not None:
            bufs = list(r[2])
            del bufs[i]
            rows = np.concatenate((r[0][:i], r[0][i + 1:]))
            self._rows = (rows, len(bufs), bufs, rows.ctypes.data)

    def _table_replace(self, i, base):
        """Row i's block got a new size or buffer (resize)."""
        size, buf, _ = self._allocs[base]
        t = self._np_tables
        if t is not None:
            e = t[1].copy()
            e[i] = base + size
            self._np_tables = (t[0], e)
        r = self._rows
        if r is not None:
            rows = r[0].copy()
            rows[i] = (base, base + size, buf.ctypes.data)
            bufs = list(r[2])
            bufs[i] = buf
            self._rows = (rows, len(bufs), bufs, rows.ctypes.data)

    def _raise_lane(self, addrs, lane, itemsize):
        a = int(addrs[lane])
        if a % itemsize:
            raise SimMisalignedAddress(lane, a, f"misaligned address: {itemsize}-byte access at 0x{a:x} "
                                       f"(not a multiple of {itemsize}): " + self.nearest(a, itemsize))
        raise SimIllegalAddress(lane, a, self._describe_oob(a, itemsize))

    def _check_misaligned(self, addrs, itemsize):
        if itemsize > 1:
            bad = (addrs & np.uint64(itemsize - 1)) != 0
            if bad.any():
                self._raise_lane(addrs, int(np.argmax(bad)), itemsize)

    def _resolve(self, addrs, itemsize):
        """Return ``[(lane_selector or None, view_as_dtype_source_buf, element_indices)]``.

        Single allocation fast path: one entry with selector None.
        """
        n = addrs.shape[0]
        if n == 0:
            return []
        lo = int(addrs.min())
        hi = int(addrs.max())
        i = bisect.bisect_right(self._bases, lo) - 1
        if i >= 0:
            b = self._bases[i]
            size, buf, _ = self._allocs[b]
            if hi + itemsize <= b + size:
                self._check_misaligned(addrs, itemsize)
                off = addrs - np.uint64(b)
                return [(None, buf, off)]
        # slow path: several allocations (or out of bounds)
        bases, ends = self._tables()
        idx = np.searchsorted(bases, addrs, side="right").astype(np.int64) - 1
        ok = idx >= 0
        safe = np.where(ok, idx, 0)
        if len(bases):
            ok &= (addrs + np.uint64(itemsize)) <= ends[safe]
        else:
            ok[:] = False
        if not ok.all():
            bad = np.flatnonzero(~ok)
            # report a misaligned lane first if the first bad lane is misaligned
            self._raise_lane(addrs, int(bad[0]), itemsize)
        self._check_misaligned(addrs, itemsize)
        out = []
        for k in np.unique(safe):
            sel = np.flatnonzero(safe == k)
            b = self._bases[int(k)]
            buf = self._allocs[b][1]
            out.append((sel, buf, addrs[sel] - np.uint64(b)))
        return out

    def load(self, addrs, dtype) -> np.ndarray:
        """Gather one ``dtype`` value per lane from ``addrs`` (uint64 byte addresses)."""
        dt = np.dtype(dtype)
        addrs = np.asarray(addrs, dtype=np.uint64).reshape(-1)
        isz = dt.itemsize
        shift = isz.bit_length() - 1
        parts = self._resolve(addrs, isz)
        if len(parts) == 1 and parts[0][0] is None:
            _, buf, off = parts[0]
            return buf.view(dt)[off >> np.uint64(shift)]
        out = np.empty(addrs.shape[0], dtype=dt)
        for sel, buf, off in parts:
            out[sel] = buf.view(dt)[off >> np.uint64(shift)]
        return out

    def store(self, addrs, values, dtype):
        """Scatter one ``dtype`` value per lane. With duplicate addresses the highest lane wins."""
        dt = np.dtype(dtype)
        addrs = np.asarray(addrs, dtype=np.uint64).reshape(-1)
        values = np.asarray(values)
        if values.dtype != dt:
            values = values.astype(dt)
        values = np.broadcast_to(values, addrs.shape)
        isz = dt.itemsize
        shift = np.uint64(isz.bit_length() - 1)
        for sel, buf, off in self._resolve(addrs, isz):
            if sel is None:
                buf.view(dt)[off >> shift] = values
            else:
                buf.view(dt)[off >> shift] = values[sel]

    _UFUNCS: dict = {}  # set below

    def atomic(self, op, addrs, values, dtype, compare=None, return_old=True):
        """Atomic read-modify-write, one per lane, applied in lane order.

        ``op``: add, min, max, and, or, xor, exch, cas (``compare`` = the value to compare with,
        ``values`` = the value stored where equal), inc, dec (CUDA's wrapping atomicInc/atomicDec,
        ``values`` = the limit). Returns the old value each lane saw (lane order = thread order: when
        several lanes hit the same address, lane k sees the result of lanes < k). With
        ``return_old=False`` returns None and uses ``ufunc.at`` where possible.
        """
        dt = np.dtype(dtype)
        addrs = np.asarray(addrs, dtype=np.uint64).reshape(-1)
        n = addrs.shape[0]
        values = np.broadcast_to(np.asarray(values).astype(dt, copy=False), (n,))
        if compare is not None:
            compare = np.broadcast_to(np.asarray(compare).astype(dt, copy=False), (n,))
        isz = dt.itemsize
        shift = np.uint64(isz.bit_length() - 1)
        old_all = np.empty(n, dtype=dt) if return_old else None
        uf = _UFUNCS.get(op)
        if op not in _UFUNCS and op not in ("exch", "cas", "inc", "dec"):
            raise ValueError(f"unknown atomic op {op!r}")
        if op == "cas" and compare is None:
            raise ValueError("atomic cas needs compare=")
        for sel, buf, off in self._resolve(addrs, isz):
            view = buf.view(dt)
            eidx = (off >> shift).astype(np.intp)
            v = values if sel is None else values[sel]
            c = None if compare is None else (compare if sel is None else compare[sel])
            if not return_old and uf is not None:
                uf.at(view, eidx, v)
                continue
            old = _rmw(op, uf, view, eidx, v, c)
            if return_old:
                if sel is None:
                    old_all[:] = old
                else:
                    old_all[sel] = old
        return old_all


class SegmentAllocator:
    """The layout of a stream-ordered memory pool: blocks placed inside segments mapped from a
    :class:`DeviceMemory`, like the driver's cuMemPoolCreate pools.

    * A *segment* is a mapped range, ``granule``-aligned, its size a multiple of ``granule``, inside
      address windows of ``window`` bytes this allocator reserves. ``reserved`` = sum of segment sizes.
    * Free space = the segments minus the blocks' footprints (size rounded up to ``align``), kept as
      maximal free ranges. Ranges of VA-adjacent segments join, so a block may straddle segments.
    * Placement is **best fit**: the smallest free range that holds the footprint (the lowest address
      among equal sizes); the block goes at the start of that range. A freed footprint becomes free
      again at once (the caller decides *when* to free: the driver does it when the stream gets there).
    * When nothing fits, ``alloc(grow=True)`` maps the fewest bytes that make a fit: a new segment right
      after a segment whose free tail it extends (when that address space is unmapped and this maps fewer
      bytes), else a new segment of ``ceil(footprint, granule)`` bytes at the lowest address of the windows
      that leaves an unmapped granule on both sides (so the block starts at the new segment's base: an
      allocation larger than a granule gets a segment of its own size). Mapping can raise
      :class:`SimOutOfMemory`.
    * :meth:`release` unmaps segments that no block overlaps (largest first), never below ``keep`` bytes.
    """

    def __init__(self, mem, granule=2 << 20, align=DEFAULT_ALIGN, window=64 << 30):
        self.mem, self.granule, self.align = mem, int(granule), int(align)
        self.window = max(int(window), self.granule)
        self.windows: list[tuple[int, int]] = []   # [(lo, hi)] address space reserved for this pool
        self.reserved = 0
        self._segs: dict[int, list] = {}           # base -> [size, number of blocks overlapping it]
        self._seg_bases: list[int] = []            # sorted
        self._seg_ends: dict[int, int] = {}        # end -> base
        self.blocks: dict[int, int] = {}           # addr -> end of its footprint
        self._fs: dict[int, int] = {}              # free ranges: start -> end
        self._fe: dict[int, int] = {}              # end -> start
        self._starts: list[int] = []               # sorted starts
        self._by_size: list[tuple[int, int]] = []  # sorted (size, start)

    # ------------------------------------------------------------------ free ranges
    def _insert_free(self, s, e):
        self._fs[s], self._fe[e] = e, s
        bisect.insort(self._starts, s)
        bisect.insort(self._by_size, (e - s, s))

    def _remove_free(self, s):
        e = self._fs.pop(s)
        del self._fe[e]
        del self._starts[bisect.bisect_left(self._starts, s)]
        del self._by_size[bisect.bisect_left(self._by_size, (e - s, s))]
        return e

    def _add_free(self, s, e):
        """Make [s, e) free, joining the free ranges it touches."""
        if s in self._fe:
            s2 = self._fe[s]
            self._remove_free(s2)
            s = s2
        if e in self._fs:
            e = self._remove_free(e)
        self._insert_free(s, e)

    def _segs_over(self, lo, hi):
        sb = self._seg_bases
        i = max(bisect.bisect_right(sb, lo) - 1, 0)
        while i < len(sb) and sb[i] < hi:
            if sb[i] + self._segs[sb[i]][0] > lo:
                yield sb[i]
            i += 1

    # ------------------------------------------------------------------ segments
    def _va_free(self, addr, n):
        """Is [addr, addr+n) inside one of the windows and unmapped?"""
        if not any(lo <= addr and addr + n <= hi for lo, hi in self.windows):
            return False
        i = bisect.bisect_left(self._seg_bases, addr)
        return i == len(self._seg_bases) or self._seg_bases[i] >= addr + n

    def _lowest_gap(self, n):
        """The lowest address of the windows where a new ``n``-byte segment fits with at least one unmapped
        granule between it and the segments around it (so it joins no other segment's free space; only an
        extension is placed right after a segment). Reserves a new window when none has room."""
        g = self.granule
        for lo, hi in self.windows:
            at, gap_after_seg = lo, False
            for b in self._seg_bases[bisect.bisect_left(self._seg_bases, lo):]:
                if b >= hi:
                    break
                start = at + (g if gap_after_seg else 0)
                if b - g - start >= n:
                    return start
                at, gap_after_seg = b + self._segs[b][0], True
            start = at + (g if gap_after_seg else 0)
            if hi - start >= n:
                return start
        size = max(self.window, n)
        lo = self.mem.reserve_address(size, g)
        self.windows.append((lo, lo + size))
        return lo

    def _grow(self, fp):
        """Map a segment so that a ``fp``-byte footprint fits (see the class docstring)."""
        g = self.granule
        need = -(-fp // g) * g
        where = None
        for s in self._starts:                      # a free tail at a segment's end that new memory extends
            e = self._fs[s]
            k = -(-(fp - (e - s)) // g) * g
            if e in self._seg_ends and k < need and self._va_free(e, k):
                need, where = k, e
        if where is None:
            where = self._lowest_gap(need)
        self.mem.map(where, need)                   # SimOutOfMemory propagates
        self._segs[where] = [need, 0]
        bisect.insort(self._seg_bases, where)
        self._seg_ends[where + need] = where
        self.reserved += need
        self._add_free(where, where + need)

    def _unmap(self, base):
        size = self._segs.pop(base)[0]
        del self._seg_bases[bisect.bisect_left(self._seg_bases, base)]
        del self._seg_ends[base + size]
        s = self._starts[bisect.bisect_right(self._starts, base) - 1]   # the free range holding it
        e = self._remove_free(s)
        if s < base:
            self._insert_free(s, base)
        if base + size < e:
            self._insert_free(base + size, e)
        self.mem.unmap(base)
        self.reserved -= size

    # ------------------------------------------------------------------ blocks
    def alloc(self, nbytes, grow=True):
        """Place an ``nbytes`` block (best fit) and register it with the DeviceMemory; return its address.
        Without a fitting free range: map a segment (``grow``) or return None."""
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise SimInvalidValue(f"cannot allocate {nbytes} bytes")
        fp = -(-nbytes // self.align) * self.align
        i = bisect.bisect_left(self._by_size, (fp, -1))
        if i == len(self._by_size):
            if not grow:
                return None
            self._grow(fp)
            i = bisect.bisect_left(self._by_size, (fp, -1))
        s = self._by_size[i][1]
        e = self._remove_free(s)
        if e > s + fp:
            self._insert_free(s + fp, e)
        self.mem.alloc_at(s, nbytes)
        self.blocks[s] = s + fp
        for b in self._segs_over(s, s + fp):
            self._segs[b][1] += 1
        return s

    def free(self, addr):
        """Free the block at ``addr``: its footprint is free space again at once."""
        addr = int(addr)
        end = self.blocks.get(addr)
        if end is None:
            raise SimInvalidValue(f"0x{addr:x} is not a block of this pool")
        self.mem.free(addr)
        del self.blocks[addr]
        for b in self._segs_over(addr, end):
            self._segs[b][1] -= 1
        self._add_free(addr, end)

    def footprint(self, addr):
        """The bytes the block at ``addr`` occupies (its size rounded up to the alignment)."""
        return self.blocks[int(addr)] - int(addr)

    def resize(self, addr, nbytes, fresh=False):
        """Give the block at ``addr`` a new size that fits its footprint, or a smaller footprint (the tail becomes
        free space); the DeviceMemory block follows (see :meth:`DeviceMemory.resize`)."""
        addr, nbytes = int(addr), int(nbytes)
        end = self.blocks[addr]
        fp = -(-nbytes // self.align) * self.align
        if addr + fp > end:
            raise SimInvalidValue(f"resize: {nbytes} bytes do not fit the {end - addr}-byte footprint at 0x{addr:x}")
        self.mem.resize(addr, nbytes, fresh)
        if addr + fp < end:
            for b in self._segs_over(addr, end):
                self._segs[b][1] -= 1
            self.blocks[addr] = addr + fp
            for b in self._segs_over(addr, addr + fp):
                self._segs[b][1] += 1
            self._add_free(addr + fp, end)

    def release(self, keep=0):
        """Unmap segments no block overlaps, largest first, as long as ``reserved`` stays >= ``keep``.
        Returns the bytes given back."""
        before = self.reserved
        for size, base in sorted(((v[0], b) for b, v in self._segs.items() if not v[1]), reverse=True):
            if self.reserved - size >= keep:
                self._unmap(base)
        return before - self.reserved

    # ------------------------------------------------------------------ figures
    def segments(self):
        """[(base, size, number of blocks overlapping it)] sorted by address."""
        return [(b, self._segs[b][0], self._segs[b][1]) for b in self._seg_bases]

    def free_ranges(self):
        """[(start, size)] of the free space inside the segments, sorted by address."""
        return [(s, self._fs[s] - s) for s in self._starts]

    def largest_free(self):
        return self._by_size[-1][0] if self._by_size else 0


_UFUNCS = {
    "add": np.add, "min": np.minimum, "max": np.maximum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}
DeviceMemory._UFUNCS = _UFUNCS


def rmw_sequential(op, view, eidx, values, compare=None, return_old=True):
    """Atomic read-modify-write on an array ``view`` at element indices ``eidx``, in lane order.

    Used for shared-memory atomics by the interpreter. Returns the old values (or None).
    """
    uf = _UFUNCS.get(op)
    eidx = np.asarray(eidx, dtype=np.intp)
    values = np.broadcast_to(np.asarray(values).astype(view.dtype, copy=False), eidx.shape)
    if compare is not None:
        compare = np.broadcast_to(np.asarray(compare).astype(view.dtype, copy=False), eidx.shape)
    if not return_old and uf is not None:
        uf.at(view, eidx, values)
        return None
    with np.errstate(all="ignore"):
        return _rmw(op, uf, view, eidx, values, compare)


def _apply(op, uf, cur, v, c):
    if uf is not None:
        return uf(cur, v)
    if op == "exch":
        return v
    if op == "cas":
        return np.where(cur == c, v, cur)
    if op == "inc":
        return np.where(cur >= v, np.zeros_like(cur), cur + np.ones_like(cur))
    if op == "dec":
        return np.where((cur == 0) | (cur > v), v, cur - np.ones_like(cur))
    raise ValueError(op)

def _rmw(op, uf, view, eidx, v, c):
    n = eidx.shape[0]
    order = np.argsort(eidx, kind="stable")
    se = eidx[order]
    first = np.ones(n, dtype=bool)
    first[1:] = se[1:] != se[:-1]
    if first.all():  # no collisions: one vectorized read-modify-write
        cur = view[eidx]
        with np.errstate(all="ignore"):
            view[eidx] = _apply(op, uf, cur, v, c)
        return cur
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, n))
    ngroups = starts.shape[0]
    maxmult = int(counts.max())
    old_sorted = np.empty(n, dtype=view.dtype)
    vs = v[order]
    cs = None if c is None else c[order]
    with np.errstate(all="ignore"):
        if (uf is not None or op == "exch") and ngroups <= maxmult:
            # few hot addresses: an in-order scan per address
            for s, cnt in zip(starts.tolist(), counts.tolist()):
                e = int(se[s])
                seq = np.empty(cnt + 1, dtype=view.dtype)
                seq[0] = view[e]
                seq[1:] = vs[s:s + cnt]
                if uf is not None:
                    uf.accumulate(seq, out=seq)
                    old_sorted[s:s + cnt] = seq[:-1]
                    view[e] = seq[-1]
                else:
                    old_sorted[s:s + cnt] = seq[:-1]
                    view[e] = seq[-1]
        else:
            # rounds: round r applies the r-th lane (in lane order) of every address at once
            rank = np.arange(n) - np.repeat(starts, counts)
            for r in range(maxmult):
                pos = np.flatnonzero(rank == r)
                e = se[pos]
                cur = view[e]
                old_sorted[pos] = cur
                view[e] = _apply(op, uf, cur, vs[pos], None if cs is None else cs[pos])
    old = np.empty(n, dtype=view.dtype)
    old[order] = old_sorted
    return old
