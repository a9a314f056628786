"""The resampling family: interpolate (nearest, nearest-exact, linear, bilinear), pad, pixel_shuffle /
pixel_unshuffle and channel_shuffle (kernels: ptx/src/resample.cu, interpolate's forward and backward).

functions.py  the ops: checks, autograd Functions, registry records (device-free; the arithmetic is the
              backend's, reached through dispatch).
cpu.py        the cpu path (numpy), star-imported by ops/cpu.py so the cpu backend has these names.
cuda.py       the cuda path (launches of ptx/resample.ptx), star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
