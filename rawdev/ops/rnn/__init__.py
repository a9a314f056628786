"""The recurrent family: PyTorch's fused cells (lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell) and the layer
loop nn.RNN / nn.LSTM / nn.GRU run (kernels: ptx/src/rnn.cu).

functions.py  the cells' checks, autograd Functions and registry records, and the layer loop (device-free: the
              cell arithmetic is the backend's, reached through dispatch).
cpu.py        the cells' forward and backward in numpy, star-imported by ops/cpu.py.
cuda.py       the same on cuda (one launch of ptx/rnn.ptx each), star-imported by ops/cuda.py.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py is still being imported, and a
package's __init__ runs before any of its modules.
"""
