"""The sanitizer's launch context: initcheck, racecheck and synccheck on top of the interpreter's memcheck.

A launch with checkers on runs every chunk of blocks with a :class:`CheckedCtx` instead of the plain launch
context (the choice is made once per launch, so a launch without checkers pays nothing). The context wraps the
plain context's memory accesses:

* initcheck: a global load or atomic whose bytes were never written since their pool block was allocated
  (``DeviceMemory.shadow``) is a finding; stores and atomics mark their bytes written.
* racecheck: per byte of shared memory (per chunk) and of each global allocation a kernel touches (per launch),
  the last writer and two readers are kept with the barrier epoch they were in. An access by another thread
  that is not ordered after them is a hazard: same block, no ``bar.sync`` between (same warp: no ``__syncwarp``
  either); different blocks, unless an atomic of the earlier thread's block came after its access and the later
  thread's block did an atomic too (the "last block" pattern: store, fence, atomic counter). Atomics themselves
  are never hazards, nor is a store of the bytes already there.
* synccheck: a ``shfl.sync``/``vote.sync``/``bar.warp.sync`` whose membermask names a lane of the warp that is not
  executing it (exited, diverged, predicated off), or that does not name the executing lane itself.

A finding stops the kernel like a memcheck fault (:class:`~rawdev.sim.ptx.interp.SanitizerFinding`).
"""

from __future__ import annotations

import numpy as np

from ..memory import SimIllegalAddress
from . import interp as _interp
from .interp import _Ctx, _LaneFault

RACE_GLOBAL_MAX = 1 << 20    # bytes: larger allocations are not race-checked (the shadow costs 60 bytes a byte)
RACE_SHARED_CHUNK = 1 << 20  # bytes of shared memory per chunk under racecheck (its shadow: 60 MB)


class _Report:
    """What a checker's _LaneFault carries to the scheduler's fault report."""

    def __init__(self, kind, detail, address=None, nearest=None, global_address=False):
        self.kind, self.detail, self.address, self.nearest = kind, detail, address, nearest
        self.global_address = global_address


class RaceShadow:
    """Per byte of one memory range, three access records (the last writer, two readers), each (thread, barrier
    epoch, atomics its block had done, instruction, its warp's __syncwarp count); thread -1 is no record."""

    def __init__(self, nbytes):
        self.rec = np.full((3, 5, nbytes), -1, np.int32)


