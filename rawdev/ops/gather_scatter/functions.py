"""gather / scatter along a dim, PyTorch's: gather, scatter(_) (src or value, reduce='add'|'multiply'),
scatter_add(_), scatter_reduce(_) (sum, prod, mean, amax, amin; include_self), take_along_dim, take; and, composed
from declared ops, select/slice/diagonal_scatter, put(_) and F.one_hot.

The operand indexed along `dim` is narrowed to the index's sizes in the other dims (a view) and seen as
[outer, size, inner]; the index, the gathered output and the scattered source as [outer, nidx, inner]. cuda runs
gather_scatter.ptx (gathers, scatters, atomic adds, compare-and-swap prod/amax/amin; an index out of range is a
device-side assert), cpu runs numpy (PyTorch's RuntimeError). Gradients: gather's is a scatter-add of the
gradient (atomics on cuda), scatter_add's source gradient is a gather, scatter's input gradient is the gradient
with the overwritten places zeroed; amax/amin split the gradient evenly among the tying maxima, as PyTorch's.
"""
import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...tensor import factory
from ...tensor.core import Tensor
from ...tensor.factory import full, ones, zeros
from ..dispatch import backend
from ..index import getitem
from ..index_along_dim.functions import _layout, index_select
from ..registry import declare
from ..shape import make_view, wrap_dim

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "take_along_dim", "take"]

_IDENTITY = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}


def _identity(reduce, dt):
    """The value a place starts from when include_self=False: the reduction's identity in dtype dt."""
    if reduce in ("amax", "amin") and not dt.is_floating_point:
        from ... import dtypes as _dt
        info = _dt.iinfo(dt)
        return info.min if reduce == "amax" else info.max
    return _IDENTITY[reduce]


def _narrow(x, shape, d):
    """The view x[:shape[0], ..., :, ..., :shape[-1]] (all of dim d) of a tensor with x.ndim == len(shape)."""
    if x.ndim == 0:
        return x
    shp = [s if k != d else x.shape[k] for k, s in enumerate(shape)]
    if tuple(shp) == tuple(x.shape):
        return x
    return make_view(x, (shp, list(x.stride()), x.storage_offset()))


def _as_1d(x):
    return x.reshape(1) if x.ndim == 0 else x


def _check_index(op, index):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype.name not in ("int64", "int32"):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    return index.long() if index.dtype.name == "int32" else index


def _gather_checks(input, d, index):  # noqa: A002
    if index.ndim != input.ndim and max(index.ndim, 1) != max(input.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if index.device != input.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{input.device} and {index.device}!")
    for k in range(index.ndim):
        if k != d and index.shape[k] > input.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} to be no "
                               f"larger than self {list(input.shape)} apart from dimension {d}")


def _scatter_checks(op, input, d, index, src):  # noqa: A002
    if index.ndim != input.ndim and max(index.ndim, 1) != max(input.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and index.ndim != src.ndim and max(index.ndim, 1) != max(src.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for t in (index, src):
        if t is not None and t.device != input.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{input.device} and {t.device}!")
    if src is not None and src.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    if index.ndim and any((k != d and index.shape[k] > input.shape[k])
                          or (src is not None and index.shape[k] > src.shape[k]) for k in range(index.ndim)):
        tail = f" and to be no larger size than src {list(src.shape)}" if src is not None else ""
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(input.shape)} apart "
                           f"from dimension {d}{tail}")


def _gather_raw(x, d, idx):
    """x gathered at idx (same ndim, no autograd): the output has idx's shape."""
    if idx.numel() == 0:
        return zeros(idx.shape, dtype=x.dtype, device=x.device)
    x1, i1 = _as_1d(x), _as_1d(idx)
    xs = _narrow(x1, i1.shape, d)
    outer, size, inner = _layout(xs, d)
    out = backend("gather", xs, i1).gather_dim(xs.contiguous(), outer, size, inner, i1.contiguous(),
                                               i1.shape[d], d=d)
    return out.reshape(idx.shape)


def _scatter_raw_(dst, d, idx, src, reduce=None):
    """dst[..., idx, ...] (op)= src along d in place (dst any layout, src at least idx's size)."""
    if idx.numel() == 0:
        return dst
    d1, i1 = _as_1d(dst), _as_1d(idx)
    view = _narrow(d1, i1.shape, d)
    s = src if isinstance(src, Tensor) else full(i1.shape, src, dtype=dst.dtype, device=dst.device)
    s = _narrow(_as_1d(s), i1.shape, -1) if s.shape != i1.shape else s
    s = s.reshape(i1.shape) if s.ndim != i1.ndim else s
    if s.dtype is not dst.dtype:
        s = s.to(dst.dtype)
    work = view if view.is_contiguous() else view._contiguous_copy("scatter work copy")
    outer, size, inner = _layout(work, d)
    backend("scatter", work, i1, s).scatter_dim_(work, outer, size, inner, i1.contiguous(), i1.shape[d],
                                                 s.contiguous(), reduce, d=d)
    if work is not view:
        view._write(work)
    return dst


