"""rawdev.sim — the simulated GPU, a drop-in for the part of ``cuda.bindings.driver`` rawdev calls.

``rawdev.sim.cuXxx`` has the signature and ``(CUresult, value…)`` return tuple of
``cuda.bindings.driver.cuXxx``. Anything else looked up here that cuda-python's driver module has
(types, enums, ``CUmemPoolProps``…) is cuda-python's own object, so code written against
``driver()`` works with either module; a ``cu*`` function the simulator does not implement raises
AttributeError instead of silently reaching for the real driver.

Test helpers: :func:`reset`, :func:`inject_fault`, :func:`clear_faults`, :func:`last_error_detail`,
:func:`sticky_error`, :func:`stats`, :func:`peek`, :func:`device_memory`, :func:`on_reset`.
Sanitizer: :func:`sanitize` (a context manager choosing the checkers), :func:`sanitizer_findings`,
:func:`clear_sanitizer_findings` (see :mod:`rawdev.sim.sanitizer`).
Per-kernel statistics: :func:`kernel_stats` (a context manager counting instructions by class, global bytes, bank
conflicts and divergence of every launch inside it; see :mod:`rawdev.sim.kstats`).
"""

from . import driver as _driver
from .driver import *  # noqa: F401,F403  (every cu* function)
from .driver import (
    clear_faults,
    describe,
    device_memory,
    inject_fault,
    last_error_detail,
    max_ptx_version,
    on_reset,
    peek,
    reset,
    stats,
    sticky_error,
)
from .kstats import KernelLaunchStats, KernelStats, kernel_stats
from .sanitizer import Finding, clear_sanitizer_findings, sanitize, sanitizer_findings

__all__ = list(_driver.__all__) + ["reset", "inject_fault", "clear_faults", "last_error_detail", "sticky_error",
                                   "stats", "peek", "device_memory", "describe", "max_ptx_version", "on_reset",
                                   "sanitize", "sanitizer_findings", "clear_sanitizer_findings", "Finding",
                                   "kernel_stats", "KernelStats", "KernelLaunchStats"]


def __getattr__(name):
    from cuda.bindings import driver as drv
    if name.startswith("cu") and callable(getattr(drv, name, None)):
        raise AttributeError(f"rawdev.sim does not implement {name} (the simulated driver covers the calls listed "
                             f"in docs/INTERNALS.md)")
    try:
        return getattr(drv, name)
    except AttributeError:
        raise AttributeError(f"module 'rawdev.sim' has no attribute {name!r}") from None
