"""More elementwise math, composed from declared ops (so both devices and autograd come with them): logit, xlogy,
sinc, deg2rad/rad2deg, heaviside, logaddexp/logaddexp2, gcd/lcm, bit shifts, frac-free helpers, and the dtype
queries result_type, promote_types, can_cast, is_floating_point/is_complex/is_nonzero."""
import math

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor import factory
from ..tensor.core import Tensor
from .binary_math import _operands
from .promotion import _result_dt
from .registry import declare
from .select import where as _where
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
    from .select import maximum
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
    from .select import maximum
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


# ------------------------------------------------------------------ dtype queries
def _dtype_of(x):
    if isinstance(x, Tensor):
        return x
    from ..tensor.factory import tensor
    return tensor(x)


def result_type(tensor, other):
    """The dtype an arithmetic op on the two operands gives (tensors or Python numbers).

    Example:
        >>> torch.result_type(torch.tensor([1, 2]), 1.0)
        torch.float32
    """
    from .binary_math import _scalar_dtype
    if isinstance(tensor, Tensor) and isinstance(other, Tensor):
        return _result_dt(tensor, other)
    if isinstance(tensor, Tensor):
        return _result_dt(tensor, _dtype_of(other).to(dtype=_scalar_dtype(other, tensor)))
    if isinstance(other, Tensor):
        return _result_dt(_dtype_of(tensor).to(dtype=_scalar_dtype(tensor, other)), other)
    return _result_dt(_dtype_of(tensor), _dtype_of(other))


def promote_types(type1, type2):
    """The smallest dtype both dtypes convert to without losing their kind.

    Example:
        >>> torch.promote_types(torch.int32, torch.float32)
        torch.float32
    """
    from ..tensor.factory import empty
    return _result_dt(empty((1,), dtype=type1), empty((1,), dtype=type2))


def _kind(d):
    return 0 if d is _dt.bool else (2 if d.is_floating_point else 1)


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ → to implicitly (no lower kind: float to an integer, or a
    number to bool, is refused).

    Example:
        >>> torch.can_cast(torch.float32, torch.int32)
        False
    """
    return _kind(from_) <= _kind(to)


def is_floating_point(input):  # noqa: A002
    """Whether input's dtype is a floating-point dtype."""
    return input.dtype.is_floating_point


def is_nonzero(input):  # noqa: A002
    """The truth of a one-element tensor (RuntimeError for any other size, as PyTorch)."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_signed(input):  # noqa: A002
    """Whether input's dtype can hold negative values (False for uint8 and bool)."""
    return input.dtype.is_signed


def isreal(input):  # noqa: A002
    """True everywhere for rawdev's real dtypes (PyTorch: whether each element has a zero imaginary part)."""
    return factory.ones(input.shape, dtype=_dt.bool, device=input.device)


def angle(input):  # noqa: A002
    """The argument of each element as a complex number: π for negatives, 0 otherwise, nan for nan (float result;
    its gradient is zero, as PyTorch's for real input)."""
    x = _floating(input)
    return _where(x.isnan(), x, (x < 0).to(dtype=x.dtype) * math.pi)


declare("logit", logit, family="pointwise2", inplace=True)
declare("xlogy", xlogy, family="pointwise2", inplace=True)
declare("sinc", sinc, family="pointwise2", inplace=True)
declare("deg2rad", deg2rad, family="pointwise2", inplace=True)
declare("rad2deg", rad2deg, family="pointwise2", inplace=True)
declare("heaviside", heaviside, family="pointwise2", inplace=True)
declare("logaddexp", logaddexp, family="pointwise2")
declare("logaddexp2", logaddexp2, family="pointwise2")
declare("gcd", gcd, family="pointwise2", inplace=True)
declare("lcm", lcm, family="pointwise2", inplace=True)
declare("bitwise_left_shift", bitwise_left_shift, family="pointwise2", inplace=True)
declare("bitwise_right_shift", bitwise_right_shift, family="pointwise2", inplace=True)
declare("result_type", result_type, family="pointwise2", method=False)
declare("promote_types", promote_types, family="pointwise2", method=False)
declare("can_cast", can_cast, family="pointwise2", method=False)
declare("is_floating_point", is_floating_point, family="pointwise2", method=False)
declare("is_nonzero", is_nonzero, family="pointwise2")
declare("is_signed", is_signed, family="pointwise2", torch=False)
declare("isreal", isreal, family="pointwise2")
declare("angle", angle, family="pointwise2")
