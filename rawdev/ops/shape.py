"""Shape family: views (metadata only, storage shared) and reshape/contiguous, declared once each.

A view op is its layout arithmetic — (sizes, strides, storage offset) of the input -> those of the view —
and its backward, side by side. `_view_op` turns that pair into the public function: no graph when
nothing needs a gradient, else a node named as PyTorch's (TransposeBackward0, ...) whose backward is
the declaration's. Backwards of views that pick elements (select, narrow, slicing, diagonal,
as_strided) write the gradient into the same view of a zero tensor: one strided copy on cuda.

This file holds the machinery, the views that keep every element (view/reshape, transpose, permute, expand,
squeeze/unsqueeze, ...) and clone/contiguous; the views that pick a part (narrow, select, diagonal, as_strided,
Tensor.unfold, unbind) are ops/slice_views.py's.
"""
import operator

from ..autograd.function import Function, delayed_error
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..tensor import layout as L
from ..tensor import memfmt as _mf
from ..tensor.core import Tensor
from ..tensor.factory import zeros
from ..tensor.size import Size
from .registry import declare

__all__ = ["make_view", "view_meta_reshape", "wrap_dim", "expand_meta", "sum_to"]


def wrap_dim(dim, ndim):
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    dim = operator.index(dim)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim % ndim if ndim else 0


def _sizes(args):
    """f(2, 3) / f((2, 3)) / f([2, 3]) / f(Size) -> a tuple of ints."""
    if len(args) == 1 and not isinstance(args[0], int) and not hasattr(args[0], "__index__"):
        args = tuple(args[0])
    return tuple(operator.index(a) for a in args)


class _View(Function):
    """A view in the graph: forward makes the view, backward is the declaring op's."""

    @staticmethod
    def forward(ctx, x, op, args):
        ctx.op, ctx.args, ctx.shape = op, args, x.shape
        ctx.contig = x.is_contiguous() and x.storage_offset() == 0
        return make_view(x, op.meta(x, *args))

    @staticmethod
    def backward(ctx, g):
        return ctx.op.backward(ctx, g, *ctx.args), None, None

    @staticmethod
    def backward_graph(ctx, g):
        # these views' backwards are views (or sum_to) themselves, so they are recorded under create_graph
        if ctx.op.name in ("view", "transpose", "permute", "expand", "unsqueeze", "squeeze"):
            return ctx.op.backward(ctx, g, *ctx.args), None, None
        if ctx.op.name in ("narrow", "select", "diagonal", "getitem", "as_strided"):
            return _ScatterBack.apply(g, ctx.op, ctx.args, ctx.shape, ctx.contig), None, None
        with no_grad():
            dx = ctx.op.backward(ctx, g, *ctx.args)
        return delayed_error((dx,), ctx.op.node)[0], None, None


class _ScatterBack(Function):
    """The backward of an element-picking view (g written into zeros), recorded: it is linear in g, and its
    own backward takes the same view of the incoming gradient."""
    differentiable_backward = True

    @staticmethod
    def forward(ctx, g, op, args, shape, contig):
        ctx.op, ctx.args = op, args
        inner = type("ViewCtx", (), {})()
        inner.op, inner.args, inner.shape, inner.contig = op, args, shape, contig
        return op.backward(inner, g, *args)

    @staticmethod
    def backward(ctx, gg):
        return ctx.op(gg, *ctx.args), None, None, None, None


class _ViewOp:
    def __init__(self, name, meta, backward, node):
        self.name, self.meta, self.backward, self.node = name, meta, backward, node

    def __call__(self, x, *args):
        if not isinstance(x, Tensor):
            raise TypeError(f"{self.name}(): argument 'input' must be Tensor, not {type(x).__name__}")
        if x.requires_grad and is_grad_enabled():
            out = _View.apply(x, self, args)
            out.grad_fn.rename(self.node)
            return out
        return make_view(x, self.meta(x, *args))

    def with_meta(self, x, meta, *args):
        """self(x, *args) when the caller already computed meta(x, *args) (not computed again off the graph)."""
        if x.requires_grad and is_grad_enabled():
            return self(x, *args)
        return make_view(x, meta)


