"""The reduction family: sum, mean, max, min, argmax, argmin (kernels: ptx/src/reduce.cu: the float32 and
float16/bfloat16 sums over dims, max_dim/min_dim and max_dim_bwd; the int64 sums and max/min are ops/cuda_int.py's).

functions.py  the ops: dim/keepdim/dtype handling, autograd Functions, registry records (device-free; the
              arithmetic is the backend's, reached through dispatch).
cpu.py        the cpu path (numpy), star-imported by ops/cpu.py so the cpu backend has these names.
cuda.py       the cuda path (launches of ptx/reduce.ptx), star-imported by ops/cuda.py; a cuda file outside this
              folder that needs a sum imports sum_dims from here, never from ops/cuda.py (an import cycle).

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
