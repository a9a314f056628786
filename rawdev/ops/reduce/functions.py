"""Reductions: sum, mean, max, min, argmax, argmin (PyTorch's dim/keepdim/dtype semantics).

sum/mean backward broadcast the gradient back with expand (a stride-0 view); max/min along a dim send
it to the selected index (the backend's arg_reduce_bwd); the all-element max/min share it among ties.
"""

import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...tensor.core import Tensor
from ..dispatch import backend_of
from ..registry import declare
from ..rtypes import return_type as _return_type
from ..shape import expand, reshape


# ------------------------------------------------------------------ reductions
def _axis(dim, axis):
    """PyTorch accepts axis= as an alias of dim."""
    if axis is not None:
        if dim is not None and dim != ():
            raise TypeError("received both dim and its alias axis")
        return axis
    return dim


def _dims(x, dim):
    if dim is None:
        return tuple(range(x.ndim))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted({x._wrap_dim(d) for d in dim}))


def _unreduce(g, ctx):
    """The gradient of a sum over ctx.dims broadcast back to the input's shape (an expand: stride 0)."""
    if not ctx.keepdim and ctx.dims and g.ndim:   # a 0-dim g (every axis summed) expands as it is
        g = reshape(g, [1 if i in ctx.dims else s for i, s in enumerate(ctx.shape)])
    return expand(g, ctx.shape)


class _Sum(Function):
    node_name = "SumBackward1"
    differentiable_backward = True    # _unreduce is a reshape and an expand, both recorded under create_graph

    @staticmethod
    def forward(ctx, x, dims, keepdim, dt):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        if not dims and x.ndim:
            return backend_of(x).clone(x) if dt in (None, x.dtype) else x.to(dtype=dt, copy=True)
        return backend_of(x).sum_dims(x, dims, keepdim, dt)

    @staticmethod
    def backward(ctx, g):
        return _unreduce(g, ctx), None, None, None


class _Mean(Function):
    node_name = "MeanBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        n = 1
        for d in dims:
            n *= x.shape[d]
        ctx.n = n
        B = backend_of(x)
        if not dims and x.ndim:
            return B.clone(x)
        # the backend's: cuda rounds a 16-bit mean once (the float32 sum times 1/n), the cpu divides the sum
        return B.mean_dims(x, dims, keepdim, n)

    @staticmethod
    def backward(ctx, g):
        return _unreduce(backend_of(g).div_scalar(g, ctx.n), ctx), None, None

    @staticmethod
    def backward_graph(ctx, g):
        return _unreduce(g / ctx.n, ctx), None, None


def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A001,A002
    dim = _axis(dim, axis)
    dt = _dt.as_dtype(dtype)
    if dt is None and not input.dtype.is_floating_point:
        dt = _dt.int64   # PyTorch sums integers (and bool) into int64
    return _full_reduction_name(_Sum.apply(input, _dims(input, dim), keepdim, dt), dim, "SumBackward0")