def make_view(x, meta):
    shape, strides, soff = meta
    return x._view(shape, strides, soff)


def _view_op(name, node):
    """Decorator for a view op's layout function meta(x, *args) -> (shape, strides, soff); the backward is
    attached with @op.grad."""
    def deco(meta):
        op = _ViewOp(name, meta, None, node)

        def grad(bwd):
            op.backward = bwd
            return bwd
        op.grad = grad
        return op
    return deco


# ------------------------------------------------------------------ gradient helpers
def _reshape_back(ctx, g, *args):
    return reshape(g, ctx.shape)


def _scatter_back(ctx, g, *args):
    """The gradient of an element-picking view: g written into the same view of zeros of the input's shape
    (the view is recomputed on the zeros' own layout)."""
    z = zeros(ctx.shape, dtype=g.dtype, device=g.device)
    make_view(z, ctx.op.meta(z, *args))._write(g)
    return z


def sum_to(g, shape):
    """Reduce a broadcast gradient back to `shape` (sum over the new leading axes and the expanded ones)."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    r = g.sum(dims, keepdim=True) if dims else g
    return reshape(r, shape)


# ------------------------------------------------------------------ view ops
def view_meta_reshape(x, shape):
    shape = _infer_shape(x, shape)
    strides = L.view_strides(x.shape, x.stride(), shape)
    return shape, strides


def _infer_shape(x, shape):
    shape = list(_sizes(shape))
    n = x.numel()
    infer = [i for i, d in enumerate(shape) if d == -1]
    if len(infer) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for d in shape:
        if d < -1:
            raise RuntimeError(f"invalid shape dimension {d}")
    known = L.numel(d for d in shape if d != -1)
    if infer:
        if known == 0 or n % known:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {n}")
        shape[infer[0]] = n // known
    elif known != n:
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {n}")
    return Size(shape)


@_view_op("view", "ViewBackward0")
def _view_meta(x, shape):
    shape, strides = view_meta_reshape(x, shape)
    if strides is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                           "spans across two contiguous subspaces). Use .reshape(...) instead.")
    return shape, strides, x.storage_offset()


_view_meta.grad(_reshape_back)


def view(input, *shape):  # noqa: A002
    """A view with another shape (same storage); raises when the strides do not allow one (use reshape)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, Size)) and not hasattr(shape[0], "__index__"):
        raise NotImplementedError("view(dtype) is not supported")
    return _view_meta(input, shape)


def reshape(input, *shape):  # noqa: A002
    """A view when the strides allow one, else a contiguous copy (PyTorch's reshape)."""
    new, strides = view_meta_reshape(input, shape)
    if strides is not None:
        return _view_meta.with_meta(input, (new, strides, input.storage_offset()), new)
    return _view_meta(contiguous(input), new)


def view_as(input, other):  # noqa: A002
    return view(input, other.shape)


