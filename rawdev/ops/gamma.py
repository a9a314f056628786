"""The gamma family and erfinv as compositions of declared elementwise ops: lgamma, digamma, polygamma, erfinv,
mvlgamma. They run on either device with the same arithmetic (no kernels of their own) and differentiate into
each other: lgamma' = digamma, digamma' = polygamma(1), polygamma(n)' = polygamma(n + 1), erfinv' =
√π/2·exp(erfinv²) — so double backward works too.

How each is computed (float32 on cuda, the input's dtype on the cpu):
- the argument is shifted up by a recurrence until an asymptotic (Stirling) series converges to well below
  float32 precision, and the shift is undone with the recurrence's sum;
- below 1/2, the reflection formulas carry the value over from 1 − x, with sin/tan of π·(x − round(x)) so a
  large |x| loses no accuracy in the angle;
- erfinv starts from Giles' single-precision approximation and takes Newton steps on erf.
"""
import math

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor.core import Tensor
from .registry import declare
from .select.functions import where as _where

_SHIFT = 8          # the asymptotic series are used from x + 8 upward: their first dropped term is < 1e-10
_LOG_2PI_HALF = 0.5 * math.log(2.0 * math.pi)
# Bernoulli numbers B_2k, k = 1..7, for the polygamma series
_B2K = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6)


def _float(x):
    return x if x.dtype.is_floating_point else x.to(dtype=_dt.get_default_dtype())


def _nonpos_int(x):
    return (x <= 0) & (x == x.floor())


def _shifted(x):
    """(z, small): z = x + 8 where x < 8 (else x), and that mask."""
    small = x < _SHIFT
    return _where(small, x + float(_SHIFT), x), small


# lgamma(2 + p) / p on [0, 1] as a polynomial in p (highest power first): a Chebyshev fit to math.lgamma, max
# error < 1e-15; it keeps lgamma's roots at 1 and 2 accurate to the last bit instead of a difference of two ~10s
_LGAMMA_2P = (-8.690020694619319e-05, 0.000630271013076094, -0.002049891706550337, 0.003948482904192951,
              -0.005016104540292894, 0.004450303275167168, -0.002919171786855041, 0.0017002200835170107,
              -0.0015648185514813252, 0.0029711256684324607, -0.007397218854837023, 0.02058186907487021,
              -0.06735235563760249, 0.3224670347358282, 0.42278433508910396)


def _lgamma_right(x):
    """lgamma for x ≥ 1/2. Below 8: x = n + p, lgamma(2 + p) from the polynomial, then the recurrence
    Γ(x + 1) = xΓ(x) steps to n (at most 6 factors). From 8 up: Stirling's series."""
    small = x < _SHIFT
    xs = _where(small, x, 2.0)
    n = xs.floor()
    p = xs - n
    base = p * _horner(_LGAMMA_2P, p)
    prod = 1.0 + 0.0 * p
    for k in range(2, _SHIFT - 1):                      # Γ(n + p) = Γ(2 + p)·(2 + p)…(n − 1 + p) for n ≥ 3
        prod = prod * _where(n > k, p + float(k), 1.0)
    low = _where(n == 1, p.log1p(), 0.0) + _where(n == 0, p.log() + p.log1p(), 0.0)
    near = base + prod.log() - low
    z = _where(small, 10.0, x)
    inv = 1.0 / z
    inv2 = inv * inv
    series = inv * (1.0 / 12 + inv2 * (-1.0 / 360 + inv2 * (1.0 / 1260 + inv2 * (-1.0 / 1680 + inv2 / 1188))))
    far = (z - 0.5) * z.log() - z + _LOG_2PI_HALF + series
    return _where(small, near, far)


def _lgamma(x):
    x = _float(x)
    r = x - x.round()                                   # sin(πx) = ±sin(πr), exact r
    reflect = x < 0.5
    xr = _where(reflect, 1.0 - x, x)
    right = _lgamma_right(xr)
    left = math.log(math.pi) - (r * math.pi).sin().abs().log() - right
    out = _where(reflect, left, right)
    return _where(_nonpos_int(x) | x.isinf(), math.inf, out)


def _digamma_right(x):
    z, small = _shifted(x)
    sub = 1.0 / x
    for k in range(1, _SHIFT):
        sub = sub + 1.0 / (x + float(k))
    inv = 1.0 / z
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132))))
    return z.log() - 0.5 * inv - series - _where(small, sub, 0.0)


