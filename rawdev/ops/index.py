"""Indexing: x[...] and x[...] = v with PyTorch's basic indexing — ints, slices with positive steps, None
and ... on every axis — as views of the same storage (SliceBackward0 / SelectBackward0 in the graph).

Assignment writes through the view into the base: a strided copy on cuda, numpy on the cpu.
"""
import operator

import numpy as np

from ..autograd.function import Function, mark_rewritten
from ..autograd.grad_mode import is_grad_enabled
from ..tensor.core import Tensor
from .copy_slices import SlicePut as _SlicePut
from .copy_slices import replay_as_strided
from .dispatch import backend
from .index_along_dim.functions import _write_along, index_select
from .inplace import check_graph_write, check_inplace_graph
from .overlap import assert_no_internal_overlap
from .registry import declare
from .shape import _view_op, make_view, reshape

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


def _strip_leading_ones(value):
    """PyTorch's slicePrefix1sSize: a value written by x[idx] = value loses its leading size-1 dims first, so
    x[0] = ones(1, 4) fills a row of a (3, 4) tensor."""
    if not isinstance(value, Tensor) or value.ndim == 0:
        return value
    k = 0
    while k < value.ndim and value.shape[k] == 1:
        k += 1
    return reshape(value, tuple(value.shape[k:])) if k else value


def setitem(self, idx, value):
    """x[idx] = value (a tensor broadcast to the selection, or a number): written into x's storage. Under grad
    mode a write that involves the graph (x in it, or a value that requires grad) is recorded: x takes over a
    CopySlices node (basic index) or an IndexPutBackward0 node (index tensors, lists, ranges, masks)."""
    idx = _sequence_index(idx)
    value = _strip_leading_ones(value)
    plan = _plan_advanced(self, idx)
    if plan is not None and check_inplace_graph(self, (value,)):   # recorded: IndexPutBackward0
        _put_recorded(self, plan, value, False)
        return
    if plan is None and is_grad_enabled() and self.requires_grad and self.grad_fn is None:
        check_graph_write(self, value)     # the write goes through a view of the leaf: PyTorch's view wording
    if plan is None and self._base is not None and _write_through_view(self, idx, value):
        return                                                    # recorded on the viewed tensor: CopySlices
    if plan is None and check_inplace_graph(self, (value,)):       # recorded: CopySlices
        from .inplace import apply_inplace
        view = make_view(self, basic_index_meta(self, idx))       # PyTorch's broadcast errors before anything
        v = _values_for(self, value)
        v.expand(tuple(view.shape)) if v.ndim else None
        apply_inplace(self, lambda x, val: _SlicePut.apply(x, val, lambda t: basic_index_meta(t, idx)), "copy_",
                      (v,), {})
        return
    check_graph_write(self, value)
    if plan is not None:            # index tensors / lists / masks: an index_copy_ into the basic view
        assert_no_internal_overlap(self)
        _put_advanced(self, plan, value, accumulate=False)
        return
    view = make_view(self, basic_index_meta(self, idx))
    if isinstance(value, Tensor) or np.ndim(value) != 0:
        assert_no_internal_overlap(view)   # copy_ into an expanded selection: PyTorch refuses (a number fills)
    if isinstance(value, Tensor):
        if value.ndim:
            value.expand(tuple(view.shape))   # PyTorch's expand error for a value that does not fit
        view._write(value)     # copy_'s semantics: cast, broadcast, and any device
    elif np.ndim(value) == 0:
        view.fill_(value)
    else:
        view._write(Tensor._from_values(value, self.dtype))


