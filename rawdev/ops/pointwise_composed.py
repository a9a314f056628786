"""The elementwise math composed from declared ops (unary.py and binary.py hold the kernel-backed ones), so both
devices and autograd come with them: logit, xlogy, sinc, deg2rad/rad2deg, heaviside, logaddexp/logaddexp2,
gcd/lcm, bit shifts, angle, square, positive, sgn, fmax/fmin, ldexp and frexp. The dtype queries (result_type,
promote_types, can_cast, ...) live in dtype_queries.py."""
import math

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor.core import Tensor
from .binary_math import _operands
from .registry import declare
from .rtypes import return_type as _rt
from .select.functions import where as _where
from .shape import sum_to


def _floating(x):
    return x if x.dtype.is_floating_point else x.to(dtype=_dt.get_default_dtype())


def logit(input, eps=None):  # noqa: A002
    """log(p / (1 − p)), with p clamped to [eps, 1 − eps] first when eps is given (the gradient is 0 outside).

    Args:
        input: probabilities.
        eps: the clamp, or None for none (then 0 and 1 give ∓inf).

    Example:
        >>> torch.logit(torch.tensor([0.25, 0.5]))
        tensor([-1.0986,  0.0000])
    """
    x = _floating(input)
    if eps is not None:
        x = x.clamp(eps, 1.0 - eps)
    return (x / (1.0 - x)).log()


def _xlogy_values(x, y):
    return _where((x == 0) & ~y.isnan(), 0.0, x * y.log())


class _Xlogy(Function):
    node_name = "XlogyBackward0"

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        with no_grad():
            return _xlogy_values(x, y)

    @staticmethod
    def backward(ctx, g):   # PyTorch's: d/dx = xlogy(x != 0, y) (0, not 0·log 0, where x is 0); d/dy = x / y
        x, y = ctx.saved_tensors
        gx = sum_to(g * _xlogy_values((x != 0).to(dtype=x.dtype), y), x.shape) if ctx.needs_input_grad[0] else None
        gy = sum_to(g * x / y, y.shape) if ctx.needs_input_grad[1] else None
        return gx, gy

    backward_graph = backward


def xlogy(input, other):  # noqa: A002
    """input · log(other), 0 where input is 0 (unless other is nan). Either may be a number.

    Example:
        >>> torch.xlogy(torch.tensor([0., 2.]), torch.tensor([0., 3.]))
        tensor([0.0000, 2.1972])
    """
    x, y = _operands("xlogy", input, other)
    return _Xlogy.apply(_floating(x), _floating(y))


def sinc(input):  # noqa: A002
    """sin(πx) / (πx), 1 at 0.

    Example:
        >>> torch.sinc(torch.tensor([0., 0.5]))
        tensor([1.0000, 0.6366])
    """
    x = _floating(input)
    zero = x == 0
    px = _where(zero, 1.0, x) * math.pi
    return _where(zero, 1.0, px.sin() / px)


def deg2rad(input):  # noqa: A002
    """Degrees to radians (an integer input gives the default float dtype).

    Example:
        >>> torch.deg2rad(torch.tensor([180.]))
        tensor([3.1416])
    """
    return _floating(input) * (math.pi / 180.0)


def rad2deg(input):  # noqa: A002
    """Radians to degrees.

    Example:
        >>> torch.rad2deg(torch.tensor([3.141592653589793]))
        tensor([180.])
    """
    return _floating(input) * (180.0 / math.pi)