def _zero_at(g, d, idx):
    """g with the places idx points at (along d) set to 0: a fresh tensor."""
    out = g.contiguous().clone() if g.is_contiguous() else g.contiguous()
    return _scatter_raw_(out, d, idx, 0)


def _fit(gs, shape):
    """A gradient of idx's shape padded with zeros to a larger source's shape."""
    if tuple(gs.shape) == tuple(shape):
        return gs
    out = zeros(shape, dtype=gs.dtype, device=gs.device)
    make_view(out, (list(gs.shape), list(out.stride()), 0))._write(gs)
    return out


class _Gather(Function):
    node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, d, idx):
        ctx.shape, ctx.d = x.shape, d
        ctx.save_for_backward(idx)
        return _gather_raw(x, d, idx)

    @staticmethod
    def backward(ctx, g):       # a scatter-add of the gradient (atomics on cuda)
        idx, = ctx.saved_tensors
        gx = zeros(ctx.shape, dtype=g.dtype, device=g.device)
        return _scatter_raw_(gx, ctx.d, idx, g, "sum"), None, None


def gather(input, dim, index, *, sparse_grad=False):  # noqa: A002
    """out[i][j][k] = input[index[i][j][k]][j][k] (dim=0): the output has index's shape."""
    index = _check_index("gather", index)
    d = wrap_dim(dim, input.ndim)
    _gather_checks(input, d, index)
    return _Gather.apply(input, d, index.detach())


class _Scatter(Function):
    """input with src (or a value) scattered at index along d, combined by `reduce`, out of place."""

    @staticmethod
    def forward(ctx, x, d, idx, src, reduce, include_self):
        ctx.d, ctx.reduce, ctx.include_self, ctx.src_shape = d, reduce, include_self, getattr(src, "shape", None)
        out = x.contiguous().clone() if x.is_contiguous() else x.contiguous()
        if reduce is not None and not include_self:
            _scatter_raw_(out, d, idx, _identity(reduce, x.dtype))
        if reduce == "mean":
            _scatter_raw_(out, d, idx, src, "sum")
            count = ones(x.shape, dtype=x.dtype, device=x.device) if include_self else zeros(
                x.shape, dtype=x.dtype, device=x.device)
            _scatter_raw_(count, d, idx, 1, "sum")
            count = count.masked_fill(count == 0, 1)
            out = out / count if x.dtype.is_floating_point else _floor_div(out, count)
            ctx.count = count
        else:
            _scatter_raw_(out, d, idx, src, reduce)
        ctx.save_for_backward(idx, x if reduce in ("prod", "amax", "amin") else None,
                              src if reduce in ("prod", "amax", "amin") and isinstance(src, Tensor) else None,
                              out if reduce in ("prod", "amax", "amin") else None)
        return out

    @staticmethod
    def backward(ctx, g):       # PyTorch's formulas (scatter_reduce_backward)
        idx, x, src, out = ctx.saved_tensors
        d, reduce, shape = ctx.d, ctx.reduce, ctx.src_shape
        need_src = shape is not None and ctx.needs_input_grad[3]
        gs = None
        with no_grad():
            s = _narrow(_as_1d(src), _as_1d(idx).shape, -1).reshape(idx.shape) if src is not None else None
            if reduce is None:
                gx = _zero_at(g, d, idx)
                gs = _gather_raw(g, d, idx) if need_src else None
            elif reduce == "sum":
                gx = g
                gs = _gather_raw(g, d, idx) if need_src else None
            elif reduce == "mean":
                gx = g / ctx.count
                gs = _gather_raw(gx, d, idx) if need_src else None
            elif reduce == "prod":      # exclusive products where an input is 0, as PyTorch's
                mx = x.masked_fill(x == 0, 1)
                gx = g * _Scatter.forward(_Ctx(), mx, d, idx, s, "prod", ctx.include_self) / mx
                if need_src:
                    zero = s == 0
                    nz = zeros(x.shape, dtype=g.dtype, device=g.device)
                    _scatter_raw_(nz, d, idx, zero.to(g.dtype), "sum")
                    single = (zero.to(g.dtype) * (_gather_raw(nz, d, idx) == 1).to(g.dtype)) != 0
                    ms = _Scatter.forward(_Ctx(), x, d, idx, s.masked_fill(single, 1), "prod", ctx.include_self)
                    gs = _where(single, _gather_raw(g * ms, d, idx), _gather_raw(g * out, d, idx)
                                / s.masked_fill(zero, 1))
            else:                       # amax / amin: the gradient split evenly among the values equal to the result
                x_hit = (x == out).to(g.dtype)
                s_hit = (s == _gather_raw(out, d, idx)).to(g.dtype)
                n = x_hit.clone()
                _scatter_raw_(n, d, idx, s_hit, "sum")
                share = g / n
                gx = x_hit * share
                gs = s_hit * _gather_raw(share, d, idx) if need_src else None
            if reduce is not None and not ctx.include_self:
                gx = _zero_at(gx, d, idx)
            if gs is not None:
                gs = _fit(gs, shape)
        return gx, None, None, gs, None, None


