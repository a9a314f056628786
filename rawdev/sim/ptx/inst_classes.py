"""The instruction class of a PTX opcode, for the simulator's per-kernel statistics (``rawdev.sim.kernel_stats``).

The class is derived once per instruction when a kernel is decoded, so that counting at run time is one vector add
per executed basic block (each block carries how many instructions of each class it holds).
"""

from __future__ import annotations

import numpy as np

CLASSES = ("global_mem", "shared_mem", "local_mem", "other_mem", "fp32", "fp64", "int", "move", "control",
           "sync", "special")

_MEMORY = {"ld", "ldu", "st", "atom", "red", "prefetch", "prefetchu"}
_MOVE = {"mov", "cvt", "cvta", "selp", "slct", "prmt"}
_CONTROL = {"bra", "ret", "exit", "trap", "call", "nanosleep", "brkpt", "pmevent"}
_SYNC = {"bar", "barrier", "membar", "fence"}
_SPECIAL = {"shfl", "vote", "activemask", "mma", "ldmatrix"}
_FP32 = {"f32", "f16", "bf16", "f16x2", "bf16x2", "tf32", "ftz"}   # half types run on the fp32 pipes' class
_SPACE_CLASS = {"global": "global_mem", "shared": "shared_mem", "local": "local_mem", "param": "other_mem",
                "const": "other_mem"}


def inst_class(opcode: str) -> str:
    """The class (one of :data:`CLASSES`) of a PTX opcode such as ``"ld.global.v4.f32"``.

    Memory instructions go by their state space (generic addressing, param and const count as ``other_mem``);
    ``cp.async`` copies read global memory and count as ``global_mem`` (its commit/wait as ``sync``); arithmetic
    goes by its type (``fp64`` for .f64, ``fp32`` for .f32 and the 16-bit float types, else ``int``), moves and
    conversions are ``move``, branches and exits ``control``, barriers and fences ``sync``, and the warp-wide
    instructions (shfl, vote, mma, ldmatrix) ``special``.

    Args:
        opcode: the instruction's opcode with its modifiers, dot-separated.

    Returns:
        The class name.

    Example:
        >>> inst_class("fma.rn.f32"), inst_class("st.shared.u32"), inst_class("bra.uni")
        ('fp32', 'shared_mem', 'control')
    """
    parts = opcode.split(".")
    base, mods = parts[0], parts[1:]
    if base in _SPECIAL:
        return "special"
    if base in _SYNC or (base == "cp" and "async" in mods and ("commit_group" in mods or "wait_group" in mods
                                                                or "wait_all" in mods)):
        return "sync"
    if base == "cp":
        return "global_mem"
    if base in _MEMORY:
        space = next((m for m in mods if m in _SPACE_CLASS), None)
        return _SPACE_CLASS[space] if space else "other_mem"
    if base in _CONTROL:
        return "control"
    if base in _MOVE:
        return "move"
    if "f64" in mods:
        return "fp64"
    if any(m in _FP32 for m in mods):
        return "fp32"
    return "int"


def class_counts(opcodes) -> np.ndarray:
    """How many of ``opcodes`` fall in each class, as an int64 vector in the order of :data:`CLASSES`."""
    out = np.zeros(len(CLASSES), np.int64)
    for op in opcodes:
        out[CLASSES.index(inst_class(op))] += 1
    return out
