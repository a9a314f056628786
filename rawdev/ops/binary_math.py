"""Math beyond + − × ÷: pow with a tensor exponent (and a scalar base, 10 ** t), atan2, fmod, remainder,
floor division, div's rounding modes, copysign, hypot, lerp, addcmul, addcdiv; logical and bitwise ops;
isnan/isinf/isfinite/…, nan_to_num, isclose/allclose/equal. The small linear-algebra forms (outer, dot, mv,
bmm, addmm, baddbmm, einsum) live in products.py.

The kernels (ptx/src/binary_math.cu, through cpu_math.py / cuda_math.py) compute values; gradients are written with
differentiable ops, so they run on either device and support double backward. lerp/addcmul/addcdiv are
compositions of declared ops.
"""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor.core import Tensor
from .dispatch import backend, backend_of, same_device
from .promotion import _result_dt, _scalar_dtype
from .registry import declare
from .shape import sum_to


def _operands(op, input, other):  # noqa: A002
    """(a, b) as tensors of the promoted dtype on one device; a Python number becomes a 0-d tensor."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    like = input if isinstance(input, Tensor) else other
    from ..tensor.factory import tensor
    if not isinstance(input, Tensor):
        input = tensor(input, dtype=_scalar_dtype(input, like), device=like.device)
    if not isinstance(other, Tensor):
        other = tensor(other, dtype=_scalar_dtype(other, like), device=like.device)
    input, other = same_device(input, other)
    dt = _result_dt(input, other)
    return (input if input.dtype is dt else input.to(dtype=dt)), (other if other.dtype is dt else other.to(dtype=dt))


def _floating(op, a, b):
    if not a.dtype.is_floating_point:
        dt = _dt.get_default_dtype()
        a, b = a.to(dtype=dt), b.to(dtype=dt)
    return a, b


# ------------------------------------------------------------------ pow: a scalar or a tensor exponent
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

    @staticmethod
    def backward_graph(ctx, g):
        x, = ctx.saved_tensors
        e = ctx.e
        if e == 0:
            return g * 0.0, None
        if e == 1:
            return g, None
        if e == 2:
            return g * x * 2.0, None
        return g * (pow(x, e - 1) * e), None


class _PowTensor(Function):
    node_name = "PowBackward1"

    @staticmethod
    def forward(ctx, a, b):
        if a.is_cuda and not a.dtype.is_floating_point:
            out = _int_pow_device(a, b)
        else:
            out = backend("pow", a, b).binary_math(a, b, "pow")
        ctx.save_for_backward(a, b, out)
        ctx.sa, ctx.sb = a.shape, b.shape
        return out

    @staticmethod
    def backward(ctx, g):
        from .select.functions import where
        a, b, out = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[0]:    # b·a^(b−1), 0 where b == 0 (PyTorch's pow_backward_self)
            ga = sum_to(where(b == 0, 0.0, g * b * _PowTensor.apply(a, b - 1)), ctx.sa)
        if ctx.needs_input_grad[1]:    # a^b·ln a, 0 where a == 0 and b >= 0 (pow_backward_exponent)
            gb = sum_to(where((a == 0) & (b >= 0), 0.0, g * out * a.log()), ctx.sb)
        return ga, gb

    backward_graph = backward


def _int_pow_device(a, b):
    """Integer a ** b on the device by squaring: one pass per bit of the largest exponent (its value read back
    once). Negative exponents raise as PyTorch's (0 ** 0 = 1; products wrap as the integer type does)."""
    from .select.functions import where
    from .shape import broadcast_to
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    base, e = broadcast_to(a, shape).contiguous(), broadcast_to(b, shape).to(dtype=_dt.int64)
    if e.numel() and int(e.min().item()) < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    out = (base * 0 + 1).to(dtype=a.dtype)
    top = int(e.max().item()) if e.numel() else 0
    while top > 0:
        out = where((e % 2) == 1, out * base, out)
        base = base * base
        e = e.div(2, rounding_mode="floor")
        top //= 2
    return out


def pow(input, exponent):  # noqa: A001,A002
    """input ** exponent elementwise; either may be a tensor (broadcast) or a number.

    Example:
        >>> torch.pow(torch.tensor([2., 3.]), torch.tensor([3., 2.]))
        tensor([8., 9.])
        >>> 10 ** torch.tensor([0., 1., 2.])
        tensor([  1.,  10., 100.])
    """
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        return _PowScalar.apply(input, exponent)
    a, b = _operands("pow", input, exponent)
    return _PowTensor.apply(a, b)


