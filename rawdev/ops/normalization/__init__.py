"""The normalization family: layer_norm, rms_norm, group_norm, instance_norm, batch_norm.

functions.py  the ops: argument checks, autograd Functions, registry records (device-free; the arithmetic is
              the backend's, reached through dispatch's backend(...)).
cpu.py        the cpu path (numpy), star-imported by ops/cpu.py so the cpu backend has these names.
cuda.py       the cuda path (launches of ptx/normalization.ptx, built from ptx/src/normalization.cu), star-imported
              by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
