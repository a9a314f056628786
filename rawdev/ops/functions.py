"""Differentiable ops: an autograd Function per op, calling the backend (cpu numpy / cuda PTX) for the math.

These are the public building blocks (rawdev.add, rawdev.matmul, nn.functional.relu, ...).
"""
import builtins
import collections
import numbers

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor.core import Tensor
from .dispatch import backend, backend_of

# D's shape methods (metadata-only views), captured before methods.py wraps them with autograd.
_raw_reshape = Tensor.reshape
_raw_view = Tensor.view


def _is_scalar(x):
    return isinstance(x, numbers.Number) and not isinstance(x, bool) or isinstance(x, (bool, np.generic))


def _result_dt(a, b):
    """PyTorch's promotion for two tensors (float beats int; wider float wins)."""
    da, db = a.dtype, b.dtype
    if da is db:
        return da
    fa, fb = da.is_floating_point, db.is_floating_point
    if fa and not fb:
        return da
    if fb and not fa:
        return db
    if fa and fb and a.ndim == 0 and b.ndim > 0:
        return db
    if fa and fb and b.ndim == 0 and a.ndim > 0:
        return da
    return _dt.from_numpy_dtype(np.result_type(da.storage, db.storage)) if da is not _dt.bfloat16 else da


def _scalar_dt(x, s):
    """Result dtype of tensor x with Python scalar s: a scalar of a higher kind (bool < int < float) lifts
    the result to that kind's default (int tensor * 2.5 -> default float, bool tensor + 1 -> int64)."""
    if not x.dtype.is_floating_point and isinstance(s, (float, np.floating)):
        return _dt.get_default_dtype()
    if x.dtype is _dt.bool and isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)):
        return _dt.int64
    return x.dtype


def _for_scalar(x, s):
    dt = _scalar_dt(x, s)
    return x if dt is x.dtype else x.to(dtype=dt)


def _bcast_shape(a, b):
    try:
        return tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    except ValueError:
        sa, sb = tuple(a.shape), tuple(b.shape)
        n = builtins.max(len(sa), len(sb))   # this module defines its own max
        pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
        for i in range(n - 1, -1, -1):
            if pa[i] != pb[i] and 1 not in (pa[i], pb[i]):
                raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) at "
                                   f"non-singleton dimension {i}") from None
        raise


def _to_tensor(x, like):
    from ..tensor.factory import tensor
    return tensor(x, dtype=like.dtype, device=like.device)


# ------------------------------------------------------------------ arithmetic
class _Add(Function):
    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b, alpha):
        _bcast_shape(a, b)
        B = backend("add", a, b)
        ctx.sa, ctx.sb, ctx.alpha = a.shape, b.shape, alpha
        return B.add(a, b, alpha, _result_dt(a, b))

    @staticmethod
    def backward(ctx, g):
        B = backend_of(g)
        ga = B.sum_to(g, ctx.sa) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            gb = B.sum_to(g, ctx.sb)
            if ctx.alpha != 1:
                gb = B.scale(gb, ctx.alpha)
        return ga, gb, None


class _Mul(Function):
    node_name = "MulBackward0"

    @staticmethod
    def forward(ctx, a, b):
        _bcast_shape(a, b)
        B = backend("mul", a, b)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
        ctx.sa, ctx.sb = a.shape, b.shape
        return B.mul(a, b, _result_dt(a, b))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        B = backend_of(g)
        ga = B.sum_to(B.mul(g, b, g.dtype), ctx.sa) if ctx.needs_input_grad[0] else None
        gb = B.sum_to(B.mul(g, a, g.dtype), ctx.sb) if ctx.needs_input_grad[1] else None
        return ga, gb


class _Div(Function):
    node_name = "DivBackward0"

    @staticmethod
    def forward(ctx, a, b):
        _bcast_shape(a, b)
        B = backend("div", a, b)
        dt = _result_dt(a, b)
        if not dt.is_floating_point:
            dt = _dt.get_default_dtype()
        ctx.save_for_backward(a, b)
        ctx.sa, ctx.sb = a.shape, b.shape
        return B.div(a, b, dt)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        B = backend_of(g)
        ga = B.sum_to(B.div(g, b, g.dtype), ctx.sa) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:   # -g * a / b^2
            gb = B.sum_to(B.neg(B.div(B.mul(g, a, g.dtype), B.mul(b, b, g.dtype), g.dtype)), ctx.sb)
        return ga, gb


