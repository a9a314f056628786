"""`torch.functional`: the module PyTorch keeps some tensor functions in (torch/functional.py), each also at
torch's top level: the same rawdev functions under this path. Those of PyTorch's names rawdev lacks
(align_tensors, lu, stft) are missing here as at rawdev's top level. The activations (relu, log_softmax, ...)
are in torch.nn.functional, not here, in PyTorch as in rawdev. Imported by rawdev/__init__.py; the functions come
from rawdev.ops, where they are declared."""
from .ops import (  # noqa: F401
               atleast_1d,
               atleast_2d,
               atleast_3d,
               block_diag,
               broadcast_shapes,
               broadcast_tensors,
               cartesian_prod,
               cdist,
               chain_matmul,
               einsum,
               meshgrid,
               norm,
               pca_lowrank,
               split,
               svd_lowrank,
               tensordot,
               unique,
               unique_consecutive,
               unravel_index,
)

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "norm", "meshgrid", "pca_lowrank", "split",
           "svd_lowrank", "tensordot", "unique", "unique_consecutive", "unravel_index"]
