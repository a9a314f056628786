"""Views that pick a part of a tensor's elements: narrow, select, diagonal, as_strided, Tensor.unfold's sliding
windows, and unbind (a select per index). Each is its layout arithmetic declared with ops/shape.py's `_view_op`;
the backward writes the gradient into the same view of a zero tensor (shape's `_scatter_back`: one strided copy on
cuda), except unfold's, whose overlapping windows add up.
"""
import operator

from ..tensor import layout as L
from ..tensor.factory import zeros
from .registry import declare
from .shape import _scatter_back, _sizes, _view_op, wrap_dim


@_view_op("narrow", "NarrowBackward0")
def _narrow(x, dim, start, length):
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, x.ndim)
    size = x.shape[d]
    start = operator.index(start)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start %= size if size else 1
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    shape = list(x.shape)
    shape[d] = length
    return shape, x.stride(), x.storage_offset() + start * x.stride()[d]


_narrow.grad(_scatter_back)


def narrow(input, dim, start, length):  # noqa: A002
    return _narrow(input, dim, start, operator.index(length))


@_view_op("select", "SelectBackward0")
def _select(x, dim, index):
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, x.ndim)
    size = x.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension {d}")
    index %= size
    shape = list(x.shape)
    strides = list(x.stride())
    del shape[d]
    st = strides.pop(d)
    return shape, strides, x.storage_offset() + index * st


_select.grad(_scatter_back)


def select(input, dim, index):  # noqa: A002
    return _select(input, dim, operator.index(index))


@_view_op("diagonal", "DiagonalBackward0")
def _diagonal(x, offset, dim1, dim2):
    n = x.ndim
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    soff = x.storage_offset()
    if offset >= 0:
        length = max(min(x.shape[d1], x.shape[d2] - offset), 0)
        soff += offset * x.stride()[d2] if length else 0
    else:
        length = max(min(x.shape[d1] + offset, x.shape[d2]), 0)
        soff -= offset * x.stride()[d1] if length else 0
    shape = [s for i, s in enumerate(x.shape) if i not in (d1, d2)] + [length]
    strides = [s for i, s in enumerate(x.stride()) if i not in (d1, d2)] + [x.stride()[d1] + x.stride()[d2]]
    return shape, strides, soff


_diagonal.grad(_scatter_back)


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    return _diagonal(input, operator.index(offset), dim1, dim2)


@_view_op("as_strided", "AsStridedBackward0")
def _as_strided(x, size, stride, storage_offset):
    size, stride = _sizes((size,)), _sizes((stride,))
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    soff = x.storage_offset() if storage_offset is None else operator.index(storage_offset)
    if soff < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {soff}")
    need = soff + L.span(size, stride)
    have = x._storage_numel()
    if L.numel(size) and need > have:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {soff}, and "
                           f"itemsize {x.itemsize} requiring a storage size of {need * x.itemsize} are out of bounds "
                           f"for storage of size {have * x.itemsize}")
    return size, stride, soff


@_as_strided.grad
def _as_strided_back(ctx, g, size, stride, storage_offset):
    import numpy as np
    if not ctx.contig:
        raise NotImplementedError("as_strided backward needs a contiguous input with storage offset 0 in rawdev")
    span = [np.arange(s) * st for s, st in zip(size, stride)]
    flat = sum(np.ix_(*span)) if span else np.zeros(())
    if np.unique(np.ravel(flat)).size != np.size(flat):
        raise NotImplementedError("as_strided backward of a view whose elements overlap is not supported in rawdev")
    return _scatter_back(ctx, g, size, stride, storage_offset)


def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    return _as_strided(input, tuple(size), tuple(stride), storage_offset)


# ------------------------------------------------------------------ Tensor.unfold: sliding windows as a view
@_view_op("unfold", "UnfoldBackward0")
def _unfold_view(x, dim, size, step):
    d = wrap_dim(dim, x.ndim) if x.ndim else 0
    length = x.shape[d] if x.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    stride = x.stride()[d] if x.ndim else 1
    shape = list(x.shape) if x.ndim else []
    strides = list(x.stride()) if x.ndim else []
    if x.ndim:
        shape[d] = (length - size) // step + 1
        strides[d] = stride * step
    return shape + [size], strides + [stride], x.storage_offset()


@_unfold_view.grad
def _unfold_back(ctx, g, dim, size, step):
    """Windows overlap when step < size: each input element collects the gradient of every window holding it."""
    z = zeros(ctx.shape, dtype=g.dtype, device=g.device)
    if not len(ctx.shape):
        return z + g.reshape(())
    d = wrap_dim(dim, len(ctx.shape))
    n = g.shape[d]
    for j in range(size):
        part = z.narrow(d, j, (n - 1) * step + 1)
        idx = (slice(None),) * d + (slice(None, None, step),)
        part[idx] += g.select(-1, j)
    return z


def tensor_unfold(self, dimension, size, step):
    """The size-long windows of `dimension`, step apart, as a new last dimension (a view).

    Example:
        >>> torch.arange(5.).unfold(0, 2, 1)
        tensor([[0., 1.],
                [1., 2.],
                [2., 3.],
                [3., 4.]])
    """
    return _unfold_view(self, operator.index(dimension), operator.index(size), operator.index(step))


def unbind(input, dim=0):  # noqa: A002
    d = wrap_dim(dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input.shape[d]))


declare("narrow", narrow, family="slice_views")
declare("select", select, family="slice_views")
declare("diagonal", diagonal, family="slice_views")
declare("as_strided", as_strided, family="slice_views")
declare("unbind", unbind, family="slice_views")