def _digamma(x):
    x = _float(x)
    r = x - x.round()
    reflect = x < 0.5
    xr = _where(reflect, 1.0 - x, x)
    right = _digamma_right(xr)
    left = right - math.pi / (r * math.pi).tan()        # ψ(x) = ψ(1 − x) − π cot(πx); cot has period π
    out = _where(reflect, left, right)
    out = _where(_nonpos_int(x), math.nan, out)
    out = _where(x == 0, -math.inf, out)                # PyTorch: ψ(0) = −inf, ψ(−n) = nan
    return _where(x == math.inf, math.inf, out)


def _polygamma_right(n, x, shift):
    """ψ⁽ⁿ⁾(x), n ≥ 1, for x > −shift + 10 or so: (−1)ⁿ⁺¹ n! Σ_{k<shift} (x+k)^−(n+1) + the series at x + shift."""
    sign = -1.0 if n % 2 == 0 else 1.0
    fact = math.factorial(n)
    acc = (1.0 / x) ** (n + 1)
    for k in range(1, shift):
        acc = acc + (1.0 / (x + float(k))) ** (n + 1)
    z = x + float(shift)
    inv = 1.0 / z
    series = math.factorial(n - 1) * inv ** n + 0.5 * fact * inv ** (n + 1)
    for k, b in enumerate(_B2K, start=1):
        series = series + (b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)) * inv ** (2 * k + n)
    return sign * (fact * acc + series)


def _polygamma(n, x):
    x = _float(x)
    if n == 0:
        return _digamma(x)
    shift = 10 + 2 * n              # the series' terms shrink like (n + 2k)!/z^(2k) — a larger z for larger n
    if n == 1:                      # ψ'(x) = π²/sin²(πx) − ψ'(1 − x) below 1/2
        r = x - x.round()
        reflect = x < 0.5
        right = _polygamma_right(1, _where(reflect, 1.0 - x, x), shift)
        s = (r * math.pi).sin()
        out = _where(reflect, math.pi ** 2 / (s * s) - right, right)
    else:
        out = _polygamma_right(n, x, shift)
    return _where(_nonpos_int(x), math.inf, out)