def _floor_div(a, b):
    return backend("scatter_reduce", a, b).floor_divide_int(a, b)


class _Ctx:
    def save_for_backward(self, *ts):
        pass


def _where(c, a, b):
    from ..select.functions import where
    return where(c, a, b)


_NODE = {None: "ScatterBackward0", "sum": "ScatterAddBackward0"}


def _scatter(op, input, dim, index, src, reduce, include_self=True, node=None):  # noqa: A002
    index = _check_index(op, index)
    d = wrap_dim(dim, input.ndim)
    _scatter_checks(op, input, d, index, src if isinstance(src, Tensor) else None)
    out = _Scatter.apply(input, d, index.detach(), src, reduce, include_self)
    if out.grad_fn is not None:
        out.grad_fn.rename(node or _NODE.get(reduce, "ScatterReduceBackward0"))
    return out


def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """input with src's entries (or `value`) written at index along dim: out[index[i][j]][j] = src[i][j] (dim=0);
    reduce='add' | 'multiply' combines instead of overwriting."""
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if (src is None) == (value is None):
        raise TypeError("scatter() missing 1 required positional arguments: \"src\" (or value)")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    red = {None: None, "add": "sum", "multiply": "prod"}[reduce]
    node = ("ScatterBackward0" if src is not None else "ScatterBackward1") if red is None else \
        ("ScatterReduceBackward0" if src is not None else "ScatterReduceBackward1")
    return _scatter("scatter", input, dim, index, src if src is not None else value, red, node=node)


