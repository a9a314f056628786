"""Which sanitizer checkers the simulated GPU runs, and the findings they made.

memcheck (out-of-bounds and misaligned accesses, device asserts, divergent ``bar.sync``) is always on. The
others are chosen by ``RAWDEV_SANITIZE=initcheck,racecheck,synccheck`` (read at every ``rawdev.sim.reset()``,
like the ``RAWDEV_SIM_*`` variables) or, for a block of code, by :func:`sanitize`:

* ``initcheck``: a kernel load (or atomic) of global memory no one wrote since it was allocated;
* ``racecheck``: two different threads touching the same shared or global bytes, at least one writing (other
  bytes than those there) and neither atomically, with no barrier between them (threads of different blocks: no
  atomic either);
* ``synccheck``: ``shfl.sync``/``vote.sync``/``bar.warp.sync`` whose membermask names a lane that is not executing
  it.

The checkers are the simulator's: on a real GPU (``RAWDEV_DRIVER=cuda``) nothing here has any effect.

The checkers live in a launch context of their own (:mod:`rawdev.sim.ptx.checkers`), chosen once per launch:
with none on, launches run exactly as before. A finding stops the kernel like a memcheck fault does
(``CUDA_ERROR_LAUNCH_FAILED``, sticky): raised from the launch under ``CUDA_LAUNCH_BLOCKING=1``, else at the
next synchronizing call, with kernel, block, thread, PTX line (and the CUDA source line when the PTX carries
``.loc`` line info). Every finding is also kept here: :func:`sanitizer_findings`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass

TOOLS = ("memcheck", "initcheck", "racecheck", "synccheck")

_lock = threading.Lock()
_env_tools: frozenset = frozenset()
_stack: list = []                  # (tool set, findings list) of the active sanitize() blocks, innermost last
_findings: list = []
_listeners: list = []              # called with the active tool set whenever it changes (the driver's memories)


@dataclass(frozen=True)
class Finding:
    """One report of a checker: ``tool`` (initcheck/racecheck/synccheck), the kernel, the thread and block that
    made it, the PTX line (and text), and the full message."""
    tool: str
    kernel: str
    block: tuple
    thread: tuple
    line: int
    ptx: str
    message: str

    def __str__(self):
        return self.message


def parse_tools(spec):
    """The checker names in ``spec`` ("initcheck,racecheck", "all", "" / "0" / "off": none)."""
    spec = (spec or "").strip().lower()
    if spec in ("", "0", "off", "none"):
        return frozenset()
    names = [s.strip() for s in spec.replace(" ", ",").split(",") if s.strip()]
    if names == ["all"] or names == ["1"]:
        return frozenset(TOOLS)
    bad = [n for n in names if n not in TOOLS]
    if bad:
        raise ValueError(f"RAWDEV_SANITIZE={spec!r}: unknown checker {bad[0]!r} (known: {', '.join(TOOLS)}, all)")
    return frozenset(names)


def configure_from_env():
    """Read RAWDEV_SANITIZE (the simulator's reset() calls this)."""
    global _env_tools
    _env_tools = parse_tools(os.environ.get("RAWDEV_SANITIZE", ""))
    _notify()


def active_tools():
    """The checkers on now: the innermost :func:`sanitize` block's, else RAWDEV_SANITIZE's."""
    return _stack[-1][0] if _stack else _env_tools


def add_listener(fn):
    if fn not in _listeners:
        _listeners.append(fn)


def _notify():
    tools = active_tools()
    for fn in list(_listeners):
        fn(tools)


@contextlib.contextmanager
def sanitize(*tools):
    """Run the named checkers on every kernel launched inside the block (all of them when none is named).

    Args:
        *tools: "initcheck", "racecheck", "synccheck" (and "memcheck", which is always on).

    Returns:
        A context manager; its value is a list that collects the findings recorded while the block is active
        (a kernel launched in the block but run after it reports to :func:`sanitizer_findings` only).

    Example:
        >>> with rawdev.sim.sanitize("racecheck", "initcheck"):
        ...     kernel((4,), (128,), (x, y, n))
        ...     rawdev.cuda.synchronize()      # a finding raises here (or at the launch when launch-blocking)
    """
    chosen = parse_tools(",".join(tools)) if tools else frozenset(TOOLS)
    entry = (chosen, [])
    with _lock:
        _stack.append(entry)
    _notify()
    try:
        yield entry[1]
    finally:
        with _lock:
            del _stack[next(i for i, e in enumerate(_stack) if e is entry)]   # this block's, not an equal one
        _notify()


def record(finding):
    """Keep a finding (the simulator's driver calls this for every report)."""
    with _lock:
        _findings.append(finding)
        for _, found in _stack:
            found.append(finding)


def sanitizer_findings():
    """Every finding the checkers made since the process started or :func:`clear_sanitizer_findings` (a list of
    :class:`Finding`, oldest first)."""
    with _lock:
        return list(_findings)


def clear_sanitizer_findings():
    """Forget the findings made so far."""
    with _lock:
        _findings.clear()
