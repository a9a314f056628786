"""The dropout family: dropout, dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout (kernels: ptx/src/dropout.cu,
dropout_fwd/dropout_bwd, Philox masks; the channel-wise and alpha variants draw their masks with the same
dropout_fwd kernel run over ones).

functions.py  the ops: probability checks, the autograd Function, the in-place forms, registry records
              (device-free; the masks and the arithmetic are the backend's, reached through dispatch).
cpu.py        the cpu path (numpy, masks from rawdev's host generator), star-imported by ops/cpu.py.
cuda.py       the cuda path (launches of ptx/dropout.ptx, a Philox seed drawn from rawdev's generator),
              star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py (and so functions.py's imports)
is still being imported, and a package's __init__ runs before any of its modules.
"""