def float_power(input, exponent):  # noqa: A002
    """pow in float64 (the result is float64 whatever the inputs)."""
    a = input.to(dtype=_dt.float64) if isinstance(input, Tensor) else float(input)
    b = exponent.to(dtype=_dt.float64) if isinstance(exponent, Tensor) else float(exponent)
    return pow(a, b)


def _rpow(self, base):
    return pow(base, self)


# ------------------------------------------------------------------ atan2, fmod, remainder, floor_divide
class _Atan2(Function):
    node_name = "Atan2Backward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.sa, ctx.sb = a.shape, b.shape
        return backend("atan2", a, b).binary_math(a, b, "atan2")

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        d = a * a + b * b
        ga = sum_to(g * b / d, ctx.sa) if ctx.needs_input_grad[0] else None
        gb = sum_to(-g * a / d, ctx.sb) if ctx.needs_input_grad[1] else None
        return ga, gb

    backward_graph = backward


def atan2(input, other):  # noqa: A002
    """The angle of (other, input) in radians, elementwise: atan(input / other) in the right quadrant.

    Example:
        >>> torch.atan2(torch.tensor([1.]), torch.tensor([-1.]))
        tensor([2.3562])
    """
    a, b = _floating("atan2", *_operands("atan2", input, other))
    return _Atan2.apply(a, b)


class _Mod(Function):
    """fmod (C's, the sign of the dividend) or remainder (Python's, the sign of the divisor)."""

    @staticmethod
    def forward(ctx, a, b, op):
        ctx.save_for_backward(a, b)
        ctx.sa, ctx.sb, ctx.op = a.shape, b.shape, op
        return backend(op, a, b).binary_math(a, b, op)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = sum_to(g, ctx.sa) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:   # d/db (a − q·b) = −q, q = trunc(a/b) (fmod) or floor(a/b) (remainder)
            q = (a / b).trunc() if ctx.op == "fmod" else (a / b).floor()
            gb = sum_to(-g * q, ctx.sb)
        return ga, gb, None

    backward_graph = backward


def _mod(op, input, other):  # noqa: A002
    a, b = _operands(op, input, other)
    out = _Mod.apply(a, b, op)
    if out.grad_fn is not None:
        out.grad_fn.rename("FmodBackward1" if op == "fmod" else "RemainderBackward1")
    return out


def fmod(input, other):  # noqa: A002
    """The remainder of input / other with the sign of input (C's fmod).

    Example:
        >>> torch.fmod(torch.tensor([-3., 3.]), 2)
        tensor([-1.,  1.])
    """
    return _mod("fmod", input, other)


def remainder(input, other):  # noqa: A002
    """The remainder of input / other with the sign of other (Python's %).

    Example:
        >>> torch.remainder(torch.tensor([-3., 3.]), 2)
        tensor([1., 1.])
    """
    return _mod("remainder", input, other)


def floor_divide(input, other):  # noqa: A002
    """floor(input / other) elementwise (Python's //); not differentiable.

    Example:
        >>> torch.floor_divide(torch.tensor([-7., 7.]), 2)
        tensor([-4.,  3.])
    """
    a, b = _operands("floor_divide", input, other)
    return backend("floor_divide", a, b).binary_math(a.detach(), b.detach(), "floor_divide")


def _div_rounding(input, other, rounding_mode):  # noqa: A002
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        a, b = _operands("div", input, other)
        if a.dtype.is_floating_point:
            return (a.detach() / b.detach()).trunc()
        q = floor_divide(a, b)      # integers: floor, then one step toward zero where the signs differ
        r = _mod("fmod", a, b).detach()
        return q + ((r != 0) & ((a < 0) != (b < 0))).to(dtype=q.dtype)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                       f"'{rounding_mode}'")


class _Binary(Function):
    """copysign / hypot: values from the kernel, gradients from differentiable ops."""

    @staticmethod
    def forward(ctx, a, b, op):
        ctx.save_for_backward(a, b)
        ctx.sa, ctx.sb, ctx.op = a.shape, b.shape, op
        return backend(op, a, b).binary_math(a, b, op)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        if ctx.op == "hypot":
            h = _Binary.apply(a, b, "hypot")
            ga = sum_to(g * a / h, ctx.sa) if ctx.needs_input_grad[0] else None
            gb = sum_to(g * b / h, ctx.sb) if ctx.needs_input_grad[1] else None
            return ga, gb, None
        # copysign: d/da = sign(a)·sign of b's sign bit; 0 with respect to b
        s = _Binary.apply(a.sign(), b, "copysign")
        return (sum_to(g * s, ctx.sa) if ctx.needs_input_grad[0] else None), None, None

    backward_graph = backward


