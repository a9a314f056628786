"""The selection family: where, masked_fill, clamp/clip, maximum/minimum, nonzero, argwhere, unravel_index
(kernels: ptx/src/select.cu: where and masked_fill by element size, float32 clamp and maximum/minimum).

functions.py  the ops: checks, autograd Functions, registry records (device-free; the arithmetic is the
              backend's, reached through dispatch).
cpu.py        the cpu path (numpy), star-imported by ops/cpu.py so the cpu backend has these names.
cuda.py       the cuda path (launches of ptx/select.ptx), star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
