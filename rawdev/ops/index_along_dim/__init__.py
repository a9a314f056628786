"""The indexing-along-a-dim family: index_select, index_add, index_copy and the in-place Tensor.index_add_ /
index_copy_ (kernels: ptx/src/index.cu, index_select_bN / index_copy_bN / index_add_f32[_f16|_bf16]).

functions.py  the ops: index checks, the [outer, size, inner] layout, autograd Functions, the write along a dim
              that ops/index.py and gather_scatter/ also use, registry records (device-free; the arithmetic is
              the backend's, reached through dispatch).
cpu.py        the cpu path (numpy, indices range-checked on the host), star-imported by ops/cpu.py.
cuda.py       the cuda path (launches of ptx/index.ptx), star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