class _Scale(Function):
    node_name = "MulBackward0"

    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        return backend_of(x).scale(_for_scalar(x, s), s)

    @staticmethod
    def backward(ctx, g):
        return backend_of(g).scale(g, ctx.s), None


class _DivScalar(Function):
    node_name = "DivBackward0"

    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        if not x.dtype.is_floating_point:
            x = x.to(dtype=_dt.get_default_dtype())
        return backend_of(x).div_scalar(x, s)

    @staticmethod
    def backward(ctx, g):
        return backend_of(g).div_scalar(g, ctx.s), None


class _AddScalar(Function):
    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, x, s):
        return backend_of(x).add_scalar(_for_scalar(x, s), s)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _RSubScalar(Function):
    node_name = "RsubBackward1"

    @staticmethod
    def forward(ctx, x, s):
        return backend_of(x).rsub_scalar(x, s)

    @staticmethod
    def backward(ctx, g):
        return backend_of(g).neg(g), None


class _RDivScalar(Function):
    node_name = "DivBackward0"

    @staticmethod
    def forward(ctx, x, s):
        if not x.dtype.is_floating_point:
            x = x.to(dtype=_dt.get_default_dtype())
        y = backend_of(x).rdiv_scalar(x, s)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):   # d(s/x) = -s/x^2 = -y/x
        x, y = ctx.saved_tensors
        B = backend_of(g)
        return B.neg(B.div(B.mul(g, y, g.dtype), x, g.dtype)), None


class _Neg(Function):
    node_name = "NegBackward0"

    @staticmethod
    def forward(ctx, x):
        return backend_of(x).neg(x)

    @staticmethod
    def backward(ctx, g):
        return backend_of(g).neg(g)


class _PowScalar(Function):
    node_name = "PowBackward0"

    @staticmethod
    def forward(ctx, x, e):
        ctx.save_for_backward(x)
        ctx.e = e
        B = backend_of(x)
        if e == 2:
            return B.mul(x, x, x.dtype)
        return B.pow_scalar(x, e)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        B = backend_of(g)
        e = ctx.e
        if e == 0:   # x ** 0 is constant: zero, not 0 * x ** -1 (NaN at x = 0), as PyTorch
            return B.full(x.shape, 0, g.dtype, g.device), None
        if e == 2:
            return B.scale(B.mul(g, x, g.dtype), 2.0), None
        return B.mul(g, B.scale(B.pow_scalar(x, e - 1), e), g.dtype), None


def add(input, other, *, alpha=1):  # noqa: A002
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _Add.apply(input, other, alpha)
    if isinstance(input, Tensor) and _is_scalar(other):
        return _AddScalar.apply(input, other if alpha == 1 else other * alpha)  # True * 1 would be an int
    if isinstance(other, Tensor) and _is_scalar(input):
        return _AddScalar.apply(other if alpha == 1 else _Scale.apply(other, alpha), input)
    raise TypeError(f"add(): unsupported operand types {type(input).__name__} and {type(other).__name__}")


def sub(input, other, *, alpha=1):  # noqa: A002
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _Add.apply(input, other, -alpha)
    if isinstance(input, Tensor) and _is_scalar(other):
        return _AddScalar.apply(input, -other * alpha)
    if isinstance(other, Tensor) and _is_scalar(input):
        return _RSubScalar.apply(other if alpha == 1 else _Scale.apply(other, alpha), input)
    raise TypeError(f"sub(): unsupported operand types {type(input).__name__} and {type(other).__name__}")


def mul(input, other):  # noqa: A002
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _Mul.apply(input, other)
    if isinstance(input, Tensor) and _is_scalar(other):
        return _Scale.apply(input, other)
    if isinstance(other, Tensor) and _is_scalar(input):
        return _Scale.apply(other, input)
    raise TypeError(f"mul(): unsupported operand types {type(input).__name__} and {type(other).__name__}")