def reshape_as(input, other):  # noqa: A002
    return reshape(input, other.shape)


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    if input.ndim == 0:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, input.ndim), wrap_dim(end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shp = tuple(input.shape)
    return reshape(input, shp[:s] + (L.numel(shp[s:e + 1]),) + shp[e + 1:])


def unflatten(input, dim, sizes):  # noqa: A002
    d = wrap_dim(dim, input.ndim)
    shp = tuple(input.shape)
    sizes = list(sizes)
    if -1 in sizes:
        known = L.numel(s for s in sizes if s != -1)
        sizes[sizes.index(-1)] = shp[d] // known if known else 0
    if L.numel(sizes) != shp[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({shp[d]}) in the input tensor")
    return view(input, shp[:d] + tuple(sizes) + shp[d + 1:])


@_view_op("transpose", "TransposeBackward0")
def _transpose(x, d0, d1):
    n = x.ndim
    d0, d1 = wrap_dim(d0, n), wrap_dim(d1, n)
    shape, strides = list(x.shape), list(x.stride())
    shape[d0], shape[d1] = shape[d1], shape[d0]
    strides[d0], strides[d1] = strides[d1], strides[d0]
    return shape, strides, x.storage_offset()


@_transpose.grad
def _transpose_back(ctx, g, d0, d1):
    return _transpose(g, d0, d1)


def transpose(input, dim0, dim1):  # noqa: A002
    """Swap two axes (a view)."""
    return _transpose(input, dim0, dim1)


def t(input):  # noqa: A002
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    if input.ndim < 2:
        return _transpose(input, 0, 0) if input.ndim else input
    out = _transpose(input, 0, 1)
    if out.grad_fn is not None:
        out.grad_fn.rename("TBackward0")
    return out


def _T(input):  # noqa: N802  (Tensor.T)
    if input.ndim not in (0, 2):
        import warnings
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
                      "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
                      "matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
                      "tensor.", UserWarning, stacklevel=2)
    return permute(input, tuple(range(input.ndim - 1, -1, -1)))


def _mT(input):  # noqa: N802
    if input.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."
                           if input.ndim == 1 else
                           "tensor.mT is only supported on matrices or batches of matrices. Got 0-D tensor.")
    return _transpose(input, -2, -1)


@_view_op("permute", "PermuteBackward0")
def _permute(x, dims):
    n = x.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, n) for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return [x.shape[d] for d in dims], [x.stride()[d] for d in dims], x.storage_offset()


@_permute.grad
def _permute_back(ctx, g, dims):
    n = len(dims)
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[wrap_dim(d, n)] = i
    return _permute(g, tuple(inv))


def permute(input, *dims):  # noqa: A002
    return _permute(input, _sizes(dims))


def movedim(input, source, destination):  # noqa: A002
    n = input.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    src = [wrap_dim(d, n) for d in src]
    dst = [wrap_dim(d, n) for d in dst]
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return _permute(input, tuple(order))


