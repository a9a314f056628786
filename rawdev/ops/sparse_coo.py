"""Sparse COO tensors as far as programs use them: build (sparse_coo_tensor, Tensor.to_sparse), inspect
(indices, values, _nnz, is_sparse, layout), convert (to_dense, coalesce) and multiply a dense matrix
(sparse.mm / spmm / mm / matmul / `@`), with autograd to the dense operand and to the values.

A SparseCOOTensor holds an int64 index tensor (sparse_dim x nnz) and a values tensor (nnz, *dense dims) on
the same device. Every computation is a composition of dense ops that already exist on cpu and cuda:
`sparse @ dense` is `zeros(M, F).index_add(0, row, values[:, None] * dense.index_select(0, col))`, so its
gradients are those of index_select/index_add (a gather and a scatter-add) and no new kernel is needed.
Coalescing sorts and merges duplicate indices on the host (the indices are small next to the values) and sums
the values with index_add on their device. Anything else asked of a sparse tensor raises NotImplementedError
naming the feature, never AttributeError.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..device import as_device
from ..tensor.core import Tensor
from ..tensor.memfmt import sparse_coo

__all__ = ["SparseCOOTensor", "sparse_coo_tensor", "spmm", "sparse_mm", "sparse_sum", "to_sparse", "is_sparse"]

_SUPPORTED = ("to_dense, coalesce, is_coalesced, indices, values, _indices, _values, _nnz, sparse_dim, dense_dim, "
              "size, shape, dim, dtype, device, to, cuda, cpu, float, double, t, transpose (2-D), mul by a "
              "scalar, neg, sum, requires_grad_, detach, mm/matmul/@ with a dense matrix")


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(f"{what} is not supported for sparse COO tensors in rawdev (sparse support covers "
                               f"{_SUPPORTED}); call .to_dense() first")


def _as_tensor(x, dtype=None, device=None):
    from ..tensor.factory import tensor as _tensor
    if isinstance(x, Tensor):
        out = x
        if dtype is not None and out.dtype is not dtype:
            out = out.to(dtype)
        if device is not None and out.device != as_device(device):
            out = out.to(device)
        return out
    return _tensor(x, dtype=dtype, device=device)


class SparseCOOTensor:
    """A sparse COO tensor (PyTorch's layout torch.sparse_coo): indices (sparse_dim x nnz) and values."""

    is_sparse = True
    is_sparse_csr = False
    layout = sparse_coo

    def __init__(self, indices: Tensor, values: Tensor, size: tuple[int, ...], coalesced: bool = False):
        object.__setattr__(self, "_idx", indices)
        object.__setattr__(self, "_val", values)
        object.__setattr__(self, "_size", tuple(int(s) for s in size))
        object.__setattr__(self, "_coalesced", bool(coalesced))

    # --- what it is --------------------------------------------------------------------------------------
    @property
    def shape(self):
        from ..tensor.size import Size
        return Size(self._size)

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self._size[dim]

    def dim(self) -> int:
        return len(self._size)

    ndim = property(dim)

    @property
    def dtype(self):
        return self._val.dtype

    @property
    def device(self):
        return self._val.device

    @property
    def is_cuda(self) -> bool:
        return self._val.device.type == "cuda"

    @property
    def requires_grad(self) -> bool:
        return self._val.requires_grad

    @property
    def grad_fn(self):
        return self._val.grad_fn

    def requires_grad_(self, requires_grad: bool = True):
        self._val.requires_grad_(requires_grad)
        return self

    def detach(self):
        return SparseCOOTensor(self._idx, self._val.detach(), self._size, self._coalesced)

    def sparse_dim(self) -> int:
        return int(self._idx.shape[0])

    def dense_dim(self) -> int:
        return self._val.ndim - 1

    def _nnz(self) -> int:
        return int(self._idx.shape[1])

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _indices(self) -> Tensor:
        return self._idx

    def _values(self) -> Tensor:
        return self._val

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._val

    def numel(self) -> int:
        return math.prod(self._size)

    def element_size(self) -> int:
        return self._val.element_size()

    # --- conversions ---------------------------------------------------------------------------------------
    def _linear_index(self) -> np.ndarray:
        """The row-major position of each entry among the sparse dims (host int64)."""
        idx = self._idx.cpu().numpy().astype(np.int64).reshape(self.sparse_dim(), -1)
        strides = np.cumprod((self._size[1:self.sparse_dim()] + (1,))[::-1])[::-1]
        return (idx * strides.reshape(-1, 1)).sum(0) if idx.size else np.zeros(0, np.int64)

    def coalesce(self) -> SparseCOOTensor:
        """Duplicate indices summed, entries in row-major order (values keep their autograd history)."""
        if self._coalesced:
            return self
        lin = self._linear_index()
        uniq, inverse = np.unique(lin, return_inverse=True)
        nd = self.sparse_dim()
        idx = np.stack(np.unravel_index(uniq, self._size[:nd])) if nd else np.zeros((0, len(uniq)), np.int64)
        dev = self._val.device
        from ..tensor.factory import tensor as _tensor
        from ..tensor.factory import zeros
        inv = _tensor(inverse.astype(np.int64), device=dev)
        vals = zeros((len(uniq),) + tuple(self._val.shape[1:]), dtype=self._val.dtype, device=dev)
        vals = vals.index_add(0, inv, self._val)
        return SparseCOOTensor(_tensor(idx.astype(np.int64).reshape(nd, -1), device=dev), vals, self._size, True)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense tensor (duplicates summed); differentiable with respect to the values."""
        from ..tensor.factory import tensor as _tensor
        from ..tensor.factory import zeros
        nd = self.sparse_dim()
        rows = math.prod(self._size[:nd])
        dev = self._val.device
        lin = _tensor(self._linear_index(), device=dev)
        out = zeros((rows,) + tuple(self._size[nd:]), dtype=self._val.dtype, device=dev)
        out = out.index_add(0, lin, self._val).reshape(self._size)
        return out if dtype is None else out.to(dtype)

    def to(self, *args, **kwargs) -> SparseCOOTensor:
        vals = self._val.to(*args, **kwargs)
        return SparseCOOTensor(self._idx.to(vals.device), vals, self._size, self._coalesced)

    def cuda(self, device=None, non_blocking: bool = False) -> SparseCOOTensor:
        return self.to("cuda" if device is None else device)

    def cpu(self) -> SparseCOOTensor:
        return self.to("cpu")

    def float(self) -> SparseCOOTensor:
        return self.to(_dt.float32)

    def double(self) -> SparseCOOTensor:
        return self.to(_dt.float64)

    def type(self, dtype=None):
        if dtype is None:
            return f"torch.sparse.{self.dtype._legacy}"
        raise _unsupported("Tensor.type(...)")

    def t(self) -> SparseCOOTensor:
        if self.dim() != 2 or self.dense_dim():
            raise _unsupported("t() of a sparse tensor that is not a 2-D matrix")
        return SparseCOOTensor(self._idx.flip(0), self._val, self._size[::-1], False)

    def transpose(self, dim0: int, dim1: int) -> SparseCOOTensor:
        if sorted((dim0 % max(self.dim(), 1), dim1 % max(self.dim(), 1))) != [0, 1] or self.dim() != 2:
            raise _unsupported("transpose of sparse dims other than a 2-D matrix's")
        return self.t()

    # --- arithmetic ----------------------------------------------------------------------------------------
    def __mul__(self, other):
        if isinstance(other, (int, float)) or (isinstance(other, Tensor) and other.ndim == 0):
            return SparseCOOTensor(self._idx, self._val * other, self._size, self._coalesced)
        raise _unsupported("multiplying a sparse tensor by a non-scalar")

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, (int, float)) or (isinstance(other, Tensor) and other.ndim == 0):
            return SparseCOOTensor(self._idx, self._val / other, self._size, self._coalesced)
        raise _unsupported("dividing a sparse tensor by a non-scalar")

    def __neg__(self):
        return SparseCOOTensor(self._idx, -self._val, self._size, self._coalesced)

    def __matmul__(self, other):
        return spmm(self, other)

    def __rmatmul__(self, other):
        return _dense_mm_sparse(other, self)

    def mm(self, other):
        return spmm(self, other)

    matmul = mm

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        if dim is None:
            return self._val.sum() if dtype is None else self._val.sum(dtype=dtype)
        out = self.to_dense().sum(dim, keepdim=keepdim)
        return out if dtype is None else out.to(dtype)

    def __len__(self):
        return self._size[0]

    def __repr__(self):
        return (f"tensor(indices={self._idx!r},\n       values={self._val!r},\n       size={self._size}, "
                f"nnz={self._nnz()}, layout=torch.sparse_coo)")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _unsupported(f"Tensor.{name}")

    def __getitem__(self, item):
        raise _unsupported("indexing")

    def __setattr__(self, name, value):
        raise _unsupported(f"setting Tensor.{name}")


def is_sparse(x: Any) -> bool:
    """True for a sparse COO tensor."""
    return isinstance(x, SparseCOOTensor)


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseCOOTensor:
    """A sparse COO tensor with the given indices (sparse_dim x nnz, int64) and values (nnz, *dense dims).

    Args:
        indices: a tensor, array or nested list of ints, one row per sparse dimension.
        values: the entries (a tensor, array or list); duplicates are summed by coalesce/to_dense.
        size: the full size; by default one past the largest index in each sparse dimension.
        dtype, device, requires_grad: as for rawdev.tensor.
        check_invariants: indices are always checked against size.
        is_coalesced: trust that the indices are unique and sorted.

    Returns:
        SparseCOOTensor

    Example:
        >>> a = rawdev.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
        >>> (a @ rawdev.ones(2, 1)).tolist()
        [[2.0], [3.0]]
    """
    vals = _as_tensor(values, dtype=dtype, device=device)
    if not isinstance(values, Tensor) and dtype is None and not vals.dtype.is_floating_point \
            and any(isinstance(v, float) for v in np.asarray(values).reshape(-1).tolist()):
        vals = vals.float()
    idx = _as_tensor(indices, dtype=_dt.int64, device=vals.device)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.ndim < 1 or vals.shape[0] != idx.shape[1]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {idx.shape[1]}, nnz "
                           f"from values: {vals.shape[0] if vals.ndim else 0}")
    host = idx.cpu().numpy()
    nd = int(idx.shape[0])
    if size is None:
        size = tuple(int(host[d].max()) + 1 if host.shape[1] else 0 for d in range(nd)) + tuple(vals.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != nd + vals.ndim - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({nd}) + dense_dim ({vals.ndim - 1}), but got "
                           f"{len(size)}")
    if tuple(vals.shape[1:]) != size[nd:]:
        raise RuntimeError(f"values has incorrect size, expected {[vals.shape[0], *size[nd:]]}, got "
                           f"{list(vals.shape)}")
    for d in range(nd):
        if host.shape[1] and (host[d].min() < 0 or host[d].max() >= size[d]):
            bad = int(host[d].max()) if host[d].max() >= size[d] else int(host[d].min())
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                               f"{bad}")
    if requires_grad:
        vals = vals.detach().requires_grad_()
    return SparseCOOTensor(idx, vals, size, bool(is_coalesced))


def to_sparse(self: Any, sparse_dim: Any = None, *, layout: Any = None, blocksize: Any = None,
              dense_dim: Any = None) -> SparseCOOTensor:
    """Tensor.to_sparse(): the nonzero entries of a dense tensor as a coalesced sparse COO tensor
    (differentiable with respect to the dense tensor)."""
    if layout is not None and layout is not sparse_coo:
        raise _unsupported(f"to_sparse(layout={layout})")
    if blocksize is not None or dense_dim is not None:
        raise _unsupported("to_sparse with blocksize or dense_dim")
    nd = self.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 < nd <= self.ndim:
        raise RuntimeError(f"sparse_dim must be in [1, {self.ndim}], got {sparse_dim}")
    host = self.detach().cpu().numpy()
    mask = host.reshape(host.shape[:nd] + (-1,)).any(-1) if nd < self.ndim else host != 0
    idx = np.stack(np.nonzero(mask)).astype(np.int64).reshape(nd, -1)
    from ..tensor.factory import tensor as _tensor
    dev_idx: Any = _tensor(idx, device=self.device)
    dense: Any = self
    vals = dense[tuple(dev_idx[d] for d in range(nd))]
    return SparseCOOTensor(dev_idx, vals, tuple(self.shape), True)


def spmm(sparse: Any, dense: Any) -> Tensor:
    """sparse (M x K, COO) @ dense (K x F or K) -> dense (M x F or M), differentiable in both operands.

    Args:
        sparse: a 2-D SparseCOOTensor.
        dense: a dense 2-D (or 1-D) tensor on the same device.

    Returns:
        Tensor

    Example:
        >>> adj = rawdev.eye(3).to_sparse()
        >>> rawdev.sparse.mm(adj, rawdev.ones(3, 2)).shape
        rawdev.Size([3, 2])
    """
    if not isinstance(sparse, SparseCOOTensor):
        if isinstance(dense, SparseCOOTensor):
            return _dense_mm_sparse(sparse, dense)
        from .linalg import mm
        return mm(sparse, dense)
    if isinstance(dense, SparseCOOTensor):
        raise _unsupported("sparse @ sparse")
    if sparse.dim() != 2 or sparse.dense_dim():
        raise _unsupported(f"matrix products of a {sparse.dim()}-D sparse tensor (only 2-D sparse matrices)")
    if not isinstance(dense, Tensor):
        raise TypeError(f"spmm(): argument 'mat2' must be Tensor, not {type(dense).__name__}")
    vec = dense.ndim == 1
    d2 = dense.unsqueeze(1) if vec else dense
    if d2.ndim != 2:
        raise RuntimeError(f"mm(): expected a 2-D dense matrix, got {dense.ndim}-D")
    m, k = sparse.shape
    if d2.shape[0] != k:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {d2.shape[0]}x{d2.shape[1]})")
    if d2.device != sparse.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{sparse.device} and {d2.device}!")
    from ..tensor.factory import zeros
    row, col = sparse._idx[0], sparse._idx[1]
    vals = sparse._val.to(d2.dtype) if sparse._val.dtype is not d2.dtype else sparse._val
    contrib = d2.index_select(0, col) * vals.unsqueeze(1)
    out = zeros((m, d2.shape[1]), dtype=d2.dtype, device=d2.device).index_add(0, row, contrib)
    return out.squeeze(1) if vec else out


def _dense_mm_sparse(dense: Tensor, sparse: SparseCOOTensor) -> Tensor:
    """dense (N x M) @ sparse (M x K) = (sparse^T @ dense^T)^T."""
    if dense.ndim == 1:
        return spmm(sparse.t(), dense)
    return spmm(sparse.t(), dense.t()).t()


sparse_mm = spmm


def sparse_sum(input: Any, dim: Any = None, dtype: Any = None) -> Any:  # noqa: A002
    """torch.sparse.sum: the sum of a sparse tensor's entries (all, or over dim: a dense result here).

    Args:
        input: a SparseCOOTensor.
        dim: a dim or dims to sum over; None sums everything.
        dtype: the result's dtype.

    Returns:
        Tensor (0-d for a full sum)

    Example:
        >>> rawdev.sparse.sum(rawdev.eye(3).to_sparse()).item()
        3.0
    """
    if not isinstance(input, SparseCOOTensor):
        return input.sum() if dim is None else input.sum(dim)
    return input.sum(dim, dtype=dtype)


def _dense_only(name: str):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got Strided")
    method.__name__ = name
    return method


def install() -> None:
    """Tensor.to_sparse (and to_sparse_coo) on rawdev.Tensor, and the sparse accessors a dense tensor answers
    with PyTorch's errors (values(), indices(), ...) or values (sparse_dim() is 0)."""
    T: Any = Tensor
    T.to_sparse = to_sparse
    T.to_sparse_coo = lambda self: to_sparse(self)
    for name in ("values", "indices", "_indices", "coalesce", "is_coalesced", "_nnz"):
        if not hasattr(T, name):   # Tensor has its own _values (an internal helper): left alone
            setattr(T, name, _dense_only(name))
    T.sparse_dim = lambda self: 0
    T.dense_dim = lambda self: self.ndim
    from .linalg import SPARSE_MM
    SPARSE_MM[0] = spmm   # matmul / mm of a sparse operand