def div(input, other, *, rounding_mode=None):  # noqa: A002
    if rounding_mode is not None:
        raise NotImplementedError("div(rounding_mode=...) is not supported")
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _Div.apply(input, other)
    if isinstance(input, Tensor) and _is_scalar(other):
        return _DivScalar.apply(input, other)
    if isinstance(other, Tensor) and _is_scalar(input):
        return _RDivScalar.apply(other, input)
    raise TypeError(f"div(): unsupported operand types {type(input).__name__} and {type(other).__name__}")


def neg(input):  # noqa: A002
    return _Neg.apply(input)


def pow(input, exponent):  # noqa: A001,A002
    if isinstance(exponent, Tensor):
        raise NotImplementedError("pow with a tensor exponent is not supported")
    return _PowScalar.apply(input, exponent)


# ------------------------------------------------------------------ reductions
def _dims(x, dim):
    if dim is None:
        return tuple(range(x.ndim))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted({x._wrap_dim(d) for d in dim}))


class _Sum(Function):
    node_name = "SumBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dt):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        if not dims and x.ndim:
            return backend_of(x).clone(x) if dt in (None, x.dtype) else x.to(dtype=dt, copy=True)
        return backend_of(x).sum_dims(x, dims, keepdim, dt)

    @staticmethod
    def backward(ctx, g):
        B = backend_of(g)
        if not ctx.keepdim and ctx.dims:
            kshape = [1 if i in ctx.dims else s for i, s in enumerate(ctx.shape)]
            g = _raw_reshape(g, kshape)
        return B.expand(g, ctx.shape), None, None, None


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
        with np.errstate(invalid="ignore", divide="ignore"):
            return B.div_scalar(B.sum_dims(x, dims, keepdim), n)

    @staticmethod
    def backward(ctx, g):
        B = backend_of(g)
        if not ctx.keepdim and ctx.dims:
            kshape = [1 if i in ctx.dims else s for i, s in enumerate(ctx.shape)]
            g = _raw_reshape(g, kshape)
        return B.expand(B.div_scalar(g, ctx.n), ctx.shape), None, None


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001,A002
    dt = _dt.as_dtype(dtype)
    if dt is None and not input.dtype.is_floating_point:
        dt = _dt.int64   # PyTorch sums integers (and bool) into int64
    return _full_reduction_name(_Sum.apply(input, _dims(input, dim), keepdim, dt), dim, "SumBackward0")


def mean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
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


# ------------------------------------------------------------------ comparisons (never differentiable)
def _compare(op, input, other):  # noqa: A002
    """Bool tensor input <op> other. Operands are promoted as arithmetic promotes them (int64 vs float32
    compares in float32); other is a tensor (broadcast) or a Python scalar."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    a = input.detach()
    if isinstance(other, Tensor):
        _bcast_shape(input, other)
        B = backend(op, input, other)
        dt = _result_dt(input, other)
        b = other.detach()
        return B.compare(a if a.dtype is dt else a.to(dtype=dt), b if b.dtype is dt else b.to(dtype=dt), op)
    if _is_scalar(other):
        s = other.item() if isinstance(other, np.generic) else other
        dt = _scalar_dt(input, s)
        return backend_of(input).compare(a if a.dtype is dt else a.to(dtype=dt), s, op)
    raise TypeError(f"{op}(): argument 'other' must be Tensor or Number, not {type(other).__name__}")


def eq(input, other):  # noqa: A002
    return _compare("eq", input, other)


def ne(input, other):  # noqa: A002
    return _compare("ne", input, other)


def lt(input, other):  # noqa: A002
    return _compare("lt", input, other)


def le(input, other):  # noqa: A002
    return _compare("le", input, other)


def gt(input, other):  # noqa: A002
    return _compare("gt", input, other)


def ge(input, other):  # noqa: A002
    return _compare("ge", input, other)


# ------------------------------------------------------------------ max / min / argmax / argmin
# PyTorch's torch.return_types.max / .min: a named tuple (values, indices).
def _return_type(name):
    t = collections.namedtuple(name, ["values", "indices"])
    t.__module__ = "rawdev.return_types"
    return t


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
    return _raw_reshape(idx, out)


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """Index (int64) of the largest element (flattened when dim is None); the first on ties, NaN counts as largest."""
    return _arg(input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False):  # noqa: A002
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
        return _raw_reshape(vals, out), _raw_reshape(idx, out)

    @staticmethod
    def backward(ctx, g, _gi):
        idx, = ctx.saved_tensors
        gx = backend_of(g).arg_reduce_bwd(_raw_reshape(g, (-1,)), idx, *ctx.layout)
        return _raw_reshape(gx, ctx.shape), None, None, None


class _MaxAll(Function):
    """max/min of every element (a 0-d tensor); the gradient is shared evenly by every element equal to the
    result (NaN counting as equal to NaN), as PyTorch's evenly_distribute_backward."""

    @staticmethod
    def forward(ctx, x, is_max):
        outer, red, inner, _ = _arg_layout(x, None, False, "max" if is_max else "min")
        vals, _ = backend_of(x).arg_reduce(x, outer, red, inner, is_max)
        y = _raw_reshape(vals, ())
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        B = backend_of(g)
        mask = B.cast(B.compare(x, y, "same"), g.dtype)
        count = B.sum_dims(mask, tuple(range(mask.ndim)), False)
        return B.mul(mask, B.div(g, count, g.dtype), g.dtype), None