def _write_through_view(self, idx, value):
    """x[idx] = value where x is a view of a tensor in the graph (`z[0][1] = w`, `row = z[0]; row[1:] = v`):
    PyTorch's CopySlices on the base. The base takes over the write (its written places take no gradient back
    to its old history), and x becomes a view of the new base again. Done for a contiguous base with storage
    offset 0 (an op's result); False when there is nothing to record."""
    base = self._base
    if base is None or not is_grad_enabled():
        return False
    if not (self.requires_grad or base.requires_grad or isinstance(value, Tensor) and value.requires_grad):
        return False
    if base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if not (base.is_contiguous() and base.storage_offset() == 0):
        raise NotImplementedError("rawdev records an indexed write into a view of a tensor in the graph "
                                  "(PyTorch's CopySlices) when the viewed tensor is contiguous; write into it "
                                  "directly, or under torch.no_grad()")
    from .inplace import apply_inplace
    from .slice_views import as_strided
    shape, strides, soff = basic_index_meta(self, idx)        # the written places, in the base's storage
    view = make_view(self, (shape, strides, soff))
    v = _values_for(self, value)
    v.expand(tuple(view.shape)) if v.ndim else None          # PyTorch's broadcast errors before anything
    apply_inplace(base, lambda b, val: _SlicePut.apply(b, val, lambda t: (shape, strides, soff)), "copy_", (v,),
                  {})
    fresh = as_strided(base, tuple(self.shape), tuple(self.stride()), self.storage_offset())
    self.grad_fn, self._requires_grad = fresh.grad_fn, True
    self.__dict__["_output_nr"] = 0
    mark_rewritten(base, self, replay_as_strided)
    return True


def _sequence_index(idx):
    """A range index (or a range inside a tuple index) as the list of ints PyTorch reads it as."""
    if isinstance(idx, range):
        return list(idx)
    if isinstance(idx, tuple) and any(isinstance(i, range) for i in idx):
        return tuple(list(i) if isinstance(i, range) else i for i in idx)
    return idx


def index_put_(input, indices, values, accumulate=False):  # noqa: A002
    """input[indices] = values (or += with accumulate, where repeated indices add up), in place."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    plan = _plan_advanced(input, tuple(indices))
    if plan is not None and check_inplace_graph(input, (values,)):
        _put_recorded(input, plan, values, accumulate)
        return input
    check_graph_write(input, values)
    assert_no_internal_overlap(input)
    if plan is None:
        setitem(input, tuple(indices), values)
        return input
    _put_advanced(input, plan, values, accumulate)
    return input


# ------------------------------------------------------------------ advanced indexing (index tensors, lists, masks)
def _as_index_tensor(i, device):
    """An advanced index entry (int/bool tensor, list, numpy array) as a tensor, or None for a basic one."""
    if isinstance(i, Tensor):
        if i.ndim == 0 and i.dtype.name != "bool":
            return None
        return i
    if isinstance(i, (list, np.ndarray)):
        from ..tensor.factory import tensor
        if isinstance(i, list) and np.size(i) == 0:
            return tensor(np.zeros(np.shape(i), np.int64), device=device)   # x[[]]: an empty long index
        return tensor(i, device=device)
    return None


def _plan_advanced(x, idx):
    """None for a basic index; else (basic index with every advanced entry as full slices, the view dims the index
    tensors address, the int64 index tensors, whether the result dims stay in place). PyTorch's rule: ints select
    first; the indexed dims' result goes where they were when the index tensors sit next to each other, else first.
    A k-dim boolean mask counts as k index tensors (its nonzero positions) over k consecutive dims."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    conv = [(e, _as_index_tensor(e, x.device)) for e in entries]
    if all(t is None for _, t in conv):
        return None
    for e, t in conv:
        if t is None and not (e is None or e is Ellipsis or isinstance(e, slice) or _is_int(e)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             "valid indices (got " + type(e).__name__ + ")")
        if t is not None and t.dtype.name not in ("bool", "uint8", "int64", "int32", "int16", "int8"):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if sum(1 for e, _ in conv if e is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")

    def consumed(e, t):
        if t is not None:
            return t.ndim if t.dtype.name in ("bool", "uint8") else 1
        return 0 if e is None or e is Ellipsis else 1
    used = sum(consumed(e, t) for e, t in conv)
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    basic, marks, tensors, xdim = [], [], [], 0
    for e, t in conv:
        if t is None:
            if e is Ellipsis:
                n = x.ndim - used
                basic += [slice(None)] * n
                marks += ["b"] * n
                xdim += n
            else:
                basic.append(e)
                if not _is_int(e):
                    marks.append("b")
                if e is not None:
                    xdim += 1
            continue
        if t.dtype.name in ("bool", "uint8"):
            k = t.ndim
            want = tuple(x.shape[xdim:xdim + k])
            for j in range(k):
                if t.shape[j] != want[j]:
                    raise IndexError(f"The shape of the mask {list(t.shape)} at index {j} does not match the shape of "
                                     f"the indexed tensor {list(x.shape)} at index {xdim + j}")
            from ..tensor.factory import tensor
            # the count of True entries decides the result's shape: a host read, as in PyTorch (a sync on cuda)
            for pos in np.nonzero(np.asarray(t.detach().cpu()).astype(bool)):
                tensors.append(tensor(pos.astype(np.int64), device=x.device))
                marks.append("a")
            basic += [slice(None)] * k
            xdim += k
            continue
        if t.device != x.device:
            t = t.to(x.device)
        tensors.append(t.long() if t.dtype.name != "int64" else t)
        marks.append("a")
        basic.append(slice(None))
        xdim += 1
    dims = [k for k, m in enumerate(marks) if m == "a"]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims))) if dims else True
    return tuple(basic), dims, tensors, adjacent


