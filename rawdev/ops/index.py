"""Indexing: x[...] and x[...] = v with PyTorch's basic indexing — ints, slices with positive steps, None
and ... on every axis — as views of the same storage (SliceBackward0 / SelectBackward0 in the graph).

Assignment writes through the view into the base: a strided copy on cuda, numpy on the cpu.
"""
import operator

import numpy as np

from ..tensor.core import Tensor
from ..autograd.grad_mode import is_grad_enabled
from .shape import _view_op, make_view

__all__ = ["getitem", "setitem", "basic_index_meta"]


def _is_int(i):
    return not isinstance(i, (bool, np.bool_)) and (isinstance(i, (int, np.integer))
                                                    or (isinstance(i, Tensor) and i.ndim == 0
                                                        and not i.dtype.is_floating_point
                                                        and i.dtype.name != "bool"))


def _normalize(x, idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    for i in idx:
        if not (i is None or i is Ellipsis or isinstance(i, slice) or _is_int(i)):
            raise NotImplementedError(
                f"rawdev supports basic indexing (ints, slices, None, ...), not {type(i).__name__} indices "
                f"(advanced indexing with tensors, lists or masks is not implemented yet)")
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    if n_ell:
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (x.ndim - used) + idx[k + 1:]
    else:
        idx = idx + (slice(None),) * (x.ndim - used)
    return idx


def basic_index_meta(x, idx):
    """(shape, strides, storage offset) of x[idx] for a basic index."""
    if x.ndim == 0 and idx not in ((), Ellipsis, None) and not (isinstance(idx, tuple) and all(
            i is None or i is Ellipsis for i in idx)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    idx = _normalize(x, idx)
    shape, strides, soff, d = [], [], x.storage_offset(), 0
    xs, xst = x.shape, x.stride()
    for i in idx:
        if i is None:
            shape.append(1)
            strides.append(xst[d] * xs[d] if d < x.ndim else 1)
            continue
        size, st = xs[d], xst[d]
        if isinstance(i, slice):
            if i.step is not None and operator.index(i.step) <= 0:
                if operator.index(i.step) == 0:
                    raise ValueError("slice step cannot be zero")
                raise ValueError("step must be greater than zero")
            start, stop, step = i.indices(size)
            n = max(0, -(-(stop - start) // step)) if step > 0 else 0
            if n:
                soff += start * st
            shape.append(n)
            strides.append(st * step)
        else:
            k = operator.index(i)
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            soff += (k % size) * st
        d += 1
    return shape, strides, soff


_index = _view_op("getitem", "SliceBackward0")(basic_index_meta)


@_index.grad
def _index_back(ctx, g, idx):
    from .shape import _scatter_back
    return _scatter_back(ctx, g, idx)


def getitem(self, idx):
    """x[idx]: a view (basic indexing); in the graph as SliceBackward0 (SelectBackward0 for one int)."""
    out = _index(self, idx)
    if out.grad_fn is not None and _is_int(idx):
        out.grad_fn.rename("SelectBackward0")
    return out


def setitem(self, idx, value):
    """x[idx] = value (a tensor broadcast to the view, or a number): written into x's storage."""
    if is_grad_enabled() and (self.requires_grad or isinstance(value, Tensor) and value.requires_grad):
        if self.requires_grad and self.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise NotImplementedError("rawdev's autograd does not record indexed writes (CopySlices): assigning into "
                                  "a tensor that is part of a graph, or a value that requires grad, needs "
                                  "torch.no_grad() or an out-of-place formulation")
    view = make_view(self, basic_index_meta(self, idx))
    if isinstance(value, Tensor):
        view._write(value)     # copy_'s semantics: cast, broadcast, and any device
    elif np.ndim(value) == 0:
        view.fill_(value)
    else:
        view._write(Tensor._from_values(value, self.dtype))