def _max_min(input, dim, keepdim, is_max):  # noqa: A002
    name = "max" if is_max else "min"
    if isinstance(dim, Tensor):
        raise NotImplementedError(f"{name}(input, other) (the elementwise form) is not supported")
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


def max(input, dim=None, keepdim=False):  # noqa: A001,A002
    """max(x) -> 0-d tensor; max(x, dim, keepdim=False) -> (values, indices) (first index on ties; NaN wins)."""
    return _max_min(input, dim, keepdim, True)


def min(input, dim=None, keepdim=False):  # noqa: A001,A002
    return _max_min(input, dim, keepdim, False)


# ------------------------------------------------------------------ device / dtype moves
class _ToCopy(Function):
    """Tensor.to(device, dtype) inside the graph: the gradient goes back to the source device and dtype."""
    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, device, dtype, non_blocking):
        from .. import moves
        ctx.src = (x.device, x.dtype)
        if x.is_cuda and x.device == device:
            from . import cuda
            if cuda.can_cast(x.dtype, dtype):   # a dtype change on the device: one cast kernel
                return cuda.cast(x, dtype)
        return moves.transfer_tensor(x, device, dtype, non_blocking=non_blocking)

    @staticmethod
    def backward(ctx, g):
        device, dtype = ctx.src
        return g.to(device, dtype), None, None, None


def to_copy(x, device, dtype, non_blocking=False):
    return _ToCopy.apply(x, device, dtype, non_blocking)


# ------------------------------------------------------------------ shapes
class _Reshape(Function):
    node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return _raw_reshape(x, shape)

    @staticmethod
    def backward(ctx, g):
        return _raw_reshape(g, ctx.shape), None


_raw_getitem = Tensor.__getitem__


class _Index(Function):
    """x[i] / x[a:b] along the first axis (the view Tensor.__getitem__ makes), recorded when x needs a grad:
    the gradient is zero outside the selected rows."""
    node_name = "SelectBackward0"

    @staticmethod
    def forward(ctx, x, idx):
        ctx.shape, ctx.idx = x.shape, idx
        return _raw_getitem(x, idx)

    @staticmethod
    def backward(ctx, g):
        B = backend_of(g)
        gx = B.full(ctx.shape, 0, g.dtype, g.device)
        _raw_getitem(gx, ctx.idx).copy_(g)
        return gx, None


def getitem(input, idx):  # noqa: A002
    if not (input.requires_grad and _grad_on()):
        return _raw_getitem(input, idx)
    out = _Index.apply(input, idx)
    first = idx[0] if isinstance(idx, tuple) and idx else idx
    if isinstance(first, slice):
        out.grad_fn.rename("SliceBackward0")
    return out


def reshape(input, *shape):  # noqa: A002
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    target = input._infer_shape(shape)
    if target == input.shape and not (input.requires_grad and _grad_on()):
        return _raw_reshape(input, target)
    return _Reshape.apply(input, target)