class _GammaFn(Function):
    """y = f(x) computed as a composition without recording it, with the derivative given by the next function
    of the family (itself differentiable)."""

    @staticmethod
    def forward(ctx, x, kind, n):
        ctx.kind, ctx.n = kind, n
        ctx.save_for_backward(x)
        with no_grad():
            if kind == "lgamma":
                y = _lgamma(x)
            elif kind == "digamma":
                y = _digamma(x)
            else:
                y = _polygamma(n, x)
        return y if y.dtype is x.dtype or not x.dtype.is_floating_point else y.to(dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        order = 0 if ctx.kind == "lgamma" else (1 if ctx.kind == "digamma" else ctx.n + 1)
        return g * polygamma(order, x), None, None

    backward_graph = backward


def _check(name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def _named(y, name):
    if y.grad_fn is not None:
        y.grad_fn.rename(name)
    return y


def lgamma(input):  # noqa: A002
    """log|Γ(x)| elementwise (inf at 0, −1, −2, …).

    Args:
        input: a tensor; integers are computed in the default float dtype.

    Returns:
        A floating tensor of input's shape.

    Example:
        >>> torch.lgamma(torch.tensor([0.5, 1., 10.]))
        tensor([0.5724, 0.0000, 12.8018])
    """
    _check("lgamma", input)
    return _named(_GammaFn.apply(input, "lgamma", 0), "LgammaBackward0")


def digamma(input):  # noqa: A002
    """ψ(x) = d/dx lgamma(x) elementwise (−inf at 0 and nan at the negative integers, as PyTorch).

    Example:
        >>> torch.digamma(torch.tensor([1., 0.5]))
        tensor([-0.5772, -1.9635])
    """
    _check("digamma", input)
    return _named(_GammaFn.apply(input, "digamma", 0), "DigammaBackward0")


def polygamma(n, input):  # noqa: A002
    """ψ⁽ⁿ⁾(x), the n-th derivative of digamma, elementwise; polygamma(0, x) is digamma(x).

    Args:
        n: the order, a non-negative int.
        input: a tensor.

    Example:
        >>> torch.polygamma(1, torch.tensor([1.]))
        tensor([1.6449])
    """
    if isinstance(n, Tensor):       # Tensor.polygamma(n) puts self first
        n, input = input, n
    if int(n) != n or n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    _check("polygamma", input)
    return _named(_GammaFn.apply(input, "polygamma", int(n)), "PolygammaBackward0")


def _tensor_polygamma(self, n):
    return polygamma(n, self)


def mvlgamma(input, p):  # noqa: A002
    """The multivariate log-gamma of dimension p: p(p−1)/4·log π + Σ_{j<p} lgamma(x − j/2). Every element must be
    greater than (p − 1)/2.

    Example:
        >>> torch.mvlgamma(torch.tensor([2.5]), 2)
        tensor([1.0242])
    """
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if input.numel() and not bool((input > (p - 1) / 2).all().item()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    out = lgamma(input)
    for j in range(1, p):
        out = out + lgamma(input - j / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


# Giles, "Approximating the erfinv function" (2010), single-precision coefficients
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coeffs, w):
    p = 0.0 * w + coeffs[0]
    for c in coeffs[1:]:
        p = p * w + c
    return p


def _erfinv(x):
    x = _float(x)
    inside = x.abs() < 1
    xs = _where(inside, x, 0.0)
    w = -((1.0 - xs) * (1.0 + xs)).log()
    central = _horner(_ERFINV_CENTRAL, w - 2.5)
    tail = _horner(_ERFINV_TAIL, w.clamp_min(0.0).sqrt() - 3.0)
    y = _where(w < 5.0, central, tail) * xs
    for _ in range(3 if x.dtype is _dt.float64 else 1):     # Newton on erf(y) = x (quadratic: 3 steps reach f64)
        from .unary import erf
        y = y - (erf(y) - xs) / ((2.0 / math.sqrt(math.pi)) * (-(y * y)).exp())
    y = _where(x.abs() == 1, x * math.inf, y)
    return _where(inside | (x.abs() == 1), y, math.nan)


class _Erfinv(Function):
    node_name = "ErfinvBackward0"

    @staticmethod
    def forward(ctx, x):
        with no_grad():
            y = _erfinv(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * (math.sqrt(math.pi) / 2.0) * (y * y).exp()

    backward_graph = backward


def erfinv(input):  # noqa: A002
    """The inverse of erf on (−1, 1): ±inf at ±1, nan outside.

    Example:
        >>> torch.erfinv(torch.tensor([0., 0.5, -1.]))
        tensor([ 0.0000,  0.4769,    -inf])
    """
    _check("erfinv", input)
    return _Erfinv.apply(input)


def _erfc(x):
    """1 − erf(x) near 0; from |x| = 1 (float32) or 2 (float64) on, the continued fraction
    erfc(a) = exp(−a²)/√π / (a + (1/2)/(a + 1/(a + (3/2)/(a + …)))) so small tails keep their relative precision;
    erfc(−a) = 2 − erfc(a)."""
    from .unary import erf
    x = _float(x)
    a = x.abs()
    cut = 2.0 if x.dtype is _dt.float64 else 1.0
    far = a >= cut
    af = _where(far, a, cut)
    k = af
    for n in range(40, 0, -1):
        k = af + (n / 2) / k
    tail = (-(af * af)).exp() / (k * math.sqrt(math.pi))
    tail = _where(x < 0, 2.0 - tail, tail)
    return _where(far & ~x.isnan(), tail, 1.0 - erf(x))


class _Erfc(Function):
    node_name = "ErfcBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with no_grad():
            return _erfc(x)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * (-2.0 / math.sqrt(math.pi)) * (-(x * x)).exp()

    backward_graph = backward


def erfc(input):  # noqa: A002
    """The complementary error function 1 − erf(x), accurate in relative terms far into the tail.

    Example:
        >>> torch.erfc(torch.tensor([0., 5.]))
        tensor([1.0000e+00, 1.5375e-12])
    """
    _check("erfc", input)
    return _Erfc.apply(input)


def _igamma_values(a, x, upper):
    """P(a, x) (upper=False) or Q(a, x) = 1 − P: the series Σ xⁿ/((a+1)…(a+n)) where x < a + 1, the continued
    fraction (modified Lentz) elsewhere, each evaluated on every element and selected per element. Terms are
    added until the largest relative step is below the dtype's epsilon (checked every 16 terms); edge values as
    PyTorch: P(a, 0) = 0, P(a, ∞) = 1, nan for a < 0, x < 0 or a nan operand."""
    eps = 1e-15 if x.dtype is _dt.float64 else 4e-7     # a few ulp: rounding keeps a step from getting smaller
    tiny = 1e-300 if x.dtype is _dt.float64 else 1e-30
    bad = (a < 0) | (x < 0) | a.isnan() | x.isnan()
    a_s = _where(bad | (a == 0), 1.0, a)
    x_s = _where(bad | (x == 0), 1.0, x)
    x_s = _where(x_s.isinf(), 1.0, x_s)
    # log(x^a e^−x / Γ(a)); for a >= 10 through Stirling's series, as a·log1p((x − a)/a) + (a − x) + ½log(a/2π)
    # − (1/12a − 1/360a³ + 1/1260a⁵): the large terms a·log x, x and lgamma(a) would cancel in float32
    big = a_s >= 10
    ab = _where(big, a_s, 10.0)
    stirling = (ab * ((x_s - ab) / ab).log1p() + (ab - x_s) + 0.5 * (ab / (2 * math.pi)).log()
                - (1 / (12 * ab) - 1 / (360 * ab ** 3) + 1 / (1260 * ab ** 5)))
    log_front = _where(big, stirling, a_s * x_s.log() - x_s - _lgamma(a_s))
    use_series = x_s < a_s + 1
    # series: P = e^(log_front) / a · Σ_n x^n / ((a+1)…(a+n))
    term = 1.0 / a_s
    total = term
    ap = a_s
    for n in range(1, 4001):
        ap = ap + 1
        term = term * x_s / ap
        total = total + term
        if n % 16 == 0 and not bool(((term.abs() > total.abs() * eps) & use_series).any().item()):
            break
    p_series = (log_front.exp() * total).clamp(max=1.0)
    # continued fraction for Q (Numerical Recipes' gcf with Lentz's method)
    b = x_s + 1 - a_s
    c = 1.0 / tiny + 0 * b
    d = 1.0 / _where(b.abs() < tiny, tiny, b)
    h = d
    for i in range(1, 4001):
        an = -i * (i - a_s)
        b = b + 2
        d = an * d + b
        d = 1.0 / _where(d.abs() < tiny, tiny, d)
        c = b + an / c
        c = _where(c.abs() < tiny, tiny, c)
        delta = d * c
        h = h * delta
        if i % 16 == 0 and not bool((((delta - 1).abs() > eps) & ~use_series).any().item()):
            break
    q_cf = (log_front.exp() * h).clamp(min=0.0, max=1.0)
    p = _where(use_series, p_series, 1.0 - q_cf)
    q = _where(use_series, 1.0 - p_series, q_cf)
    out = q if upper else p
    zero_x, inf_x = x == 0, x.isinf() & (x > 0)
    out = _where(zero_x, 1.0 if upper else 0.0, out)
    out = _where(inf_x, 0.0 if upper else 1.0, out)
    out = _where((a == 0) & ~zero_x, 0.0 if upper else 1.0, out)
    return _where(bad, math.nan, out)


class _Igamma(Function):
    node_name = "IgammaBackward0"

    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        with no_grad():
            return _igamma_values(a, x, upper)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("derivative for aten::igamma is not implemented for the input a "
                                      "(as PyTorch)")
        d = ((a - 1) * x.log() - x - _lgamma(a)).exp()     # dP/dx = x^(a−1) e^(−x) / Γ(a)
        from .shape import sum_to
        return None, sum_to(g * (-d if ctx.upper else d), x.shape), None

    backward_graph = backward


def _igamma(name, input, other, upper):  # noqa: A002
    from .binary_math import _operands
    a, x = _operands(name, input, other)
    a, x = _float(a), _float(x)
    if a.dtype is not x.dtype:
        a, x = a.to(dtype=_dt.float64), x.to(dtype=_dt.float64)
    import numpy as np
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(x.shape)))
    return _Igamma.apply(a.expand(*shape), x.expand(*shape), upper)


def igamma(input, other):  # noqa: A002
    """The regularized lower incomplete gamma function P(a, x) = γ(a, x) / Γ(a) (torch.special.gammainc).

    Example:
        >>> torch.igamma(torch.tensor([1., 2.]), torch.tensor([1., 1.]))
        tensor([0.6321, 0.2642])
    """
    return _igamma("igamma", input, other, False)


def igammac(input, other):  # noqa: A002
    """The regularized upper incomplete gamma function Q(a, x) = 1 − P(a, x) (torch.special.gammaincc)."""
    return _igamma("igammac", input, other, True)


declare("erfc", erfc, family="gamma", inplace=True)
declare("igamma", igamma, family="gamma", inplace=True)
declare("igammac", igammac, family="gamma", inplace=True)
declare("lgamma", lgamma, family="gamma", inplace=True)
declare("digamma", digamma, family="gamma", inplace=True)
declare("polygamma", polygamma, family="gamma", method=_tensor_polygamma)
declare("mvlgamma", mvlgamma, family="gamma")
declare("erfinv", erfinv, family="gamma", inplace=True)
