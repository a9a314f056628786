"""The attention family: scaled_dot_product_attention (one autograd Function) and multi_head_attention_forward
(nn.MultiheadAttention's functional form) (kernels: ptx/src/attention.cu).

functions.py  the ops' checks, the mask and dropout set-up, the autograd Functions and registry records, and the
              multi-head wrapper (device-free: the attention arithmetic is the backend's, reached through dispatch).
cpu.py        the forward, the two backward halves and the probabilities in numpy, with the mask's and the dropout's
              cpu forms; star-imported by ops/cpu.py.
cuda.py       the same on cuda (launches of ptx/attention.ptx: the fused forward, the probabilities and the two
              recompute backward kernels), star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py is still being imported, and a
package's __init__ runs before any of its modules.
"""
