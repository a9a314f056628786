"""Indexing: x[...] and x[...] = v with PyTorch's basic indexing — ints, slices with positive steps, None
and ... on every axis — as views of the same storage (SliceBackward0 / SelectBackward0 in the graph).

Assignment writes through the view into the base: a strided copy on cuda, numpy on the cpu.
"""
import operator

import numpy as np

from ..autograd.function import Function
from ..tensor.core import Tensor
from ..tensor.factory import zeros
from .dispatch import backend, backend_of
from .registry import declare
from ..autograd.grad_mode import is_grad_enabled
from .shape import _view_op, make_view, reshape, wrap_dim

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


def check_graph_write(self, value):
    """PyTorch's error for an indexed write into a leaf that requires grad; rawdev's for writes that would need
    CopySlices in the graph."""
    if is_grad_enabled() and (self.requires_grad or isinstance(value, Tensor) and value.requires_grad):
        if self.requires_grad and self.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise NotImplementedError("rawdev's autograd does not record indexed writes (CopySlices): assigning into "
                                  "a tensor that is part of a graph, or a value that requires grad, needs "
                                  "torch.no_grad() or an out-of-place formulation")


def setitem(self, idx, value):
    """x[idx] = value (a tensor broadcast to the selection, or a number): written into x's storage."""
    check_graph_write(self, value)
    split = _split_advanced(self, idx)
    if split is not None:           # one index tensor / list / mask: an index_copy_ into the basic view
        basic, t, d = split
        view = make_view(self, basic_index_meta(self, basic))
        _put_along(view, d, t, value, accumulate=False)
        return
    view = make_view(self, basic_index_meta(self, idx))
    if isinstance(value, Tensor):
        view._write(value)     # copy_'s semantics: cast, broadcast, and any device
    elif np.ndim(value) == 0:
        view.fill_(value)
    else:
        view._write(Tensor._from_values(value, self.dtype))


def _put_along(view, d, t, value, accumulate):
    """view[..., t, ...] (=|+=) value along dim d: t an int index of any shape or a 1-D mask."""
    if t.dtype.name == "bool":
        t = _mask_to_index(t, view.shape[d])
    idx = _index_vector(t.reshape(-1), "index_put_", view.device)
    want = list(view.shape)
    want[d] = idx.numel()
    src = value if isinstance(value, Tensor) else Tensor._from_values(np.asarray(value), view.dtype)
    if src.device != view.device:
        src = src.to(view.device)
    lead = tuple(view.shape[:d]) + tuple(t.shape) + tuple(view.shape[d + 1:])   # value broadcasts to x[idx]'s shape
    src = src.expand(lead).reshape(want)
    _write_along(view, d, idx, src, accumulate)


def index_put_(input, indices, values, accumulate=False):  # noqa: A002
    """input[indices] = values (or += with accumulate, where repeated indices add up), in place."""
    check_graph_write(input, values)
    split = _split_advanced(input, tuple(indices))
    if split is None:
        setitem(input, tuple(indices), values)
        return input
    basic, t, d = split
    _put_along(make_view(input, basic_index_meta(input, basic)), d, t, values, accumulate)
    return input


# ------------------------------------------------------------------ indexing along a dim with an index vector
def _layout(x, d):
    shape = tuple(x.shape)
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = 1
    for s in shape[d + 1:]:
        inner *= s
    return outer, (shape[d] if shape else 1), inner


