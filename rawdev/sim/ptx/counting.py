"""What the statistics mode of a launch counts (``PtxModule.launch(..., kernel_stats=True)``).

A launch in that mode runs every chunk with a context whose class adds the counting to the context it would have
had anyway (the plain one, or the sanitizer's): the default path keeps its classes and pays one local test per
block execution in the scheduler. Instruction classes come from the decoder (``Block.classes``), so counting them
is one vector add per executed block.
"""

from __future__ import annotations

import numpy as np

from .inst_classes import CLASSES


class KernelCounts:
    """The counts of one launch, summed over its chunks.

    ``classes`` holds warp-level instructions per class (:data:`~rawdev.sim.ptx.inst_classes.CLASSES` order):
    each executed block adds its instructions once per warp with a lane running it. ``full_executions`` and
    ``partial_executions`` count code-block executions by every lane of a chunk vs by a subset (after divergence or
    exits); ``active_lanes / lane_slots`` is the fraction of the running warps' lanes that ran each instruction.
    Global bytes are access size × lanes doing it (``cp.async`` counts its whole size, atomics separately).
    """

    def __init__(self):
        self.classes = np.zeros(len(CLASSES), np.int64)
        self.global_read = self.global_written = self.global_atomic = 0
        self.full_executions = self.partial_executions = 0
        self.active_lanes = self.lane_slots = 0

    def executed(self, X, blk, lanes, cnt, code_block):
        """Block ``blk`` ran on ``lanes`` (None: the whole chunk of ``cnt`` lanes)."""
        if lanes is None:
            warps = X.nb * -(-X.T // 32)
            slots = X.n
            if code_block:
                self.full_executions += 1
        else:
            w = X.warp_of(lanes)   # lanes are sorted, so the warps' ids are too
            first = np.empty(w.shape[0], bool)
            first[:1] = True
            np.not_equal(w[1:], w[:-1], out=first[1:])
            warps = int(np.count_nonzero(first))
            slots = int(X.warp_size_of(lanes)[first].sum())
            if code_block:
                self.partial_executions += 1
        self.classes += blk.classes * warps
        self.active_lanes += cnt * blk.ninst
        self.lane_slots += slots * blk.ninst


class _Counting:
    """Adds the global-memory byte counts to a launch context class (the plain one or the sanitizer's)."""

    kstats: KernelCounts

    def _ld(self, space, a, dt, vec, iid, m, sb, lb):
        r = super()._ld(space, a, dt, vec, iid, m, sb, lb)
        if space == "global":
            self.kstats.global_read += a.shape[0] * dt.itemsize * vec
        return r

    def _st(self, space, a, vs, dt, iid, m, sb, lb):
        super()._st(space, a, vs, dt, iid, m, sb, lb)
        if space == "global":
            self.kstats.global_written += a.shape[0] * dt.itemsize * len(vs)

    def _atomic_access(self, space, a, dt, iid, m):
        super()._atomic_access(space, a, dt, iid, m)
        if space == "global":
            self.kstats.global_atomic += a.shape[0] * dt.itemsize

    def cp_async(self, n, dbase, doff, sbase, soff, size, src_size, iid, m, sb):
        super().cp_async(n, dbase, doff, sbase, soff, size, src_size, iid, m, sb)
        self.kstats.global_read += (n if m is None else int(np.count_nonzero(m))) * size


_CLASSES: dict = {}


def counting(X, counts):
    """Make the launch context ``X`` count into ``counts`` (its class gains the counting methods)."""
    base = type(X)
    cls = _CLASSES.get(base)
    if cls is None:
        cls = _CLASSES[base] = type(f"Counting{base.__name__}", (_Counting, base), {})
    # the context was built by its own launch (plain or sanitizer's); swapping the class keeps that construction
    # and adds only the counting overrides
    X.__class__ = cls
    X.kstats = counts
    return X
