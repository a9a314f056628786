"""The convolution family: convolution, pooling, unfold/fold and their 3-d forms (kernels: ptx/src/conv.cu).

functions.py  conv1d/2d, conv_transpose1d/2d (im2col + the shared GEMM), unfold/fold: checks, autograd Functions,
              registry records (device-free; the arithmetic is the backend's, reached through dispatch).
pooling.py    max/avg pooling, plain and adaptive, 1-d and 2-d (the same rules).
conv3d.py     the 3-d forms, composed of the 2-d ops over the depth taps.
cpu.py        the cpu path (numpy), star-imported by ops/cpu.py so the cpu backend has these names.
cuda.py       the cuda path (launches of ptx/conv.ptx), star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