def _index_vector(index, op, device):
    """An int64 index as a contiguous vector on `device` (PyTorch's dtype and rank errors)."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype.name not in ("int64", "int32"):
        raise IndexError(f"{op}(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    if index.device != device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{device} and {index.device}! (when checking argument for argument index in method "
                           f"wrapper_CUDA__{op})")
    if index.dtype.name == "int32":
        if index.is_cuda:
            raise NotImplementedError(f"{op}() with an int32 index on cuda: rawdev's index kernels read int64 "
                                      f"(use index.long())")
        index = index.long()
    return index.reshape(-1).contiguous().detach()


def _write_along(dst, d, idx, src, accumulate):
    """dst[..., idx[j], ...] (=|+=) src[..., j, ...] along dim d, dst any layout (a strided dst is updated
    through a contiguous copy that is written back)."""
    work = dst if dst.is_contiguous() else dst._contiguous_copy("index write")
    outer, size, inner = _layout(work, d)
    B = backend("index_put_", work, src)
    src = src if src.dtype is work.dtype else src.to(work.dtype)
    (B.index_add_ if accumulate else B.index_copy_)(work, outer, size, inner, idx, src.contiguous())
    if work is not dst:
        dst._write(work)
    else:
        dst._bump_version() if dst.is_cpu else None


class _IndexSelect(Function):
    node_name = "IndexSelectBackward0"

    @staticmethod
    def forward(ctx, x, d, idx):
        outer, size, inner = _layout(x, d)
        ctx.shape, ctx.d = x.shape, d
        ctx.save_for_backward(idx)
        out = backend("index_select", x, idx).index_select(x, outer, size, inner, idx)
        shape = list(x.shape)
        if shape:
            shape[d] = idx.numel()
        return out.reshape(shape)

    @staticmethod
    def backward(ctx, g):       # a scatter-add of the rows back (atomics on cuda)
        idx, = ctx.saved_tensors
        gx = zeros(ctx.shape, dtype=g.dtype, device=g.device)
        _write_along(gx, ctx.d, idx, g, accumulate=True)
        return gx, None, None

    @staticmethod
    def backward_graph(ctx, g):   # the scatter-add recorded; its adjoint is index_select again
        from ..autograd.function import linear_backward
        idx, = ctx.saved_tensors
        shape, d = ctx.shape, ctx.d

        def bwd(t):
            gx = zeros(shape, dtype=t.dtype, device=t.device)
            _write_along(gx, d, idx, t, accumulate=True)
            return gx
        return linear_backward(g, bwd, lambda gg: _IndexSelect.apply(gg, d, idx)), None, None


def index_select(input, dim, index):  # noqa: A002
    """The slices of input at `index` (an int64 vector) along dim; gradient: their rows added back."""
    d = wrap_dim(dim, input.ndim)
    return _IndexSelect.apply(input, d, _index_vector(index, "index_select", input.device))


class _IndexPut(Function):
    """input with source written (or added) at index along a dim: out of place, so autograd can see it."""

    @staticmethod
    def forward(ctx, x, d, idx, src, accumulate, alpha):
        ctx.d, ctx.accumulate, ctx.alpha = d, accumulate, alpha
        ctx.save_for_backward(idx)
        out = x._contiguous_copy("index_put output")
        _write_along(out, d, idx, src if alpha == 1 else src * alpha, accumulate)
        return out

    @staticmethod
    def backward(ctx, g):
        idx, = ctx.saved_tensors
        gx = g
        if not ctx.accumulate:          # the overwritten slices take no gradient back to input
            gx = g._contiguous_copy("index_copy grad")
            outer, size, inner = _layout(gx, ctx.d)
            z = zeros((outer, idx.numel(), inner), dtype=g.dtype, device=g.device)
            backend_of(gx).index_copy_(gx, outer, size, inner, idx, z)
        gs = _IndexSelect.apply(g, ctx.d, idx) if ctx.needs_input_grad[3] else None
        if gs is not None and ctx.alpha != 1:
            gs = gs * ctx.alpha
        return gx, None, None, gs, None, None


def _index_put(input, dim, index, source, accumulate, alpha, op):  # noqa: A002
    d = wrap_dim(dim, input.ndim)
    idx = _index_vector(index, op, input.device)
    want = list(input.shape)
    if want:
        want[d] = idx.numel()
    if tuple(source.shape) != tuple(want) and not (source.ndim == 0 and idx.numel() == 1):
        raise RuntimeError(f"{op}(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {want} at dimension {d} and source slice shape: {list(source.shape)} at dimension "
                           f"{d}.")
    out = _IndexPut.apply(input, d, idx, source.reshape(want), accumulate, alpha)
    if out.grad_fn is not None:
        out.grad_fn.rename("IndexAddBackward0" if accumulate else "IndexCopyBackward0")
    return out


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """input with alpha * source added at `index` along dim (repeated indices add up)."""
    return _index_put(input, dim, index, source, True, alpha, "index_add")


def index_copy(input, dim, index, source):  # noqa: A002
    """input with source's slices written at `index` along dim."""
    return _index_put(input, dim, index, source, False, 1, "index_copy")