def _linear_index(view, dims, tensors):
    """(broadcast shape B of the index tensors, a [prod(B)] int64 vector of positions in the indexed dims)."""
    shapes = [tuple(t.shape) for t in tensors]
    try:
        B = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " +
                         ", ".join(str(list(s)) for s in shapes)) from None
    flat = [t.detach().expand(B).reshape(-1) for t in tensors]
    if len(flat) == 1:
        return B, flat[0].contiguous()        # the index kernels wrap negatives and check the range themselves
    from .join import stack
    sizes = [view.shape[d] for d in dims]
    return B, backend("index", flat[0]).linear_index(stack(flat).contiguous(), sizes)


def _adv_order(nb, before, ndim):
    """The permutation that moves the first nb dims (the index result) after the next `before` dims."""
    return list(range(nb, nb + before)) + list(range(nb)) + list(range(nb + before, ndim))


def getitem(self, idx):
    """x[idx]: a view for basic indices (SliceBackward0 / SelectBackward0); with index tensors, lists or masks,
    the selected elements (index_select over the indexed dims, IndexBackward0 in the graph; its gradient is an
    index_put with accumulate: atomics on cuda)."""
    idx = _sequence_index(idx)
    plan = _plan_advanced(self, idx)
    if plan is None:
        out = _index(self, idx)
        if out.grad_fn is not None and _is_int(idx):
            out.grad_fn.rename("SelectBackward0")
        return out
    return _get_advanced(self, plan, "IndexBackward0")


def _get_advanced(self, plan, node=None):
    basic, dims, tensors, adjacent = plan
    view = _index(self, basic)
    B, lin = _linear_index(view, dims, tensors)
    if len(dims) == 1:
        d = dims[0]
        out = index_select(view, d, lin)
        out = reshape(out, tuple(view.shape[:d]) + B + tuple(view.shape[d + 1:]))
        if node and out.grad_fn is not None:
            out.grad_fn.rename(node)
    else:
        others = [k for k in range(view.ndim) if k not in dims]
        perm = dims + others
        xp = view.permute(perm) if perm != list(range(view.ndim)) else view
        P = 1
        for d in dims:
            P *= view.shape[d]
        rest = tuple(view.shape[k] for k in others)
        out = reshape(index_select(reshape(xp, (P,) + rest), 0, lin), B + rest)
        if node and out.grad_fn is not None:
            out.grad_fn.rename(node)
        if adjacent and dims[0] > 0:
            out = out.permute(_adv_order(len(B), dims[0], out.ndim))
    return out