class CheckedLaunch:
    """What the checkers keep across the chunks of one launch: the global race shadows and the atomics per block."""

    def __init__(self, tools, T, nblocks, grid, block):
        self.tools, self.T, self.grid, self.block = tools, T, grid, block
        self.global_shadows = {}                         # allocation base -> RaceShadow
        self.atomics = np.zeros(nblocks, np.int32)       # atomics done so far by each block's threads

    def blocks_per_chunk(self, bpc, shsize):
        """Fewer blocks per chunk under racecheck, so that the shared-memory shadow of a chunk stays bounded."""
        if "racecheck" in self.tools and shsize:
            return max(1, min(bpc, RACE_SHARED_CHUNK // shsize))
        return bpc

    def context(self, module, code, params, memory, shsize, T, nb, gaddr, b0):
        return CheckedCtx(module, code, params, memory, shsize, T, nb, gaddr, self, b0)


def _tid(lin, block):
    bx, by, _ = block
    return (lin % bx, (lin // bx) % by, lin // (bx * by))


def _bid(bl, grid):
    gx, gy, _ = grid
    return (bl % gx, (bl // gx) % gy, bl // (gx * gy))


def _ranges(bits):
    """"0-3, 7" for the set lane numbers of a 32-bit mask."""
    lanes = [i for i in range(32) if bits >> i & 1]
    out, i = [], 0
    while i < len(lanes):
        j = i
        while j + 1 < len(lanes) and lanes[j + 1] == lanes[j] + 1:
            j += 1
        out.append(str(lanes[i]) if i == j else f"{lanes[i]}-{lanes[j]}")
        i = j + 1
    return ", ".join(out)


class CheckedCtx(_Ctx):
    """The plain launch context plus the checkers chosen for the launch."""

    def __init__(self, module, code, params, memory, shsize, T, nb, gaddr, launch, b0):
        super().__init__(module, code, params, memory, shsize, T, nb, gaddr)
        self.launch, self.b0 = launch, b0
        self.initcheck = "initcheck" in launch.tools
        self.racecheck = "racecheck" in launch.tools
        self.synccheck = "synccheck" in launch.tools
        self.epoch = 0             # bar.sync releases so far in this chunk (every live block passes each one)
        self.warp_epoch = np.zeros(nb * -(-T // 32), np.int32)   # __syncwarp()s so far, per warp of the chunk
        self._shared_shadow = None

    def barrier_passed(self):
        self.epoch += 1

    def warp_sync(self, n, iid, m, mask):
        lanes = self.all_lanes if self.lanes is None else self.lanes
        if m is not None:
            lanes = lanes[np.asarray(m, bool)]
        if lanes.shape[0] == 0:
            return
        if self.synccheck:
            mk = np.asarray(mask)
            if mk.ndim and m is not None:
                mk = mk[np.asarray(m, bool)]
            self.check_membermask(lanes, mk, self.lanes, iid)
        if self.racecheck:
            self.warp_epoch[np.unique(self.warp_of(lanes))] += 1

    # -- who is accessing
    def _threads(self, m):
        """Launch-wide thread numbers (block * T + thread) of the lanes ``m`` of the running block."""
        lanes = self.all_lanes if self.lanes is None else self.lanes
        if m is not None:
            lanes = lanes[m]
        return lanes + self.b0 * self.T

    def _who(self, t):
        tid, bid = _tid(t % self.T, self.launch.block), _bid(t // self.T, self.launch.grid)
        return f"thread ({tid[0]},{tid[1]},{tid[2]}) of block ({bid[0]},{bid[1]},{bid[2]})"

    def _at(self, iid):
        line, text = self.code.insts[iid]
        src = self.code.source_line(iid)
        return f"PTX line {line} `{text}`" + (f" (CUDA source line {src})" if src else "")

    # -- memory accesses
    def _ld(self, space, a, dt, vec, iid, m, sb, lb):
        res = super()._ld(space, a, dt, vec, iid, m, sb, lb)   # memcheck first: the bytes are in bounds
        width = dt.itemsize * vec
        if space == "global":
            if self.initcheck:
                self._initcheck(a, width, iid, m, "load")
            if self.racecheck:
                self._race_global(a, width, iid, m, False)
        elif space == "shared" and self.racecheck:
            self._race_shared(a, width, iid, m, sb, False)
        return res

    def _st(self, space, a, vs, dt, iid, m, sb, lb):
        width = dt.itemsize * len(vs)
        data = None
        if self.racecheck and space in ("global", "shared") and a.shape[0]:
            data = self._bytes(space, a, vs, width, m, sb)
        super()._st(space, a, vs, dt, iid, m, sb, lb)
        if space == "global":
            if self.initcheck:
                self.mem.mark_written(a, width)
            if self.racecheck:
                self._race_global(a, width, iid, m, True, data)
        elif space == "shared" and self.racecheck:
            self._race_shared(a, width, iid, m, sb, True, data)

    def _bytes(self, space, a, vs, width, m, sb):
        """(new, old): the bytes each lane stores and those its address holds now, (lanes, width) each; None when
        the addresses are out of bounds (memcheck reports that)."""
        new = np.ascontiguousarray(np.stack([np.asarray(v) for v in vs], axis=1)).view(np.uint8)
        new = new.reshape(a.shape[0], width)
        span = np.arange(width, dtype=np.uint64)
        if space == "global":
            try:
                old = self.mem.load((a[:, None] + span).reshape(-1), np.dtype(np.uint8))
            except SimIllegalAddress:
                return None
        else:
            sh = np.asarray(sb)
            if sh.ndim:
                sh = sh[m] if m is not None else sh
            bi = (a + sh)[:, None] + span
            if int(bi.max()) >= self.S.shape[0]:
                return None
            old = self.S[bi.reshape(-1)]
        return new, old.reshape(a.shape[0], width)

    def _atomic_access(self, space, a, dt, iid, m):
        self._atomic = (space, a, dt, iid, m)
        if self.racecheck and a.shape[0]:
            self.launch.atomics[np.unique(self._threads(m) // self.T)] += 1

    def atom(self, space, n, op, base, off, val, cmp, dt, iid, m, sb, ret):
        self._atomic = None
        out = super().atom(space, n, op, base, off, val, cmp, dt, iid, m, sb, ret)   # memcheck, then the update
        at = self._atomic
        if at is not None and at[0] == "global" and self.initcheck and at[1].shape[0]:
            # an atomic reads the old value: an accumulator nobody zeroed is a finding
            self._initcheck(at[1], at[2].itemsize, at[3], at[4], "atomic")
            self.mem.mark_written(at[1], at[2].itemsize)
        return out

    # -- initcheck
    def _initcheck(self, a, width, iid, m, what):
        bad = self.mem.unwritten(a, width)
        if bad.any():
            k = int(np.argmax(bad))
            addr = int(a[k])
            near = self.mem.nearest(addr, width)
            self._fault(iid, m, k, _Report(
                "uninitialized read", f"{width}-byte global {what} at 0x{addr:x} reads memory nothing wrote since it "
                f"was allocated (no copy, memset or kernel store): {near}", addr, near, True), "initcheck")

    # -- racecheck
    def _race_shared(self, a, width, iid, m, sb, write, data=None):
        if a.shape[0] == 0:
            return
        if self._shared_shadow is None:
            self._shared_shadow = RaceShadow(self.S.shape[0])
        s = np.asarray(sb)
        if s.ndim:
            s = s[m] if m is not None else s
        bi = (a + s).astype(np.int64)

        def where(k):
            t = int(self._threads(m)[k])
            return f"shared memory offset 0x{int(bi[k]) - (t // self.T - self.b0) * self.shstride:x}", None

        self._race(self._shared_shadow, bi, width, iid, m, write, where, data)

    def _race_global(self, a, width, iid, m, write, data=None):
        if a.shape[0] == 0:
            return
        mem = self.mem
        bases, ends = mem._tables()
        alloc = np.searchsorted(bases, a, side="right").astype(np.int64) - 1
        for k in np.unique(alloc):
            base, end = int(bases[k]), int(ends[k])
            if end - base > RACE_GLOBAL_MAX:
                continue
            sh = self.launch.global_shadows.get(base)
            if sh is None:
                sh = self.launch.global_shadows[base] = RaceShadow(end - base)
            sel = alloc == k
            sub = sel if m is None else self._submask(m, sel)
            ga = a[sel]

            def where(j, ga=ga):
                addr = int(ga[j])
                return f"0x{addr:x} ({mem.nearest(addr, width)})", addr

            part = None if data is None else (data[0][sel], data[1][sel])
            self._race(sh, (ga - np.uint64(base)).astype(np.int64), width, iid, sub, write, where, part)

    def _submask(self, m, sel):
        """The mask over the running block's lanes that selects the lanes ``sel`` picks out of mask ``m``."""
        out = np.zeros(m.shape[0], bool)
        out[np.flatnonzero(m)[sel]] = True
        return out

    def _race(self, shadow, idx0, width, iid, m, write, where, data=None):
        """Check one access (byte offsets ``idx0`` of ``width`` bytes, one per lane of mask ``m``) against the
        records of ``shadow``, then record it. ``data`` (a store's new and old bytes) makes a write of the bytes
        already there no write-after-write hazard: whichever thread wins, memory ends the same."""
        T, acnt = self.T, self.launch.atomics
        th0 = self._threads(m)
        nl = idx0.shape[0]
        if width > 1:
            idx = (idx0[:, None] + np.arange(width)).reshape(-1)
            th = np.repeat(th0, width)
            lane = np.repeat(np.arange(nl), width)
        else:
            idx, th, lane = idx0, th0, np.arange(nl)
        rec = shadow.rec
        cur_ac = acnt[th // T]
        cur_warp = self.warp_of(th - self.b0 * T)
        cur_wep = self.warp_epoch[cur_warp]

        def concurrent(k):
            t = rec[k, 0][idx]
            valid = (t >= 0) & (t != th)
            if not valid.any():
                return valid
            tb = np.where(t >= 0, t, 0) // T
            same = tb == th // T
            # same block: no bar.sync between, and for the same warp no __syncwarp() either
            tw = self.warp_of(np.where(same, t - self.b0 * T, 0))
            unsynced = (rec[k, 1][idx] == self.epoch) & ((tw != cur_warp) | (rec[k, 4][idx] == cur_wep))
            via_atomics = (acnt[tb] > rec[k, 2][idx]) & (cur_ac > 0)
            return valid & np.where(same, unsynced, ~via_atomics)

        checks = [(0, "read-after-write" if not write else "write-after-write", "written")]
        if write:
            checks += [(1, "write-after-read", "read"), (2, "write-after-read", "read")]
        new = old = None
        if data is not None:
            new, old = data[0].reshape(-1), data[1].reshape(-1)
        for k, hazard, verb in checks:
            c = concurrent(k)
            if k == 0 and write and new is not None:
                c &= new != old
            if c.any():
                p = int(np.argmax(c))
                self._hazard(hazard, lane[p], int(rec[k, 0][idx[p]]), int(rec[k, 3][idx[p]]), verb, width, iid, m,
                             write, where)
        if write and idx.shape[0] > width:
            order = np.argsort(idx, kind="stable")
            si, st = idx[order], th[order]
            dup = (si[1:] == si[:-1]) & (st[1:] != st[:-1])
            if new is not None:
                sn = new[order]
                dup &= sn[1:] != sn[:-1]
            if dup.any():
                p = int(np.argmax(dup))
                self._hazard("write-after-write", lane[order[p + 1]], int(st[p]), iid, "written", width, iid, m,
                             write, where)
        entry = np.stack([th, np.full(th.shape[0], self.epoch), cur_ac, np.full(th.shape[0], iid), cur_wep])
        if write:
            rec[0][:, idx] = entry
            return
        keep = concurrent(1)                 # a first reader that may still race with a later writer stays
        rec[1][:, idx[~keep]] = entry[:, ~keep]
        other = rec[1, 0][idx] != th
        rec[2][:, idx[other]] = entry[:, other]

    def _hazard(self, hazard, k, other, other_iid, verb, width, iid, m, write, where):
        place, addr = where(int(k))
        detail = (f"{'writes' if write else 'reads'} {width} byte(s) at {place}, {verb} by "
                  f"{self._who(other)} at {self._at(other_iid)} with no barrier between")
        self._fault(iid, m, int(k), _Report(f"{hazard} hazard", detail, addr, None, addr is not None), "racecheck")

    # -- synccheck
    def check_membermask(self, lanes, mask, idx, iid):
        """shfl.sync/vote.sync: every lane named in the membermask must be executing the instruction now."""
        if lanes.shape[0] == 0:
            return
        mask = np.broadcast_to(np.asarray(mask).astype(np.int64) & 0xFFFFFFFF, lanes.shape)
        ln = (lanes % self.T) % 32
        w = self.warp_of(lanes)
        uw, inv = np.unique(w, return_inverse=True)
        actv = np.zeros(uw.shape[0], np.int64)
        np.bitwise_or.at(actv, inv, np.left_shift(np.int64(1), ln))
        exist = np.left_shift(np.int64(1), self.warp_size_of(lanes).astype(np.int64)) - 1
        missing = mask & exist & ~actv[inv]
        outside = (mask >> ln) & 1 == 0
        bad = (missing != 0) | outside
        if not bad.any():
            return
        k = int(np.argmax(bad))
        mk = int(mask[k])
        if missing[k]:
            why = (f"membermask 0x{mk:08x} names lane(s) {_ranges(int(missing[k]))} of the warp, which are not "
                   f"executing it (exited, diverged or predicated off; executing: {_ranges(int(actv[inv[k]]))})")
        else:
            why = f"membermask 0x{mk:08x} does not name the executing lane {int(ln[k])}"
        pos = int(lanes[k]) if idx is None else int(np.searchsorted(idx, lanes[k]))
        raise _LaneFault(iid, pos, _Report("invalid warp synchronization", why), "synccheck")


_interp.CHECKED_LAUNCH[:] = [CheckedLaunch]