def expand_meta(x, sizes):
    sizes = _sizes(sizes)
    n, m = x.ndim, len(sizes)
    if m < n:
        raise RuntimeError(f"expand({x.type()}{{{list(x.shape)}}}, size={list(sizes)}): the number of sizes provided "
                           f"({m}) must be greater or equal to the number of dimensions in the tensor ({n})")
    shape, strides = [], []
    for i in range(m):
        j = i - (m - n)
        want = sizes[i]
        if j < 0:
            if want < 0:
                raise RuntimeError(f"The expanded size of the tensor ({want}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            shape.append(want)
            strides.append(0)
            continue
        have, st = x.shape[j], x.stride()[j]
        if want == -1:
            want = have
        if have != want:
            if have != 1:
                raise RuntimeError(f"The expanded size of the tensor ({want}) must match the existing size ({have}) "
                                   f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                                   f"{list(x.shape)}")
            st = 0
        shape.append(want)
        strides.append(st)
    return shape, strides, x.storage_offset()


_expand = _view_op("expand", "ExpandBackward0")(expand_meta)


@_expand.grad
def _expand_back(ctx, g, sizes):
    return sum_to(g, ctx.shape)


def expand(input, *sizes):  # noqa: A002
    """Broadcast size-1 axes (and new leading ones) to sizes without copying: stride 0."""
    return _expand(input, _sizes(sizes))


def expand_as(input, other):  # noqa: A002
    return _expand(input, tuple(other.shape))


def broadcast_to(input, size):  # noqa: A002
    return _expand(input, _sizes((size,)))


@_view_op("unsqueeze", "UnsqueezeBackward0")
def _unsqueeze(x, dim):
    d = wrap_dim(dim, x.ndim + 1)
    shape, strides = list(x.shape), list(x.stride())
    st = shape[d] * strides[d] if d < x.ndim else 1
    shape.insert(d, 1)
    strides.insert(d, st)
    return shape, strides, x.storage_offset()


_unsqueeze.grad(_reshape_back)


def unsqueeze(input, dim):  # noqa: A002
    return _unsqueeze(input, operator.index(dim))


@_view_op("squeeze", "SqueezeBackward0")
def _squeeze(x, dims):
    if dims is None:
        drop = {i for i, s in enumerate(x.shape) if s == 1}
    else:
        drop = {wrap_dim(d, x.ndim) for d in dims}
        drop = {d for d in drop if x.ndim and x.shape[d] == 1}
    keep = [i for i in range(x.ndim) if i not in drop]
    return [x.shape[i] for i in keep], [x.stride()[i] for i in keep], x.storage_offset()


_squeeze.grad(_reshape_back)


def squeeze(input, dim=None):  # noqa: A002
    dims = None if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    out = _squeeze(input, dims)
    if out.grad_fn is not None and dims is not None:
        out.grad_fn.rename("SqueezeBackward1" if len(dims) == 1 else "SqueezeBackward2")
    return out


# ------------------------------------------------------------------ copies
class _Clone(Function):
    node_name = "CloneBackward0"
    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        return x._contiguous_copy("clone")

    @staticmethod
    def backward(ctx, g):
        return g


def clone(input, *, memory_format=None):  # noqa: A002
    """A contiguous copy; differentiable (CloneBackward0) when grad is on, as PyTorch's."""
    if memory_format is not None and memory_format in _mf._ORDER:
        return _in_format(input, memory_format)
    if is_grad_enabled() and input.requires_grad:
        return _Clone.apply(input)
    t = input._contiguous_copy("clone")
    return t


def contiguous(input, memory_format=None):  # noqa: A002
    """self when already contiguous, else a contiguous copy (one strided-copy launch on cuda).
    memory_format=rawdev.channels_last(_3d): the same shape laid out channels-last (NHWC order)."""
    _mf.check(memory_format, input.ndim)
    if input.is_contiguous(memory_format=memory_format):
        return input
    if memory_format in _mf._ORDER:
        return _in_format(input, memory_format)
    return clone(input)


def _in_format(x, fmt):
    """A copy of x laid out in a channels-last format: permute to that order, copy dense, permute back
    (all differentiable)."""
    _mf.check(fmt, x.ndim)
    order = _mf._ORDER[fmt]
    inv = [order.index(i) for i in range(len(order))]
    return permute(clone(permute(x, order)), inv)


# ------------------------------------------------------------------ declarations
def _method_sizes(fn):
    def method(self, *sizes):
        return fn(self, *sizes)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


declare("view", view, family="shape", torch=False)
declare("reshape", reshape, family="shape")
declare("view_as", view_as, family="shape", torch=False)
declare("reshape_as", reshape_as, family="shape", torch=False)
declare("flatten", flatten, family="shape", functional=True)
declare("unflatten", unflatten, family="shape")
declare("transpose", transpose, family="shape", aliases=("swapaxes", "swapdims"))
declare("t", t, family="shape")
declare("T", _T, family="shape", torch=False, method=property(_T))
declare("mT", _mT, family="shape", torch=False, method=property(_mT))
declare("permute", permute, family="shape")
declare("movedim", movedim, family="shape", aliases=("moveaxis",))
declare("expand", expand, family="shape", torch=False)
declare("expand_as", expand_as, family="shape", torch=False)
declare("broadcast_to", broadcast_to, family="shape")
declare("unsqueeze", unsqueeze, family="shape")
declare("squeeze", squeeze, family="shape")
declare("clone", clone, family="shape")
declare("contiguous", contiguous, family="shape", torch=False)