def scatter_add(input, dim, index, src):  # noqa: A002
    """input with src added at index along dim (repeated indices add up)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not {type(src).__name__}")
    return _scatter("scatter_add", input, dim, index, src, "sum")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """input with src combined in at index along dim by reduce: sum, prod, mean, amax or amin (include_self:
    whether input's own values take part)."""
    if reduce not in _IDENTITY:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    return _scatter("scatter_reduce", input, dim, index, src, reduce, include_self)


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """input's values at indices along dim (input and indices broadcast against each other apart from dim);
    dim=None: along the flattened input. Negative indices count from the end."""
    indices = _check_index("take_along_dim", indices)
    if dim is None:
        return take_along_dim(input.reshape(-1), indices.reshape(-1), 0)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = wrap_dim(dim, input.ndim)
    ishape, xshape = list(indices.shape), list(input.shape)
    ishape[d] = xshape[d] = 1
    b = list(np.broadcast_shapes(tuple(ishape), tuple(xshape)))
    bx, bi = list(b), list(b)
    bx[d], bi[d] = input.shape[d], indices.shape[d]
    idx = indices.detach()
    if idx.numel():    # negative entries count from the end (PyTorch wraps them before its gather)
        size = input.shape[d] if input.ndim else 1
        idx = backend("take_along_dim", idx).linear_index(idx.reshape(1, -1).contiguous(), [size], [d]) \
            .reshape(idx.shape)
    out = gather(input.expand(bx), d, idx.expand(bi))
    if out.grad_fn is not None:
        out.grad_fn.rename("TakeAlongDimBackward0")
    return out


def take(input, index):  # noqa: A002
    """input's values at index into the flattened input (the output has index's shape; negatives count from the
    end)."""
    if not isinstance(index, Tensor):
        raise TypeError(f"take(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype.name != "int64":
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {str(index.dtype).split('.')[-1]}")
    n = input.numel()
    bad = backend("take", index).first_out_of_range(index.detach(), n) if index.numel() else None
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    out = index_select(input.reshape(-1), 0, index.reshape(-1).detach()).reshape(index.shape)
    if out.grad_fn is not None:
        out.grad_fn.rename("TakeBackward0")
    return out


# ------------------------------------------------------------------ masks and filled slices
def masked_select(input, mask):  # noqa: A002
    """The elements of input where mask (broadcast together) is True, as a 1-D tensor (a host read of the mask
    decides the length, a sync on cuda as in PyTorch)."""
    if not isinstance(mask, Tensor) or mask.dtype.name != "bool":
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    from ..promotion import _bcast_shape
    shape = _bcast_shape(input, mask)
    out = getitem(input.expand(shape), (mask.expand(shape),))
    out = out.reshape(-1)
    if out.grad_fn is not None:
        out.grad_fn.rename("MaskedSelectBackward0")
    return out


class _MaskedScatter(Function):
    node_name = "MaskedScatterBackward0"

    @staticmethod
    def forward(ctx, x, pos, src):
        ctx.pos, ctx.src_shape = pos, src.shape
        out = x.contiguous().clone() if x.is_contiguous() else x.contiguous()
        if pos.numel():
            _put_flat(out, pos, src.reshape(-1)[:pos.numel()])
        return out

    @staticmethod
    def backward(ctx, g):
        pos = ctx.pos
        with no_grad():
            gx = g.contiguous().clone()
            gs = zeros((int(np.prod(ctx.src_shape)),), dtype=g.dtype, device=g.device)
            if pos.numel():
                _put_flat(gx, pos, zeros((pos.numel(),), dtype=g.dtype, device=g.device))
                gs[:pos.numel()] = index_select(g.reshape(-1), 0, pos)
        return gx, None, gs.reshape(ctx.src_shape)


def _put_flat(out, pos, vals):
    """out.view(-1)[pos] = vals (out contiguous)."""
    from ..index_along_dim.functions import _write_along
    _write_along(out.reshape(-1), 0, pos, vals, accumulate=False)


def masked_scatter(input, mask, source):  # noqa: A002
    """input with source's leading elements written, in order, where mask (broadcast to input) is True."""
    if not isinstance(mask, Tensor) or mask.dtype.name != "bool":
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(getattr(mask, 'dtype', None), 'name', type(mask).__name__)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{input.dtype.name.capitalize()} and {source.dtype.name.capitalize()}")
    m = np.asarray(mask.detach().cpu()).astype(bool)     # the positions: a host read of the mask
    m = np.broadcast_to(m, tuple(input.shape))
    flat = np.flatnonzero(m)
    if flat.size > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    from ...tensor.factory import tensor
    return _MaskedScatter.apply(input, tensor(flat.astype(np.int64), device=input.device), source)


class _IndexFill(Function):
    node_name = "IndexFillBackward0"

    @staticmethod
    def forward(ctx, x, d, idx, value):
        from ..index_along_dim.functions import _write_along
        ctx.d = d
        ctx.save_for_backward(idx)
        out = x.contiguous().clone() if x.is_contiguous() else x.contiguous()
        if idx.numel() and out.numel():
            want = list(out.shape)
            want[d] = idx.numel()
            _write_along(out, d, idx, full(want, value, dtype=x.dtype, device=x.device), accumulate=False)
        return out

    @staticmethod
    def backward(ctx, g):
        idx, = ctx.saved_tensors
        with no_grad():
            gx = _IndexFill.forward(_Ctx(), g, ctx.d, idx, 0)
        return gx, None, None, None


def index_fill(input, dim, index, value):  # noqa: A002
    """input with the slices at index (an int64 vector or scalar) along dim set to value."""
    if not isinstance(index, Tensor) or index.dtype.name != "int64":
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        value = value.item()
    d = wrap_dim(dim, input.ndim)
    x = _as_1d(input)
    idx = index.reshape(-1).detach()
    if idx.device != input.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{input.device} and {idx.device}!")
    bad = backend("index_fill", idx).first_out_of_range(idx, x.shape[d]) if idx.numel() else None
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {x.shape[d]}")
    out = _IndexFill.apply(x, d, idx, value)
    return out.reshape(input.shape) if input.ndim == 0 else out


class _PlaceInto(Function):
    """zeros of `shape` with view_fn(zeros) = src; the backward reads the same view of the gradient."""
    node_name = "SliceScatterBackward0"

    @staticmethod
    def forward(ctx, src, view_fn, shape):
        ctx.view_fn = view_fn
        z = factory.zeros(shape, dtype=src.dtype, device=src.device)
        view_fn(z).copy_(src)
        return z

    @staticmethod
    def backward(ctx, g):
        return ctx.view_fn(g).contiguous(), None, None


def _embed(input, src, view_fn):  # noqa: A002
    """input with view_fn(input) replaced by src, out of place and differentiable in both."""
    mask = factory.zeros(input.shape, dtype=_dt.bool, device=input.device)
    view_fn(mask).fill_(True)
    placed = _PlaceInto.apply(src.to(dtype=input.dtype), view_fn, tuple(input.shape))
    return _where(mask, placed, input)


def select_scatter(input, src, dim, index):  # noqa: A002
    """input with input.select(dim, index) replaced by src.

    Example:
        >>> torch.select_scatter(torch.zeros(2, 2), torch.ones(2), 0, 0)
        tensor([[1., 1.],
                [0., 0.]])
    """
    return _embed(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """input with input[start:end:step] along dim replaced by src.

    Example:
        >>> torch.slice_scatter(torch.zeros(4), torch.ones(2), start=2)
        tensor([0., 0., 1., 1.])
    """
    d = wrap_dim(dim, input.ndim)
    idx = (slice(None),) * d + (slice(start, end, step),)
    return _embed(input, src, lambda t: t[idx])


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    """input with its diagonal (offset, dim1, dim2) replaced by src.

    Example:
        >>> torch.diagonal_scatter(torch.zeros(2, 2), torch.ones(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return _embed(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def put_(self, index, source, accumulate=False):
    """Write source into self at the flat (row-major) positions index, in place; accumulate adds instead
    (repeated indices then add up).

    Example:
        >>> torch.zeros(2, 2).put_(torch.tensor([0, 3]), torch.tensor([1., 2.]))
        tensor([[1., 0.],
                [0., 2.]])
    """
    n = self.numel()
    idx = index.reshape(-1).to(dtype=_dt.int64)
    if idx.numel() and (int(idx.max().item()) >= n or int(idx.min().item()) < -n):
        raise IndexError(f"out of range: tried to access index {int(idx.max().item())} on a tensor of {n} elements.")
    idx = _where(idx < 0, idx + n, idx)
    flat = self.reshape(-1).clone() if not self.is_contiguous() else self.reshape(-1)
    src = source.reshape(-1).to(dtype=self.dtype)
    if accumulate:
        flat.index_add_(0, idx, src)
    else:
        flat.index_copy_(0, idx, src)
    if flat.data_ptr() != self.data_ptr() or not self.is_contiguous():
        self.copy_(flat.reshape(self.shape))
    return self


def put(input, index, source, accumulate=False):  # noqa: A002
    """Out-of-place put_."""
    return put_(input.clone(), index, source, accumulate)




def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape tensor.shape + (num_classes,) with a 1 at each value's position.
    num_classes=-1 takes max(tensor) + 1 (a host read on cuda, as PyTorch's).

    Example:
        >>> F.one_hot(torch.tensor([0, 2]), 3)
        tensor([[1, 0, 0],
                [0, 0, 1]])
    """
    from ...tensor.factory import arange
    if not isinstance(tensor, Tensor) or tensor.dtype is not _dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1 and tensor.numel() == 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    if tensor.numel():
        host = tensor.detach().cpu()       # the range check reads the values, as PyTorch's does
        lo, hi = int(host.min().item()), int(host.max().item())
        if num_classes == -1:
            num_classes = hi + 1
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if hi >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(dtype=_dt.int64)


declare("gather", gather, family="gather_scatter")
declare("scatter", scatter, family="gather_scatter", inplace=True)
declare("scatter_add", scatter_add, family="gather_scatter", inplace=True)
declare("scatter_reduce", scatter_reduce, family="gather_scatter", inplace=True)
declare("take_along_dim", take_along_dim, family="gather_scatter")
declare("take", take, family="gather_scatter")
declare("masked_select", masked_select, family="gather_scatter")
declare("masked_scatter", masked_scatter, family="gather_scatter", inplace=True)
declare("index_fill", index_fill, family="gather_scatter", inplace=True)
declare("select_scatter", select_scatter, family="gather_scatter")
declare("slice_scatter", slice_scatter, family="gather_scatter")
declare("diagonal_scatter", diagonal_scatter, family="gather_scatter")
declare("put", put, family="gather_scatter")
declare("put_", put_, family="gather_scatter", torch=False)
declare("one_hot", one_hot, family="gather_scatter", functional=True, torch=False, method=False)
