"""PTX interpreter for the simulated GPU: parse + decode once, run all threads as numpy lanes.

    from rawdev.sim.ptx import PtxModule
    m = PtxModule(text)
    stats = m.launch("saxpy", grid=(4, 1, 1), block=(128, 1, 1), params=buf, memory=mem)
"""

from . import checkers  # noqa: E402,F401  (registers the sanitizer's launch context with interp)
from .decoder import DecodeError, EntryCode, Param, implemented_opcodes
from .interp import BarrierError, Entry, KernelFault, LaunchStats, PtxModule
from .parser import PtxError

__all__ = ["EntryCode", "PtxModule", "PtxError", "KernelFault", "BarrierError", "Entry", "Param", "LaunchStats",
           "DecodeError", "implemented_opcodes"]