def _put_advanced(self, plan, value, accumulate):
    """self[plan] (=|+=) value: value broadcast to the indexing result's shape."""
    basic, dims, tensors, adjacent = plan
    view = make_view(self, basic_index_meta(self, basic))
    B, lin = _linear_index(view, dims, tensors)
    src = value if isinstance(value, Tensor) else Tensor._from_values(np.asarray(value), self.dtype)
    if src.device != self.device:
        src = src.to(self.device)
    if len(dims) == 1:
        d = dims[0]
        result = tuple(view.shape[:d]) + B + tuple(view.shape[d + 1:])
    else:
        others = [k for k in range(view.ndim) if k not in dims]
        rest = tuple(view.shape[k] for k in others)
        moved = adjacent and dims[0] > 0
        result = (rest[:dims[0]] + B + rest[dims[0]:]) if moved else B + rest
    try:
        src = src.expand(result)
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(src.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(result)}") from None
    if lin.numel() == 0:
        return
    if len(dims) == 1:
        want = list(view.shape)
        want[d] = lin.numel()
        _write_along(view, d, lin, src.reshape(want), accumulate)
        return
    if moved:                           # back to the index-dims-first order
        order = _adv_order(len(B), dims[0], len(result))
        src = src.permute([order.index(k) for k in range(len(order))])
    src = src.reshape((lin.numel(),) + rest)
    xp = view.permute(dims + others)
    work = xp if xp.is_contiguous() else xp._contiguous_copy("index_put work copy")
    P = 1
    for d in dims:
        P *= view.shape[d]
    flat = make_view(work, ((P,) + rest, list(_contig_strides((P,) + rest)), work.storage_offset()))
    _write_along(flat, 0, lin, src, accumulate)
    if work is not xp:
        xp._write(work)


class _IndexPutAdv(Function):
    """input with values written (or added) at an advanced index, out of place: IndexPutBackward0."""
    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, values, plan, accumulate):
        ctx.plan, ctx.accumulate, ctx.vshape = plan, accumulate, tuple(values.shape)
        out = x._contiguous_copy("index_put output")
        _put_advanced(out, plan, values, accumulate)
        return out

    @staticmethod
    def backward(ctx, g):
        from ..autograd.grad_mode import no_grad
        from .shape import sum_to
        with no_grad():
            gx = g
            if not ctx.accumulate:      # the overwritten places take no gradient back to input
                gx = g._contiguous_copy("index_put grad")
                _put_advanced(gx, ctx.plan, 0, False)
            gv = sum_to(_get_advanced(g, ctx.plan), ctx.vshape) if ctx.needs_input_grad[1] else None
        return gx, gv, None, None


def _values_for(input, values):  # noqa: A002
    v = values if isinstance(values, Tensor) else Tensor._from_values(np.asarray(values), input.dtype)
    if v.device != input.device:
        v = v.to(input.device)
    return v if v.dtype is input.dtype else v.to(input.dtype)


def _put_recorded(self, plan, values, accumulate):
    """self[plan] (=|+=) values in place, recorded in the graph (self takes over the IndexPut node)."""
    from .inplace import apply_inplace
    apply_inplace(self, lambda x, v: _IndexPutAdv.apply(x, v, plan, accumulate), "index_put_",
                  (_values_for(self, values),), {})


def index_put(input, indices, values, accumulate=False):  # noqa: A002
    """input with values written at indices (a tuple of index tensors / masks), or added with accumulate (repeated
    indices add up); out of place, with gradients for input and values."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    if isinstance(values, Tensor) and values.dtype is not input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{input.dtype.name.capitalize()} for the destination and "
                           f"{values.dtype.name.capitalize()} for the source.")
    plan = _plan_advanced(input, tuple(indices))
    if plan is None:
        from ..autograd.grad_mode import no_grad
        out = input._contiguous_copy("index_put output")
        with no_grad():
            index_put_(out, indices, values, accumulate)
        return out
    return _IndexPutAdv.apply(input, _values_for(input, values), plan, accumulate)


def _contig_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


declare("index_put_", index_put_, family="index")
declare("index_put", index_put, family="index")