def _grad_on():
    from ..autograd.grad_mode import is_grad_enabled
    return is_grad_enabled()


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    if input.ndim == 0:
        return reshape(input, (1,))
    s, e = input._wrap_dim(start_dim), input._wrap_dim(end_dim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shp = tuple(input.shape)
    mid = 1
    for d in shp[s:e + 1]:
        mid *= d
    return reshape(input, shp[:s] + (mid,) + shp[e + 1:])


def unflatten(input, dim, sizes):  # noqa: A002
    d = input._wrap_dim(dim)
    shp = tuple(input.shape)
    return reshape(input, shp[:d] + tuple(sizes) + shp[d + 1:])


def squeeze(input, dim=None):  # noqa: A002
    shp = list(input.shape)
    if dim is None:
        new = [s for s in shp if s != 1]
    else:
        ds = {input._wrap_dim(d) for d in ((dim,) if isinstance(dim, int) else dim)}
        new = [s for i, s in enumerate(shp) if not (i in ds and s == 1)]
    return reshape(input, new)


def unsqueeze(input, dim):  # noqa: A002
    d = input._wrap_dim(dim, input.ndim + 1)
    shp = list(input.shape)
    shp.insert(d, 1)
    return reshape(input, shp)


# ------------------------------------------------------------------ matrix products
class _Linear(Function):
    node_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx, x, w, b):
        B = backend("linear", x, w, b)
        if x.shape[-1] != w.shape[1]:
            lead = 1
            for s in x.shape[:-1]:
                lead *= s
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({lead}x{x.shape[-1]} and "
                               f"{w.shape[1]}x{w.shape[0]})")
        x2 = _raw_reshape(x, (-1, x.shape[-1])) if x.ndim != 2 else x
        ctx.xshape = x.shape
        ctx.has_bias = b is not None
        ctx.save_for_backward(x2 if ctx.needs_input_grad[1] else None, w if ctx.needs_input_grad[0] else None)
        y = B.gemm(x2, w, False, True, bias=b)
        return _raw_reshape(y, tuple(x.shape[:-1]) + (w.shape[0],)) if x.ndim != 2 else y

    @staticmethod
    def backward(ctx, g):
        x2, w = ctx.saved_tensors
        B = backend_of(g)
        g2 = _raw_reshape(g, (-1, g.shape[-1])) if g.ndim != 2 else g
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = B.gemm(g2, w, False, False)
            if len(ctx.xshape) != 2:
                gx = _raw_reshape(gx, ctx.xshape)
        if ctx.needs_input_grad[1]:
            gw = B.gemm(g2, x2, True, False)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = B.sum_dims(g2, (0,), False)
        return gx, gw, gb


def linear(input, weight, bias=None):  # noqa: A002
    """y = x·Wᵀ + b (x [*, in], W [out, in], b [out])."""
    if input.ndim == 0:
        raise RuntimeError("linear(): input must have at least one dimension")
    if input.ndim == 1:
        return squeeze(_Linear.apply(reshape(input, (1, -1)), weight, bias), 0)
    return _Linear.apply(input, weight, bias)


class _Matmul2d(Function):
    node_name = "MmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        B = backend("mm", a, b)
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                               f"{b.shape[0]}x{b.shape[1]})")
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
        return B.gemm(a, b, False, False)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        B = backend_of(g)
        ga = B.gemm(g, b, False, True) if ctx.needs_input_grad[0] else None
        gb = B.gemm(a, g, True, False) if ctx.needs_input_grad[1] else None
        return ga, gb


class _MatmulBatched(Function):
    node_name = "BmmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        B = backend("matmul", a, b)
        if B.NAME != "cpu":
            raise NotImplementedError("batched matmul with a batched right operand runs on the cpu only; on cuda, "
                                      "the right operand must be 1-D or 2-D")
        ctx.save_for_backward(a, b)
        return B.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        from . import cpu as C
        a, b = ctx.saved_tensors
        gv, av, bv = C.v(g), C.v(a), C.v(b)
        ga = np.matmul(gv, np.swapaxes(bv, -1, -2))
        gb = np.matmul(np.swapaxes(av, -1, -2), gv)
        return (C.sum_to(C.wrap(ga, g.dtype), a.shape) if ctx.needs_input_grad[0] else None,
                C.sum_to(C.wrap(gb, g.dtype), b.shape) if ctx.needs_input_grad[1] else None)


