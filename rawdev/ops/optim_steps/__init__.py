"""The optimizers' per-device step code: the fused steps of SGD, Adam/AdamW, RMSprop, Adagrad, Adadelta, Adamax,
NAdam and RAdam over a group of parameters (`sgd_group`, `adam_group`, ...), and the optimizer state they update
(`zeros_state`, `alloc_states`); kernels: ptx/src/optim.cu.

cpu.py   the steps in numpy, one parameter at a time (16-bit SGD/Adam through float32 copies, rounded once),
         star-imported by ops/cpu.py.
cuda.py  the same on cuda: one launch of ptx/optim.ptx per arena group or per parameter, the state allocated in
         an arena laid out like the parameters'; star-imported by ops/cuda.py.

No functions.py: these are no ops and declare nothing. The device-free side is rawdev/optim (the Optimizer
classes: hyperparameters, state dicts, step counts, the dtype checks), which reaches this code through
`backend_of(p).sgd_group(...)` and the other names in __all__.

This file imports nothing: ops/cpu.py imports cpu.py here while ops/dispatch.py is still being imported, and a
package's __init__ runs before any of its modules.
"""
