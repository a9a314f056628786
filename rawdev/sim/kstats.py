"""Per-kernel statistics from the simulated GPU: :func:`kernel_stats` collects, for every launch issued inside it,
warp-level instructions by class, global bytes read and written, shared-memory bank conflicts and divergence.

The counts are the simulator's and exact for a given launch (no sampling): a change in them between two versions
of a kernel shows a change in its work, in CI without a GPU. They are not timings. On a real GPU
(``RAWDEV_DRIVER=cuda``) nothing is collected.

A launch belongs to the :func:`kernel_stats` blocks active when it was *issued* (as with ``sanitize()``); its
counts arrive when it runs, so read a collector after a synchronizing call (leaving the block synchronizes).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

from .ptx.inst_classes import CLASSES

_lock = threading.Lock()
_stack: list = []        # the active collectors, innermost last


@dataclass
class KernelLaunchStats:
    """The counts of one launch (or, from :meth:`KernelStats.by_kernel`, of every launch of one kernel).

    ``instructions`` maps each class of :data:`~rawdev.sim.ptx.inst_classes.CLASSES` to warp-level instructions
    executed; ``thread_instructions`` counts per thread. ``full_executions``/``partial_executions`` count basic
    block executions by all lanes of a chunk vs a subset (divergence or exited threads), ``active_lane_fraction``
    is the share of the running warps' lanes that executed each instruction (1.0: no divergence).
    """
    kernel: str
    grid: tuple
    block: tuple
    launches: int = 1
    instructions: dict = field(default_factory=dict)
    thread_instructions: int = 0
    global_bytes_read: int = 0
    global_bytes_written: int = 0
    global_atomic_bytes: int = 0
    shared_requests: int = 0
    bank_conflicts: int = 0
    full_executions: int = 0
    partial_executions: int = 0
    active_lanes: int = 0
    lane_slots: int = 0

    @property
    def warp_instructions(self):
        """All warp-level instructions executed."""
        return sum(self.instructions.values())

    @property
    def active_lane_fraction(self):
        return self.active_lanes / self.lane_slots if self.lane_slots else 1.0

    @classmethod
    def from_launch(cls, st):
        """From the interpreter's LaunchStats of a launch made with ``kernel_stats=True``."""
        c = st.counts
        return cls(st.kernel, tuple(st.grid), tuple(st.block), 1, dict(zip(CLASSES, (int(v) for v in c.classes))),
                   st.thread_instructions, c.global_read, c.global_written, c.global_atomic, st.shared_requests,
                   st.bank_conflicts, c.full_executions, c.partial_executions, c.active_lanes, c.lane_slots)

    def add(self, other):
        """Add ``other``'s counts into this one (grid and block become the last launch's)."""
        self.launches += other.launches
        for k, v in other.instructions.items():
            self.instructions[k] = self.instructions.get(k, 0) + v
        for name in ("thread_instructions", "global_bytes_read", "global_bytes_written", "global_atomic_bytes",
                     "shared_requests", "bank_conflicts", "full_executions", "partial_executions", "active_lanes",
                     "lane_slots"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.grid, self.block = other.grid, other.block


class KernelStats:
    """The launches collected by one :func:`kernel_stats` block: ``launches`` (a list of
    :class:`KernelLaunchStats`, in the order they ran)."""

    def __init__(self):
        self.launches: list = []

    def by_kernel(self):
        """The counts summed per kernel name: a dict name -> :class:`KernelLaunchStats`, first launched first."""
        out: dict = {}
        for s in self.launches:
            if s.kernel in out:
                out[s.kernel].add(s)
            else:
                out[s.kernel] = KernelLaunchStats(**{**s.__dict__, "instructions": dict(s.instructions)})
        return out

    def table(self, per_launch=False):
        """A text table, one row per kernel (summed over its launches), or per launch with ``per_launch``.

        Columns: launches, warp instructions in total and by class (classes never executed are left out), global
        bytes read/written/atomic, bank conflicts, partial/full block executions and the active-lane fraction.

        Args:
            per_launch: a row per launch instead of per kernel.

        Returns:
            The table as one string ("(no kernel launches)" when there were none).

        Example:
            >>> print(ks.table())                        # a header line, then a row per kernel
            >>> ks.table().splitlines()[0].split()[:3]
            ['kernel', 'launches', 'warp_inst']
        """
        rows = list(self.launches) if per_launch else list(self.by_kernel().values())
        used = [c for c in CLASSES if any(r.instructions.get(c, 0) for r in rows)]
        head = ["kernel", "launches", "warp_inst", *used, "gld_bytes", "gst_bytes", "atom_bytes", "bank_confl",
                "partial/full", "lanes"]
        body = []
        for r in rows:
            body.append([r.kernel, str(r.launches), str(r.warp_instructions),
                         *(str(r.instructions.get(c, 0)) for c in used), str(r.global_bytes_read),
                         str(r.global_bytes_written), str(r.global_atomic_bytes), str(r.bank_conflicts),
                         f"{r.partial_executions}/{r.full_executions}", f"{r.active_lane_fraction:.3f}"])
        if not body:
            return "(no kernel launches)"
        widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
        lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))]
        for b in body:
            lines.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(b, widths))))
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def active():
    """The collectors of the :func:`kernel_stats` blocks active now (the driver reads this at each launch)."""
    with _lock:
        return tuple(_stack)


def record(collectors, launch_stats):
    """Give one launch's interpreter stats to ``collectors`` (the driver calls this when the launch ran)."""
    s = KernelLaunchStats.from_launch(launch_stats)
    with _lock:
        for c in collectors:
            c.launches.append(s)



# The simulated driver's cuCtxSynchronize, registered by rawdev.sim.driver when it is imported (the driver reads
# this module's collectors at each launch, so this module does not import the driver).
SYNCHRONIZE: list = []


@contextlib.contextmanager
def kernel_stats():
    """Count what every kernel launched on the simulated GPU inside the block executes.

    Returns:
        A context manager whose value is a :class:`KernelStats`; ``.launches`` lists each launch's
        :class:`KernelLaunchStats`, ``.by_kernel()`` sums them per kernel and ``.table()`` renders them. Leaving
        the block synchronizes the device, so every launch issued in it has been counted.

    Example:
        >>> with rawdev.sim.kernel_stats() as ks:
        ...     y = model(x)
        >>> print(ks.table())
        >>> ks.by_kernel()["saxpy"].global_bytes_read
    """
    ks = KernelStats()
    with _lock:
        _stack.append(ks)
    ok = False
    try:
        yield ks
        ok = True
    finally:
        with _lock:
            del _stack[next(i for i, e in enumerate(_stack) if e is ks)]
    if ok:
        # the launches of the block run now; a fault among them stays sticky and is reported by the caller's next
        # call, as a synchronize would report it (this one's status is not raised from a context manager's exit)
        for sync in SYNCHRONIZE:
            sync()