def matmul(input, other):  # noqa: A002
    a, b = input, other
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    if b.ndim <= 2:
        bm = unsqueeze(b, 1) if b.ndim == 1 else b
        a2 = unsqueeze(a, 0) if a.ndim == 1 else a
        lead = tuple(a2.shape[:-1])
        if a2.shape[-1] != bm.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({int(np.prod(lead))}x{a2.shape[-1]} and "
                               f"{bm.shape[0]}x{bm.shape[1]})")
        out = _Matmul2d.apply(reshape(a2, (-1, a2.shape[-1])) if a2.ndim != 2 else a2, bm)
        out = reshape(out, lead + (bm.shape[1],)) if a2.ndim != 2 else out
        if b.ndim == 1:
            out = squeeze(out, -1)
        if a.ndim == 1:
            out = squeeze(out, -2 if b.ndim == 2 else -1) if out.ndim else out
        return out
    return _MatmulBatched.apply(a, b)


def mm(input, mat2):  # noqa: A002
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("mm(): both arguments must be 2-D")
    return _Matmul2d.apply(input, mat2)


# ------------------------------------------------------------------ activations
_SAVE = {"relu": "y", "leaky_relu": "x", "gelu": "x", "gelu_tanh": "x", "tanh": "y", "sigmoid": "y",
         "exp": "y", "log": "x", "abs": "x"}
_NODE = {"relu": "ReluBackward0", "leaky_relu": "LeakyReluBackward0", "gelu": "GeluBackward0",
         "gelu_tanh": "GeluBackward0", "tanh": "TanhBackward0", "sigmoid": "SigmoidBackward0",
         "exp": "ExpBackward0", "log": "LogBackward0", "abs": "AbsBackward0"}


class _Unary(Function):
    @staticmethod
    def forward(ctx, x, op, p):
        if not x.dtype.is_floating_point:
            x = x.to(dtype=_dt.get_default_dtype())
        y = backend_of(x).unary(op, x, p)
        ctx.op, ctx.p = op, p
        if _SAVE[op] == "y":
            ctx.save_for_backward(None, y)
        else:
            ctx.save_for_backward(x, None)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return backend_of(g).unary_bwd(ctx.op, g, x, y, ctx.p), None, None


def _unary(op, x, p=None):
    out = _Unary.apply(x, op, p)
    if out.grad_fn is not None:
        out.grad_fn.rename(_NODE[op])
    return out


def relu(input, inplace=False):  # noqa: A002
    return _unary("relu", input)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    return _unary("leaky_relu", input, float(negative_slope))


def gelu(input, approximate="none"):  # noqa: A002
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh.")
    return _unary("gelu" if approximate == "none" else "gelu_tanh", input)


def tanh(input):  # noqa: A002
    return _unary("tanh", input)


def sigmoid(input):  # noqa: A002
    return _unary("sigmoid", input)


def exp(input):  # noqa: A002
    return _unary("exp", input)


def log(input):  # noqa: A002
    return _unary("log", input)


def abs(input):  # noqa: A001,A002
    if not input.dtype.is_floating_point:   # integers stay integers (and need no gradient)
        return backend_of(input).unary("abs", input)
    return _unary("abs", input)


# ------------------------------------------------------------------ softmax
class _Softmax(Function):
    @staticmethod
    def forward(ctx, x, dim, log):
        y = backend_of(x).softmax(x, dim, log)
        ctx.dim, ctx.log = dim, log
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return backend_of(g).softmax_bwd(g, y, ctx.dim, ctx.log), None, None


def _softmax(x, dim, log, dtype):
    if dtype is not None:
        x = x.to(dtype=_dt.as_dtype(dtype))
    if dim is None:
        dim = 0 if x.ndim in (0, 1, 3) else 1   # PyTorch's legacy implicit-dim choice
    if x.ndim == 0:
        x1 = reshape(x, (1,))
        return reshape(_softmax(x1, 0, log, None), ())
    out = _Softmax.apply(x, x._wrap_dim(dim), log)
    if out.grad_fn is not None:
        out.grad_fn.rename("LogSoftmaxBackward0" if log else "SoftmaxBackward0")
    return out