def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A002
    dim = _axis(dim, axis)
    if dtype is not None:
        input = input.to(dtype=_dt.as_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {input.dtype._legacy[:-6]}")
    return _full_reduction_name(_Mean.apply(input, _dims(input, dim), keepdim), dim, "MeanBackward0")


def _full_reduction_name(out, dim, name):
    # PyTorch's x.sum() / x.mean() (no dim) is another overload than x.sum(dim): its node is ...Backward0.
    if dim is None and out.grad_fn is not None:
        out.grad_fn.rename(name)
    return out



# ------------------------------------------------------------------ max / min / argmax / argmin
# PyTorch's torch.return_types.max / .min: a named tuple (values, indices).
return_max, return_min = _return_type("max"), _return_type("min")


def _arg_layout(x, dim, keepdim, op):
    """(outer, red, inner, output shape) of reducing x over dim (None: every element) as [outer, red, inner]."""
    shape = tuple(x.shape)
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
        return 1, x.numel(), 1, ((1,) * len(shape) if keepdim else ())
    d = x._wrap_dim(dim)
    if not shape:                          # a 0-d tensor reduces over its one element
        return 1, 1, 1, ()
    if shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    outer = int(np.prod(shape[:d], dtype=np.int64))
    inner = int(np.prod(shape[d + 1:], dtype=np.int64))
    out = shape[:d] + ((1,) if keepdim else ()) + shape[d + 1:]
    return outer, shape[d], inner, out


def _arg(x, dim, keepdim, is_max):
    op = "argmax" if is_max else "argmin"
    outer, red, inner, out = _arg_layout(x, dim, keepdim, op)
    _, idx = backend_of(x).arg_reduce(x.detach(), outer, red, inner, is_max, values=False)
    return reshape(idx, out)


def argmax(input, dim=None, keepdim=False, *, axis=None):  # noqa: A002
    """Index (int64) of the largest element (flattened when dim is None); the first on ties, NaN counts as largest."""
    dim = _axis(dim, axis)
    return _arg(input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False, *, axis=None):  # noqa: A002
    dim = _axis(dim, axis)
    return _arg(input, dim, keepdim, False)


class _MaxDim(Function):
    """max/min along a dim: (values, indices); the gradient goes to the selected index only."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, is_max):
        outer, red, inner, out = _arg_layout(x, dim, keepdim, "max" if is_max else "min")
        vals, idx = backend_of(x).arg_reduce(x, outer, red, inner, is_max)
        ctx.layout, ctx.shape = (outer, red, inner), x.shape
        ctx.set_materialize_grads(False)   # the int64 indices never carry a gradient: no zeros for them
        ctx.save_for_backward(idx)
        return reshape(vals, out), reshape(idx, out)

    @staticmethod
    def backward(ctx, g, _gi):
        idx, = ctx.saved_tensors
        gx = backend_of(g).arg_reduce_bwd(reshape(g, (-1,)), idx, *ctx.layout)
        return reshape(gx, ctx.shape), None, None, None

    @staticmethod
    def backward_graph(ctx, g, _gi):   # linear in g: the adjoint picks gg at the selected index again
        from ...autograd.function import linear_backward
        idx, = ctx.saved_tensors
        layout, shape, gshape = ctx.layout, ctx.shape, g.shape

        def bwd(t):
            return reshape(backend_of(t).arg_reduce_bwd(reshape(t, (-1,)), idx, *layout), shape)
        B = backend_of(g)
        onehot = bwd(B.full(gshape, 1, g.dtype, g.device))    # 1 at each selected element (a constant)

        def adj(gg):
            return reshape((gg * onehot).reshape(layout).sum(1), gshape)
        return linear_backward(g, bwd, adj), None, None, None


class _MaxAll(Function):
    """max/min of every element (a 0-d tensor); the gradient is shared evenly by every element equal to the
    result (NaN counting as equal to NaN), as PyTorch's evenly_distribute_backward."""

    @staticmethod
    def forward(ctx, x, is_max):
        outer, red, inner, _ = _arg_layout(x, None, False, "max" if is_max else "min")
        vals, _ = backend_of(x).arg_reduce(x, outer, red, inner, is_max)
        y = reshape(vals, ())
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        B = backend_of(g)
        mask = B.cast(B.compare(x, y, "same"), g.dtype)
        count = B.sum_dims(mask, tuple(range(mask.ndim)), False)
        return B.mul(mask, B.div(g, count, g.dtype), g.dtype), None

    @staticmethod
    def backward_graph(ctx, g):   # the share of each tied element is a constant
        x, y = ctx.saved_tensors
        B = backend_of(g)
        mask = B.cast(B.compare(x.detach(), y.detach(), "same"), g.dtype)
        count = B.sum_dims(mask, tuple(range(mask.ndim)), False)
        return mask / count * g, None


def _max_min(input, dim, keepdim, is_max):  # noqa: A002
    name = "max" if is_max else "min"
    if isinstance(dim, Tensor):   # max(a, b): the elementwise form
        from ..select.functions import maximum, minimum
        return (maximum if is_max else minimum)(input, dim)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments: keepdim without dim")
        out = _MaxAll.apply(input, is_max)
        if out.grad_fn is not None:
            out.grad_fn.rename("MaxBackward1" if is_max else "MinBackward1")
        return out
    vals, idx = _MaxDim.apply(input, dim, keepdim, is_max)
    if vals.grad_fn is not None:
        vals.grad_fn.rename("MaxBackward0" if is_max else "MinBackward0")
    return (return_max if is_max else return_min)(vals, idx)


def max(input, dim=None, keepdim=False, *, axis=None):  # noqa: A001,A002
    """max(x) -> 0-d tensor; max(x, dim, keepdim=False) -> (values, indices) (first index on ties; NaN wins)."""
    dim = _axis(dim, axis)
    return _max_min(input, dim, keepdim, True)


def min(input, dim=None, keepdim=False, *, axis=None):  # noqa: A001,A002
    dim = _axis(dim, axis)
    return _max_min(input, dim, keepdim, False)




declare("sum", sum, family="reduce")
declare("mean", mean, family="reduce")
declare("max", max, family="reduce")
declare("min", min, family="reduce")
declare("argmax", argmax, family="reduce")
declare("argmin", argmin, family="reduce")
