"""rawdev.sparse: PyTorch's torch.sparse namespace for sparse COO tensors (rawdev.ops.sparse_coo).

mm and sum are here; other torch.sparse functions raise NotImplementedError naming themselves.
"""
from typing import Any

from .ops.sparse_coo import SparseCOOTensor, is_sparse, sparse_coo_tensor
from .ops.sparse_coo import sparse_mm as mm
from .ops.sparse_coo import sparse_sum as sum  # noqa: A004  (PyTorch's name)

__all__ = ["mm", "sum", "SparseCOOTensor", "is_sparse", "sparse_coo_tensor"]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"torch.sparse.{name} is not supported by rawdev: its sparse COO support covers "
                              "sparse_coo_tensor, to_sparse, to_dense, coalesce, indices/values, sparse.mm/spmm and "
                              "sparse.sum; use dense tensors for the rest")
