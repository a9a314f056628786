"""The gather/scatter family: gather, scatter, scatter_add, scatter_reduce, take, take_along_dim, index_fill,
the *_scatter ops, put and one_hot (kernels: ptx/src/gather_scatter.cu).

functions.py  the ops: checks with PyTorch's wording, autograd Functions, registry records (device-free; the
              arithmetic and the host-side range check are the backend's, reached through dispatch).
cpu.py        the cpu path (numpy), star-imported by ops/cpu.py so the cpu backend has these names.
cuda.py       the cuda path (launches of ptx/gather_scatter.ptx; an index out of range trips the kernels'
              device-side assert), star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
