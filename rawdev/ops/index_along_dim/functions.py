"""Indexing along one dim with an index vector (rawdev/ops/index_along_dim/__init__.py): index_select, index_add,
index_copy and the in-place Tensor.index_add_ / index_copy_ (ops/index.py is x[...] and index_put; its advanced
indexing selects and writes through index_select and _write_along here). Device-free: what differs between the
devices (an int32 index: the cpu widens it, cuda refuses it) is the backends' check_int32_index.

The tensor is viewed as [outer, size, inner] around the dim; the backends' index_select, index_copy_ and index_add_
(kernels: ptx/src/index.cu) move whole [inner] rows, any dtype for select and copy, float32 (or a 16-bit source
into a float32 accumulator) for the add. index_select's gradient adds its rows back; index_copy's sends nothing to
the overwritten slices.
"""
from ...autograd.function import Function
from ...tensor.core import Tensor
from ...tensor.factory import zeros
from ..dispatch import backend, backend_of
from ..inplace import check_graph_write
from ..registry import declare
from ..shape import wrap_dim


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
        backend_of(index).check_int32_index(op)   # the cpu widens it; cuda's kernels read int64 only: refused
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
        from ...autograd.function import linear_backward
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


declare("index_select", index_select, family="index_along_dim")
declare("index_add", index_add, family="index_along_dim")
declare("index_copy", index_copy, family="index_along_dim")
declare("index_add_", _index_add_, family="index_along_dim", torch=False)
declare("index_copy_", _index_copy_, family="index_along_dim", torch=False)