def softmax(input, dim=None, dtype=None):  # noqa: A002
    return _softmax(input, dim, False, dtype)


def log_softmax(input, dim=None, dtype=None):  # noqa: A002
    return _softmax(input, dim, True, dtype)


# ------------------------------------------------------------------ losses
class _CrossEntropy(Function):
    node_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, logits, target, weight, ignore_index, reduction, smoothing):
        B = backend("cross_entropy", logits, target, weight)
        loss, saved = B.cross_entropy(logits, target, weight, ignore_index, reduction, smoothing)
        ctx.args = (ignore_index, reduction, smoothing)
        ctx.nsaved = len(saved)
        ctx.save_for_backward(*saved, target, weight)
        return loss

    @staticmethod
    def backward(ctx, g):
        st = ctx.saved_tensors
        saved, target, weight = st[:ctx.nsaved], st[ctx.nsaved], st[ctx.nsaved + 1]
        gx = backend_of(g).cross_entropy_bwd(g, saved, target, weight, *ctx.args)
        return gx, None, None, None, None, None


def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
                  reduction="mean", label_smoothing=0.0):
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target.dtype.is_floating_point and target.shape == input.shape:
        # class probabilities (PyTorch's test is exactly this: a float target of the input's shape):
        # -(target * log_softmax).sum(class dim), weighted per class
        cdim = 1 if input.ndim > 1 else 0
        c = input.shape[cdim]
        if label_smoothing:
            target = add(mul(target, 1 - label_smoothing), label_smoothing / c)
        lp = log_softmax(input, cdim)
        if weight is not None:
            wshape = [1] * input.ndim
            wshape[cdim] = c
            lp = mul(lp, reshape(weight, wshape))
        per = neg(sum(mul(lp, target), cdim))
        if reduction == "none":
            return per
        if reduction == "sum":
            return sum(per)
        return div(sum(per), input.shape[0]) if input.ndim > 1 else per
    if input.ndim == 1 and target.ndim == 0 and target.dtype.is_floating_point:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype._legacy[:-6]}")
    if input.ndim == 1:
        out = _CrossEntropy.apply(reshape(input, (1, -1)), reshape(target, (1,)), weight, ignore_index,
                                  reduction, float(label_smoothing))
        return reshape(out, ()) if reduction == "none" else out
    if input.ndim != 2:
        raise NotImplementedError("cross_entropy over extra (K-dimensional) axes is not supported: pass [N, C] logits")
    if target.ndim == 0 or target.shape[0] != input.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}).")
    if target.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dtype.is_floating_point:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype._legacy[:-6]}")
    return _CrossEntropy.apply(input, target, weight, ignore_index, reduction, float(label_smoothing))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    """nll on log-probabilities: cross_entropy of log-probabilities equals nll (log_softmax is idempotent)."""
    return cross_entropy(input, target, weight, size_average, ignore_index, reduce, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        import warnings
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                      f"({tuple(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      f"Please ensure they have the same size.", UserWarning, stacklevel=2)
    d = sub(input, target)
    sq = mul(d, d)
    if reduction == "none":
        return sq
    if reduction == "sum":
        return sum(sq)
    if reduction == "mean":
        return mean(sq)
    raise ValueError(f"{reduction} is not a valid value for reduction")


# ------------------------------------------------------------------ dropout
class _Dropout(Function):
    node_name = "NativeDropoutBackward0"

    @staticmethod
    def forward(ctx, x, p, generator):
        y, mask = backend_of(x).dropout(x, p, generator)
        ctx.p = p
        ctx.save_for_backward(mask)
        return y

    @staticmethod
    def backward(ctx, g):
        mask, = ctx.saved_tensors
        return backend_of(g).dropout_bwd(g, mask, ctx.p), None, None


def dropout(input, p=0.5, training=True, inplace=False, generator=None):  # noqa: A002
    """Zero each element with probability p, scale the rest by 1/(1-p). The mask comes from rawdev's generator:
    on the cpu drawn directly, on cuda a Philox seed drawn from it (so masks differ between devices)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return mul(input, 0.0)
    from .. import random as _random
    return _Dropout.apply(input, float(p), generator or _random.default_generator)