# ------------------------------------------------------------------ advanced indexing (one index tensor)
def _as_index_tensor(i, device):
    """An advanced index entry (int/bool tensor, list, numpy array) as a tensor, or None for a basic one."""
    if isinstance(i, Tensor):
        if i.ndim == 0 and i.dtype.name != "bool":
            return None
        return i
    if isinstance(i, (list, np.ndarray)):
        from ..tensor.factory import tensor
        return tensor(i, device=device)
    return None


def _split_advanced(x, idx):
    """(basic index with the advanced entry as a full slice, advanced tensor, its position among the view's dims)
    or None when idx is basic; NotImplementedError for several advanced entries."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    adv = [(k, t) for k, t in ((k, _as_index_tensor(e, x.device)) for k, e in enumerate(entries)) if t is not None]
    if not adv:
        return None
    if len(adv) > 1:
        raise NotImplementedError("rawdev's advanced indexing takes one index tensor (or list, or mask) combined "
                                  "with basic indices; index one dimension at a time")
    k, t = adv[0]
    if t.dtype.name == "bool" and t.ndim != 1:
        raise NotImplementedError("rawdev's boolean-mask indexing takes a 1-D mask (flatten the masked dims first)")
    basic = entries[:k] + (slice(None),) + entries[k + 1:]
    # the advanced entry's dim in the basic view: every earlier entry but ints keeps or adds a dim
    pos = 0
    for e in entries[:k]:
        if e is Ellipsis:
            used = sum(1 for q in entries if q is not None and q is not Ellipsis)
            pos += x.ndim - used
        elif not _is_int(e):
            pos += 1
    return basic, t, pos


def _mask_to_index(mask, size):
    if mask.numel() != size:
        raise IndexError(f"The shape of the mask [{mask.numel()}] at index 0 does not match the shape of the indexed "
                         f"tensor [{size}] at index 0")
    from ..tensor.factory import tensor
    # the count of True entries decides the result's shape: a host read, as in PyTorch (a sync on cuda)
    return tensor(np.flatnonzero(np.asarray(mask.detach().cpu())), device=mask.device)


def getitem(self, idx):
    """x[idx]: a view for basic indices (SliceBackward0 / SelectBackward0); with one index tensor, list or 1-D
    mask, the selected slices (index_select, IndexBackward0 in the graph)."""
    split = _split_advanced(self, idx)
    if split is None:
        out = _index(self, idx)
        if out.grad_fn is not None and _is_int(idx):
            out.grad_fn.rename("SelectBackward0")
        return out
    basic, t, d = split
    view = _index(self, basic)
    if t.dtype.name == "bool":
        t = _mask_to_index(t, view.shape[d])
    flat = t.reshape(-1)
    out = index_select(view, d, flat)
    shape = tuple(view.shape[:d]) + tuple(t.shape) + tuple(view.shape[d + 1:])
    out = reshape(out, shape)
    if out.grad_fn is not None:
        out.grad_fn.rename("IndexBackward0")
    return out


def _index_add_(self, dim, index, source, *, alpha=1):
    check_graph_write(self, source)
    d = wrap_dim(dim, self.ndim)
    _write_along(self, d, _index_vector(index, "index_add_", self.device), source if alpha == 1 else source * alpha,
                 accumulate=True)
    return self


def _index_copy_(self, dim, index, source):
    check_graph_write(self, source)
    d = wrap_dim(dim, self.ndim)
    _write_along(self, d, _index_vector(index, "index_copy_", self.device), source, accumulate=False)
    return self


declare("index_select", index_select, family="index")
declare("index_add", index_add, family="index")
declare("index_copy", index_copy, family="index")
declare("index_add_", _index_add_, family="index", torch=False)
declare("index_copy_", _index_copy_, family="index", torch=False)
declare("index_put_", index_put_, family="index")
