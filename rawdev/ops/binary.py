"""Binary arithmetic and comparisons: add, sub, mul, div, pow, neg, eq/ne/lt/le/gt/ge.

Each op's autograd Function holds its forward and backward side by side; broadcasting gradients are
summed back to each operand's shape (shape.sum_to). The cpu path is numpy (rawdev.ops.cpu), the cuda
path the elementwise kernels (rawdev.ops.cuda: add, axpy, mul, div, scale, pow_scalar, compare_*).
"""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor.core import Tensor
from .binary_math import _div_rounding
from .dispatch import backend, backend_of, same_device
from .promotion import _bcast_shape, _for_scalar, _is_scalar, _result_dt, _scalar_dt
from .registry import declare
from .shape import sum_to


# ------------------------------------------------------------------ arithmetic
class _Add(Function):
    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b, alpha):
        sa, sb = a._shape, b._shape
        if sa != sb:
            _bcast_shape(a, b)   # PyTorch's error when they do not broadcast
        B = backend("add", a, b)
        ctx.sa, ctx.sb, ctx.alpha = sa, sb, alpha
        da = a._dtype
        return B.add(a, b, alpha, da if da is b._dtype else _result_dt(a, b))

    @staticmethod
    def backward(ctx, g):
        B = backend_of(g)
        ga = sum_to(g, ctx.sa) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            gb = sum_to(g, ctx.sb)
            if ctx.alpha != 1:
                gb = B.scale(gb, ctx.alpha)
        return ga, gb, None

    @staticmethod
    def backward_graph(ctx, g):   # create_graph=True: the same, from differentiable ops
        ga = sum_to(g, ctx.sa) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            gb = sum_to(g, ctx.sb)
            if ctx.alpha != 1:
                gb = mul(gb, ctx.alpha)
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
        ga = sum_to(B.mul(g, b, g.dtype), ctx.sa) if ctx.needs_input_grad[0] else None
        gb = sum_to(B.mul(g, a, g.dtype), ctx.sb) if ctx.needs_input_grad[1] else None
        return ga, gb

    @staticmethod
    def backward_graph(ctx, g):
        a, b = ctx.saved_tensors
        ga = sum_to(mul(g, b), ctx.sa) if ctx.needs_input_grad[0] else None
        gb = sum_to(mul(g, a), ctx.sb) if ctx.needs_input_grad[1] else None
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
        ga = sum_to(B.div(g, b, g.dtype), ctx.sa) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:   # -g * a / b^2
            gb = sum_to(B.neg(B.div(B.mul(g, a, g.dtype), B.mul(b, b, g.dtype), g.dtype)), ctx.sb)
        return ga, gb

    @staticmethod
    def backward_graph(ctx, g):
        a, b = ctx.saved_tensors
        ga = sum_to(div(g, b), ctx.sa) if ctx.needs_input_grad[0] else None
        gb = sum_to(neg(div(mul(g, a), mul(b, b))), ctx.sb) if ctx.needs_input_grad[1] else None
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

    @staticmethod
    def backward_graph(ctx, g):
        return mul(g, ctx.s), None


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

    @staticmethod
    def backward_graph(ctx, g):
        return div(g, ctx.s), None


class _AddScalar(Function):
    node_name = "AddBackward0"
    differentiable_backward = True

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

    @staticmethod
    def backward_graph(ctx, g):
        return neg(g), None


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

    @staticmethod
    def backward_graph(ctx, g):
        x, y = ctx.saved_tensors
        return neg(div(mul(g, y), x)), None


class _Neg(Function):
    node_name = "NegBackward0"

    @staticmethod
    def forward(ctx, x):
        return backend_of(x).neg(x)

    @staticmethod
    def backward(ctx, g):
        return backend_of(g).neg(g)

    @staticmethod
    def backward_graph(ctx, g):
        return neg(g)


def add(input, other, *, alpha=1):  # noqa: A002
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        if input._device is not other._device:   # one device object (as_device interns them): nothing to move
            input, other = same_device(input, other)
        return _Add.apply(input, other, alpha)
    if isinstance(input, Tensor) and _is_scalar(other):
        return _AddScalar.apply(input, other if alpha == 1 else other * alpha)  # True * 1 would be an int
    if isinstance(other, Tensor) and _is_scalar(input):
        return _AddScalar.apply(other if alpha == 1 else _Scale.apply(other, alpha), input)
    raise TypeError(f"add(): unsupported operand types {type(input).__name__} and {type(other).__name__}")


def sub(input, other, *, alpha=1):  # noqa: A002
    if all(isinstance(t, Tensor) and t.dtype is _dt.bool or isinstance(t, bool) for t in (input, other)):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        input, other = same_device(input, other)
        return _Add.apply(input, other, -alpha)
    if isinstance(input, Tensor) and _is_scalar(other):
        return _AddScalar.apply(input, -other * alpha)
    if isinstance(other, Tensor) and _is_scalar(input):
        return _RSubScalar.apply(other if alpha == 1 else _Scale.apply(other, alpha), input)
    raise TypeError(f"sub(): unsupported operand types {type(input).__name__} and {type(other).__name__}")


def mul(input, other, *, out=None):  # noqa: A002
    if out is not None:
        from .out_arg import write_out
        return write_out("mul", mul(input, other), out, input, other)
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        input, other = same_device(input, other)
        return _Mul.apply(input, other)
    if isinstance(input, Tensor) and _is_scalar(other):
        return _Scale.apply(input, other)
    if isinstance(other, Tensor) and _is_scalar(input):
        return _Scale.apply(other, input)
    raise TypeError(f"mul(): unsupported operand types {type(input).__name__} and {type(other).__name__}")


def div(input, other, *, rounding_mode=None):  # noqa: A002
    if rounding_mode is not None:
        return _div_rounding(input, other, rounding_mode)
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        input, other = same_device(input, other)
        return _Div.apply(input, other)
    if isinstance(input, Tensor) and _is_scalar(other):
        return _DivScalar.apply(input, other)
    if isinstance(other, Tensor) and _is_scalar(input):
        return _RDivScalar.apply(other, input)
    raise TypeError(f"div(): unsupported operand types {type(input).__name__} and {type(other).__name__}")


def neg(input):  # noqa: A002
    return _Neg.apply(input)



# ------------------------------------------------------------------ comparisons (never differentiable)
def _compare(op, input, other):  # noqa: A002
    """Bool tensor input <op> other. Operands are promoted as arithmetic promotes them (int64 vs float32
    compares in float32); other is a tensor (broadcast) or a Python scalar."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    a = input.detach()
    if isinstance(other, Tensor):
        input, other = same_device(input, other)
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




declare("add", add, family="binary")
declare("sub", sub, family="binary", aliases=("subtract",))
declare("mul", mul, family="binary", aliases=("multiply",))
declare("div", div, family="binary", aliases=("divide", "true_divide"))
declare("neg", neg, family="binary", aliases=("negative",), inplace=True)
declare("eq", eq, family="binary", inplace=True)
declare("ne", ne, family="binary", aliases=("not_equal",), inplace=True)
declare("lt", lt, family="binary", aliases=("less",), inplace=True)
declare("le", le, family="binary", aliases=("less_equal",), inplace=True)
declare("gt", gt, family="binary", aliases=("greater",), inplace=True)
declare("ge", ge, family="binary", aliases=("greater_equal",), inplace=True)