def heaviside(input, values):  # noqa: A002
    """0 where input < 0, values where input == 0, 1 where input > 0. Both tensors of one dtype; no gradient
    (as PyTorch's).

    Example:
        >>> torch.heaviside(torch.tensor([-1., 0., 2.]), torch.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    x, v = input.detach(), values.detach()
    pos = (x > 0).to(dtype=x.dtype)
    return _where(x == 0, v.to(device=x.device), pos)


def logaddexp(input, other):  # noqa: A002
    """log(exp(a) + exp(b)) without overflow: max(a, b) + log1p(exp(−|a − b|)).

    Example:
        >>> torch.logaddexp(torch.tensor([1000.]), torch.tensor([1000.]))
        tensor([1000.6931])
    """
    a, b = _operands("logaddexp", input, other)
    a, b = _floating(a), _floating(b)
    from .select.functions import maximum
    m = maximum(a, b)
    same = a == b                                      # also ±inf meeting itself: no inf − inf
    d = _where(same, 0.0, (a - b).abs())
    return _where(same & a.isinf(), a, m + (-d).exp().log1p())


def logaddexp2(input, other):  # noqa: A002
    """log2(2^a + 2^b) without overflow.

    Example:
        >>> torch.logaddexp2(torch.tensor([3.]), torch.tensor([3.]))
        tensor([4.])
    """
    a, b = _operands("logaddexp2", input, other)
    a, b = _floating(a), _floating(b)
    from .select.functions import maximum
    m = maximum(a, b)
    same = a == b
    d = _where(same, 0.0, (a - b).abs())
    return _where(same & a.isinf(), a, m + (-d * math.log(2.0)).exp().log1p() * (1.0 / math.log(2.0)))


def _integers(op, input, other):  # noqa: A002
    a, b = _operands(op, input, other)
    if a.dtype.is_floating_point or a.dtype is _dt.bool:
        raise RuntimeError(f"\"{op}_cpu\" not implemented for '{a.dtype._legacy[:-6]}'")
    return a.detach(), b.detach()


def gcd(input, other):  # noqa: A002
    """The greatest common divisor, elementwise, of integer tensors (non-negative; gcd(0, 0) = 0). Euclid's
    algorithm as whole-tensor steps: about log(max) steps, each a device op and one "any left?" read.

    Example:
        >>> torch.gcd(torch.tensor([12, -18, 0]), torch.tensor([18, 12, 5]))
        tensor([6, 6, 5])
    """
    a, b = _integers("gcd", input, other)
    import numpy as np

    from .shape import broadcast_to
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    dt = a.dtype
    wide = _dt.int64                # |−128| must not wrap inside the loop; the result is cast back as PyTorch's
    a = broadcast_to(a.to(dtype=wide).abs(), shape).clone()
    b = broadcast_to(b.to(dtype=wide).abs(), shape).clone()
    while bool((b != 0).any().item()):
        nz = b != 0
        safe = _where(nz, b, 1)
        a, b = _where(nz, b, a), _where(nz, a % safe, 0)
    return a.to(dtype=dt)


def lcm(input, other):  # noqa: A002
    """The least common multiple, elementwise, of integer tensors (non-negative; 0 if either is 0).

    Example:
        >>> torch.lcm(torch.tensor([4, 6]), torch.tensor([6, -4]))
        tensor([12, 12])
    """
    a, b = _integers("lcm", input, other)
    g = gcd(a, b)
    return _where(g == 0, 0, (a // _where(g == 0, 1, g) * b).abs())


def _shift(op, input, other, left):  # noqa: A002
    a, b = _operands(op, input, other)
    if a.dtype.is_floating_point:
        raise RuntimeError(f"\"{op}_cpu\" not implemented for '{a.dtype._legacy[:-6]}'")
    a, b = a.detach(), b.detach()
    bits = {_dt.uint8: 8, _dt.int8: 8, _dt.int16: 16, _dt.int32: 32, _dt.int64: 64, _dt.bool: 8}[a.dtype]
    wide = a.to(dtype=_dt.int64)
    k = b.to(dtype=_dt.int64)
    out_of_range = (k < 0) | (k >= bits)
    from ..tensor.factory import tensor
    powers = tensor([1 << j for j in range(63)] + [-(1 << 63)], dtype=_dt.int64, device=a.device)
    p = powers.take(_where(out_of_range, 0, k).clamp(0, 63))
    if left:                        # two's-complement wrap: the product wraps in int64, the cast back wraps again
        out = _where(out_of_range, 0, wide * p)
    else:                           # arithmetic shift: floor division by 2^k, −1 or 0 past the width (and at 63,
        sign = out_of_range | (k == 63)     # where 2^63 is not an int64)
        out = _where(sign, _where(wide < 0, -1, 0), wide.div(p, rounding_mode="floor"))
    return out.to(dtype=a.dtype)


def bitwise_left_shift(input, other):  # noqa: A002
    """input << other for integer tensors (bits shifted past the width are lost, as two's complement).

    Example:
        >>> torch.tensor([1, -8]) << 2
        tensor([  4, -32])
    """
    return _shift("lshift", input, other, True)


def bitwise_right_shift(input, other):  # noqa: A002
    """input >> other for integer tensors, arithmetic (the sign is kept).

    Example:
        >>> torch.tensor([-8, 8]) >> 1
        tensor([-4,  4])
    """
    return _shift("rshift", input, other, False)


def angle(input):  # noqa: A002
    """The argument of each element as a complex number: π for negatives, 0 otherwise, nan for nan (float result;
    its gradient is zero, as PyTorch's for real input)."""
    x = _floating(input)
    return _where(x.isnan(), x, (x < 0).to(dtype=x.dtype) * math.pi)


def positive(input):  # noqa: A002
    """input itself (unary plus); refused for bool, as PyTorch."""
    if input.dtype is _dt.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def sgn(input):  # noqa: A002
    """sign(input) (the complex-aware sign; rawdev's tensors are real)."""
    return input.sign()


def _nan_ignoring(pick, input, other):  # noqa: A002
    from .binary_math import _operands
    a, b = _operands("fmax", input, other)
    import numpy as np
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    a, b = a.expand(*shape), b.expand(*shape)
    m = pick(a, b)
    if not m.dtype.is_floating_point:
        return m
    return _where(a.isnan(), b, _where(b.isnan(), a, m))


def fmax(input, other):  # noqa: A002
    """Elementwise maximum that ignores NaN (NaN only where both are NaN).

    Example:
        >>> torch.fmax(torch.tensor([1., float('nan')]), torch.tensor([float('nan'), 2.]))
        tensor([1., 2.])
    """
    from .select.functions import maximum
    return _nan_ignoring(maximum, input, other)


def fmin(input, other):  # noqa: A002
    """Elementwise minimum that ignores NaN."""
    from .select.functions import minimum
    return _nan_ignoring(minimum, input, other)


def ldexp(input, other):  # noqa: A002
    """input · 2^other.

    Example:
        >>> torch.ldexp(torch.tensor([1.]), torch.tensor([3]))
        tensor([8.])
    """
    x = input if input.dtype.is_floating_point else input.to(dtype=_dt.get_default_dtype())
    if isinstance(other, Tensor):
        return x * other.to(dtype=x.dtype).exp2()
    return x * (2.0 ** float(other))


return_frexp = _rt("frexp", ["mantissa", "exponent"])


def frexp(input):  # noqa: A002
    """(mantissa, exponent) with input = mantissa · 2^exponent and 0.5 ≤ |mantissa| < 1 (0 for 0).

    Example:
        >>> torch.frexp(torch.tensor([8., 0.75]))
        torch.return_types.frexp(mantissa=tensor([0.5000, 0.7500]), exponent=tensor([4, 0], dtype=torch.int32))
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.detach()
    a = x.abs()
    nonzero = (a > 0) & a.isfinite()
    e = _where(nonzero, a.log2().floor() + 1, 0.0)
    m = _where(nonzero, x / e.exp2(), x)
    # log2 can round across a power of two: bring |m| back into [0.5, 1)
    hi = m.abs() >= 1
    m, e = _where(hi, m / 2, m), _where(hi, e + 1, e)
    lo = nonzero & (m.abs() < 0.5)
    m, e = _where(lo, m * 2, m), _where(lo, e - 1, e)
    return return_frexp(m, e.to(dtype=_dt.int32))


def square(input):  # noqa: A002
    """input * input.

    Example:
        >>> torch.square(torch.tensor([2., -3.]))
        tensor([4., 9.])
    """
    return input * input


declare("logit", logit, family="pointwise_composed", inplace=True)
declare("xlogy", xlogy, family="pointwise_composed", inplace=True)
declare("sinc", sinc, family="pointwise_composed", inplace=True)
declare("deg2rad", deg2rad, family="pointwise_composed", inplace=True)
declare("rad2deg", rad2deg, family="pointwise_composed", inplace=True)
declare("heaviside", heaviside, family="pointwise_composed", inplace=True)
declare("logaddexp", logaddexp, family="pointwise_composed")
declare("logaddexp2", logaddexp2, family="pointwise_composed")
declare("gcd", gcd, family="pointwise_composed", inplace=True)
declare("lcm", lcm, family="pointwise_composed", inplace=True)
declare("bitwise_left_shift", bitwise_left_shift, family="pointwise_composed", inplace=True)
declare("bitwise_right_shift", bitwise_right_shift, family="pointwise_composed", inplace=True)
declare("angle", angle, family="pointwise_composed")
declare("positive", positive, family="pointwise_composed")
declare("fmax", fmax, family="pointwise_composed")
declare("fmin", fmin, family="pointwise_composed")
declare("frexp", frexp, family="pointwise_composed")
declare("sgn", sgn, family="pointwise_composed", inplace=True)
declare("ldexp", ldexp, family="pointwise_composed", inplace=True)
declare("square", square, family="pointwise_composed", inplace=True)
