"""The embedding_bag family: sums, means or maxima of bags of embedding rows (kernels: ptx/src/embedding_bag.cu).

functions.py  the op: checks, the autograd Function, the registry record (device-free; the arithmetic is the
              backend's, reached through dispatch).
cpu.py        the cpu path (numpy), star-imported by ops/cpu.py so the cpu backend has these names.
cuda.py       the cuda path (launches of ptx/embedding_bag.ptx), star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