def copysign(input, other):  # noqa: A002
    """|input| with the sign of other."""
    a, b = _floating("copysign", *_operands("copysign", input, other))
    return _Binary.apply(a, b, "copysign")


def hypot(input, other):  # noqa: A002
    """sqrt(input² + other²) without overflow in the squares."""
    a, b = _floating("hypot", *_operands("hypot", input, other))
    return _Binary.apply(a, b, "hypot")


# ------------------------------------------------------------------ compositions
def lerp(input, end, weight):  # noqa: A002
    """input + weight · (end − input); weight a number or a tensor.

    Example:
        >>> torch.lerp(torch.zeros(2), torch.ones(2), 0.25)
        tensor([0.2500, 0.2500])
    """
    return input + weight * (end - input)


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """input + value · tensor1 · tensor2."""
    return input + value * (tensor1 * tensor2) if value != 1 else input + tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """input + value · tensor1 / tensor2."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
                           "tensor2), for all dtypes.")
    return input + value * (tensor1 / tensor2) if value != 1 else input + tensor1 / tensor2


# ------------------------------------------------------------------ logical and bitwise
def _truth(t):
    """t as bool (t != 0): bool passes, uint8 is compared by the byte kernel's rules, floats by classify."""
    if t.dtype is _dt.bool:
        return t
    return t != 0


def _logical(op, input, other):  # noqa: A002
    from ..tensor.factory import tensor
    if not isinstance(other, Tensor):
        other = tensor(bool(other), device=input.device)
    input, other = same_device(input, other)
    a, b = _truth(input.detach()), _truth(other.detach())
    return backend(op, a, b).logical(a, b, op, _dt.bool)


def logical_and(input, other):  # noqa: A002
    """Elementwise input ≠ 0 and other ≠ 0, as bool."""
    return _logical("logical_and", input, other)


def logical_or(input, other):  # noqa: A002
    """Elementwise input ≠ 0 or other ≠ 0, as bool."""
    return _logical("logical_or", input, other)


def logical_xor(input, other):  # noqa: A002
    """Elementwise (input ≠ 0) xor (other ≠ 0), as bool."""
    return _logical("logical_xor", input, other)


def logical_not(input):  # noqa: A002
    """Elementwise input == 0, as bool."""
    a = _truth(input.detach())
    return backend("logical_not", a).logical_not(a, False)


def _bitwise(op, input, other):  # noqa: A002
    from ..tensor.factory import tensor
    if not isinstance(input, Tensor):
        input, other = other, input
    if not isinstance(other, Tensor):
        other = tensor(other, dtype=input.dtype, device=input.device)
    input, other = same_device(input, other)
    for t in (input, other):
        if t.dtype.is_floating_point:
            raise RuntimeError(f"\"{op}_{'cpu' if t.is_cpu else 'cuda'}\" not implemented for "
                               f"'{t.dtype._legacy[:-6]}'")
    dt = _result_dt(input, other)
    a, b = input.detach().to(dtype=dt), other.detach().to(dtype=dt)
    return backend(op, a, b).logical(a, b, op, dt)


def bitwise_and(input, other):  # noqa: A002
    """Elementwise AND of integer or bool tensors (the & operator)."""
    return _bitwise("bitwise_and", input, other)


def bitwise_or(input, other):  # noqa: A002
    """Elementwise OR of integer or bool tensors (the | operator)."""
    return _bitwise("bitwise_or", input, other)


def bitwise_xor(input, other):  # noqa: A002
    """Elementwise XOR of integer or bool tensors (the ^ operator)."""
    return _bitwise("bitwise_xor", input, other)


def bitwise_not(input):  # noqa: A002
    """Elementwise NOT of an integer or bool tensor (the ~ operator; logical not for bool)."""
    if input.dtype.is_floating_point:
        raise TypeError("~ (bitwise_not) is only supported for integer and bool tensors, got "
                        f"{input.dtype}")
    return backend("bitwise_not", input).logical_not(input.detach(), True)


# ------------------------------------------------------------------ classification
def _classify(op, input, int_answer):  # noqa: A002
    from ..tensor.factory import full
    if not input.dtype.is_floating_point:   # integers are finite, never NaN or infinite
        return full(tuple(input.shape), int_answer, dtype=_dt.bool, device=input.device)
    x = input.detach()
    if x.is_cuda and x.dtype is not _dt.float32:
        x = x.to(dtype=_dt.float32)
    return backend(op, x).classify(x, op)


def isnan(input):  # noqa: A002
    """Elementwise: is NaN (bool)."""
    return _classify("isnan", input, False)


def isinf(input):  # noqa: A002
    """Elementwise: is +inf or −inf (bool)."""
    return _classify("isinf", input, False)


def isfinite(input):  # noqa: A002
    """Elementwise: neither NaN nor infinite (bool)."""
    return _classify("isfinite", input, True)


def isposinf(input):  # noqa: A002
    return _classify("isposinf", input, False)


def isneginf(input):  # noqa: A002
    return _classify("isneginf", input, False)


def signbit(input):  # noqa: A002
    """Elementwise: the sign bit is set (−0.0 included)."""
    if not input.dtype.is_floating_point:
        return input < 0
    return _classify("signbit", input, False)


class _NanToNum(Function):
    node_name = "NanToNumBackward0"

    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        ctx.save_for_backward(x)
        return backend("nan_to_num", x).nan_to_num(x, nan, posinf, neginf)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * isfinite(x).to(dtype=g.dtype), None, None, None

    backward_graph = backward


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """input with NaN → nan, +inf → posinf, −inf → neginf (defaults: 0, the dtype's largest and lowest).

    Example:
        >>> torch.nan_to_num(torch.tensor([float('nan'), float('inf')]), posinf=1.0)
        tensor([0., 1.])
    """
    if not input.dtype.is_floating_point:
        return input.clone()
    fi = _dt.finfo(input.dtype)
    return _NanToNum.apply(input, float(nan), float(fi.max if posinf is None else posinf),
                           float(fi.min if neginf is None else neginf))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Elementwise |input − other| ≤ atol + rtol·|other| (infinities equal only to themselves).

    Example:
        >>> torch.isclose(torch.tensor([1., 2.]), torch.tensor([1., 2.1]))
        tensor([ True, False])
    """
    a, b = _operands("isclose", input, other)
    a, b = a.detach(), b.detach()
    eq = a == b
    if not a.dtype.is_floating_point:
        return eq | ((a - b).abs() <= atol + rtol * b.abs()) if (rtol or atol) else eq
    close = eq | (isfinite(a) & isfinite(b) & ((a - b).abs() <= atol + rtol * b.abs()))
    if equal_nan:
        close = close | (isnan(a) & isnan(b))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """True when isclose holds everywhere (a host read, as PyTorch's)."""
    return bool(np.asarray(isclose(input, other, rtol, atol, equal_nan).cpu()._values()).all())


def equal(input, other):  # noqa: A002
    """True when both have the same shape and the same elements (a host read)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(np.asarray((input.detach() == other.detach()).cpu()._values()).all())


declare("pow", pow, family="binary", inplace=True)
for _name, _fn, _kw in (
        ("atan2", atan2, {"aliases": ("arctan2",), "inplace": True}), ("fmod", fmod, {"inplace": True}),
        ("remainder", remainder, {"inplace": True}), ("floor_divide", floor_divide, {"inplace": True}),
        ("float_power", float_power, {}), ("copysign", copysign, {"inplace": True}),
        ("hypot", hypot, {"inplace": True}),
        ("lerp", lerp, {"inplace": True}), ("addcmul", addcmul, {"inplace": True}),
        ("addcdiv", addcdiv, {"inplace": True}), ("logical_and", logical_and, {"inplace": True}),
        ("logical_or", logical_or, {"inplace": True}), ("logical_xor", logical_xor, {"inplace": True}),
        ("logical_not", logical_not, {"inplace": True}), ("bitwise_and", bitwise_and, {"inplace": True}),
        ("bitwise_or", bitwise_or, {"inplace": True}), ("bitwise_xor", bitwise_xor, {"inplace": True}),
        ("bitwise_not", bitwise_not, {"inplace": True}), ("isnan", isnan, {}),
        ("isinf", isinf, {}), ("isfinite", isfinite, {}), ("isposinf", isposinf, {}), ("isneginf", isneginf, {}),
        ("signbit", signbit, {}), ("nan_to_num", nan_to_num, {"inplace": True}), ("isclose", isclose, {}),
        ("allclose", allclose, {}), ("equal", equal, {})):
    declare(_name, _fn, family="binary_math", **_kw)
