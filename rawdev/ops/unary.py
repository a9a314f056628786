"""Elementwise unary family: one line per op — forward and backward side by side, what the backward
saves, and the kernels the cuda path launches.

    unary(name, forward, backward, saves, kernels)

forward(x, *p) and backward(g, x, y, *p) are numpy: the cpu path and the test oracle (they compute in
the tensor's dtype; float64 for gradient checks). `saves` is "x" (the input) or "y" (the output) —
the one tensor the backward reads. `kernels` = (forward kernel, backward kernel): the cuda path
launches forward(y, x, *p, n) and backward(dx, dy, saved, *p, n) (elementwise.ptx). The node is
PyTorch's <Name>Backward0. The op gets rawdev.<name>, Tensor.<name> and Tensor.<name>_.
"""
import math

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function, delayed_error
from ..autograd.grad_mode import no_grad
from .cpu import _erf, _gelu_tanh, v, wrap
from .dispatch import cuda_backend as _cuda
from .dispatch import quietly
from .registry import declare, get, inplace_form

__all__ = ["UnaryOp", "unary", "OPS"]

OPS: dict = {}   # name -> UnaryOp: the table the tests walk


class UnaryOp:
    def __init__(self, name, forward, backward, saves, kernels, node, to_float):
        self.name, self.forward, self.backward, self.saves = name, forward, backward, saves
        self.kernels, self.node, self.to_float = kernels, node, to_float

    def run(self, x, p):
        """y = op(x) on x's device (no graph)."""
        if x.is_cuda:
            return _cuda.elementwise(self.kernels[0], x.dtype, (x,), p, self.name)
        xv = v(x)
        return wrap(np.asarray(quietly(self.forward, xv, *p), xv.dtype), x.dtype)

    def grad(self, g, x, y, p):
        """dx from dy = g and the saved x or y."""
        if g.is_cuda:
            return _cuda.elementwise(self.kernels[1], g.dtype, (g, x if self.saves == "x" else y), p,
                                     self.name + " backward")
        gv = v(g)
        r = quietly(self.backward, gv, None if x is None else v(x), None if y is None else v(y), *p)
        return wrap(np.asarray(r, gv.dtype), g.dtype)


class _Unary(Function):
    @staticmethod
    def forward(ctx, x, op, p):
        y = op.run(x, p)
        ctx.op, ctx.p = op, p
        ctx.save_for_backward(x if op.saves == "x" else None, y if op.saves == "y" else None)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return ctx.op.grad(g, x, y, ctx.p), None, None

    @staticmethod
    def backward_graph(ctx, g):
        """create_graph=True: the op's derivative from differentiable ops (GRAPH_GRADS), where it has one."""
        f = GRAPH_GRADS.get(ctx.op.name)
        x, y = ctx.saved_tensors
        if f is None:   # the value now; an error if it is ever differentiated
            with no_grad():
                dx = ctx.op.grad(g, x, y, ctx.p)
            return delayed_error((dx,), ctx.op.node)[0], None, None
        return f(g, x, y, *ctx.p), None, None


def _const(mask, like):
    """A mask as a constant (no graph) in like's dtype."""
    return mask.detach().to(dtype=like.dtype)


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_SELU_A, _SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> dx(g, x, y, *p) from Tensor operators: what backward_graph records (x or y, per the op's `saves`)
GRAPH_GRADS = {
    "exp": lambda g, x, y: g * y,
    "log": lambda g, x, y: g / x,
    "tanh": lambda g, x, y: g * (1 - y * y),
    "sigmoid": lambda g, x, y: g * (y * (1 - y)),
    "relu": lambda g, x, y: g * _const(y > 0, g),
    "abs": lambda g, x, y: g * _const(x.sign(), g),
    "leaky_relu": lambda g, x, y, s: g * (_const(x > 0, g) * (1 - s) + s),
    "sin": lambda g, x, y: g * x.cos(),
    "cos": lambda g, x, y: -(g * x.sin()),
    "sqrt": lambda g, x, y: g / (2 * y),
    "rsqrt": lambda g, x, y: g * (y * y * y) * -0.5,
    "tan": lambda g, x, y: g * (1 + y * y),
    "sinh": lambda g, x, y: g * x.cosh(),
    "cosh": lambda g, x, y: g * x.sinh(),
    "atan": lambda g, x, y: g / (1 + x * x),
    "asinh": lambda g, x, y: g / (x * x + 1).sqrt(),
    "acosh": lambda g, x, y: g / ((x - 1) * (x + 1)).sqrt(),
    "atanh": lambda g, x, y: g / (1 - x * x),
    "asin": lambda g, x, y: g / (1 - x * x).sqrt(),
    "acos": lambda g, x, y: -(g / (1 - x * x).sqrt()),
    "exp2": lambda g, x, y: g * y * _LN2,
    "expm1": lambda g, x, y: g * (y + 1),
    "log2": lambda g, x, y: g / (x * _LN2),
    "log10": lambda g, x, y: g / (x * _LN10),
    "log1p": lambda g, x, y: g / (x + 1),
    "reciprocal": lambda g, x, y: -(g * y * y),
    "frac": lambda g, x, y: g * 1.0,
    "sign": lambda g, x, y: g * 0.0, "floor": lambda g, x, y: g * 0.0, "ceil": lambda g, x, y: g * 0.0,
    "round": lambda g, x, y: g * 0.0, "trunc": lambda g, x, y: g * 0.0,
    "erf": lambda g, x, y: g * (x * x * -1.0).exp() * (2 / math.sqrt(math.pi)),
    "gelu": lambda g, x, y: g * (0.5 * (1 + (x * (1 / math.sqrt(2.0))).erf())
                                 + x * (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))),
    "silu": lambda g, x, y: g * _silu_d(x),
    "logsigmoid": lambda g, x, y: g * (-x).sigmoid(),
    "softsign": lambda g, x, y: g / (1 + x.abs()) ** 2,
    "tanhshrink": lambda g, x, y: g * x.tanh() ** 2,
    # piecewise: the branch masks are constants; exp only sees the negative side (no inf * 0)
    "elu": lambda g, x, y, a: g * _neg_side(x, lambda xn, m: m + (1 - m) * a * xn.exp()),
    "selu": lambda g, x, y: g * _neg_side(x, lambda xn, m: (m + (1 - m) * _SELU_A * xn.exp()) * _SELU_S),
    "celu": lambda g, x, y, a: g * _neg_side(x, lambda xn, m: m + (1 - m) * (xn / a).exp()),
    "softplus": lambda g, x, y, b, t: g * _softplus_d(x, b, t),
    "hardtanh": lambda g, x, y, lo, hi: g * (_const(x > lo, g) * _const(x < hi, g)),
    "relu6": lambda g, x, y: g * (_const(x > 0, g) * _const(x < 6, g)),
    "hardswish": lambda g, x, y: g * (_const(x >= -3, g) * _const(x <= 3, g) * (x / 3 + 0.5) + _const(x > 3, g)),
    "hardsigmoid": lambda g, x, y: g * (_const(x > -3, g) * _const(x < 3, g) * (1 / 6)),
}


def _silu_d(x):
    s = x.sigmoid()
    return s * (1 + x * (1 - s))


def _neg_side(x, f):
    m = _const(x > 0, x)
    return f(x * (1 - m), m)


def _softplus_d(x, b, t):
    m = _const(x * b > t, x)
    return m + (1 - m) * (x * b).sigmoid()


def apply(op, x, p=()):
    if op.to_float and not x.dtype.is_floating_point:
        x = x.to(dtype=_dt.get_default_dtype())
    out = _Unary.apply(x, op, tuple(p))
    if out.grad_fn is not None:
        out.grad_fn.rename(op.node)
    return out


def _camel(name):
    return "".join(part.capitalize() for part in name.split("_")) + "Backward0"


def unary(name, forward, backward, saves, kernels, *, node=None, to_float=True, public=True, **decl):
    """Declare a unary op (see the module docstring); returns its public function."""
    op = OPS[name] = UnaryOp(name, forward, backward, saves, kernels, node or _camel(name), to_float)
    if not public:
        return op

    def fn(input):  # noqa: A002
        return apply(op, input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} (autograd: {op.node}; cuda kernels {kernels[0]}, {kernels[1]})."
    declare(name, fn, family="unary", inplace=decl.pop("inplace", True), **decl)
    return fn


# ------------------------------------------------------------------ the family
# name        forward                              backward (g, x, y)                     saves  kernels
sin = unary("sin", np.sin, lambda g, x, y: g * np.cos(x), "x", ("sin_fwd", "sin_bwd"))
cos = unary("cos", np.cos, lambda g, x, y: -g * np.sin(x), "x", ("cos_fwd", "cos_bwd"))
sqrt = unary("sqrt", np.sqrt, lambda g, x, y: g / (2 * y), "y", ("sqrt_fwd", "sqrt_bwd"))
rsqrt = unary("rsqrt", lambda x: 1 / np.sqrt(x), lambda g, x, y: -0.5 * g * y * y * y, "y",
              ("rsqrt_fwd", "rsqrt_bwd"))
tan = unary("tan", np.tan, lambda g, x, y: g * (1 + y * y), "y", ("tan_fwd", "tan_bwd"))
sinh = unary("sinh", np.sinh, lambda g, x, y: g * np.cosh(x), "x", ("sinh_fwd", "sinh_bwd"))
cosh = unary("cosh", np.cosh, lambda g, x, y: g * np.sinh(x), "x", ("cosh_fwd", "cosh_bwd"))
asin = unary("asin", np.arcsin, lambda g, x, y: g / np.sqrt(1 - x * x), "x", ("asin_fwd", "asin_bwd"),
             aliases=("arcsin",))
acos = unary("acos", np.arccos, lambda g, x, y: -g / np.sqrt(1 - x * x), "x", ("acos_fwd", "acos_bwd"),
             aliases=("arccos",))
atan = unary("atan", np.arctan, lambda g, x, y: g / (1 + x * x), "x", ("atan_fwd", "atan_bwd"), aliases=("arctan",))
asinh = unary("asinh", np.arcsinh, lambda g, x, y: g / np.sqrt(x * x + 1), "x", ("asinh_fwd", "asinh_bwd"),
              aliases=("arcsinh",))
acosh = unary("acosh", np.arccosh, lambda g, x, y: g / np.sqrt((x - 1) * (x + 1)), "x", ("acosh_fwd", "acosh_bwd"),
              aliases=("arccosh",))
atanh = unary("atanh", np.arctanh, lambda g, x, y: g / (1 - x * x), "x", ("atanh_fwd", "atanh_bwd"),
              aliases=("arctanh",))
exp2 = unary("exp2", np.exp2, lambda g, x, y: g * y * _LN2, "y", ("exp2_fwd", "exp2_bwd"))
expm1 = unary("expm1", np.expm1, lambda g, x, y: g * (y + 1), "y", ("expm1_fwd", "expm1_bwd"))
log2 = unary("log2", np.log2, lambda g, x, y: g / (x * _LN2), "x", ("log2_fwd", "log2_bwd"))
log10 = unary("log10", np.log10, lambda g, x, y: g / (x * _LN10), "x", ("log10_fwd", "log10_bwd"))
log1p = unary("log1p", np.log1p, lambda g, x, y: g / (x + 1), "x", ("log1p_fwd", "log1p_bwd"), node="Log1PBackward0")
reciprocal = unary("reciprocal", lambda x: 1 / x, lambda g, x, y: -g * y * y, "y", ("reciprocal_fwd", "reciprocal_bwd"))
erf = unary("erf", _erf, lambda g, x, y: g * (2 / math.sqrt(math.pi)) * np.exp(-x * x), "x", ("erf_fwd", "erf_bwd"),
            functional=False)
frac = unary("frac", lambda x: x - np.trunc(x), lambda g, x, y: g, "x", ("frac_fwd", "frac_bwd"))
# piecewise constant: zero gradient everywhere; integers stay integers
sign = unary("sign", np.sign, lambda g, x, y: np.zeros_like(g), "x", ("sign_fwd", "sign_bwd"), to_float=False)
floor = unary("floor", np.floor, lambda g, x, y: np.zeros_like(g), "x", ("floor_fwd", "floor_bwd"), to_float=False)
ceil = unary("ceil", np.ceil, lambda g, x, y: np.zeros_like(g), "x", ("ceil_fwd", "ceil_bwd"), to_float=False)
round = unary("round", np.round, lambda g, x, y: np.zeros_like(g), "x", ("round_fwd", "round_bwd"), to_float=False)  # noqa: A001
trunc = unary("trunc", np.trunc, lambda g, x, y: np.zeros_like(g), "x", ("trunc_fwd", "trunc_bwd"), to_float=False,
              aliases=("fix",))
tanh = unary("tanh", np.tanh, lambda g, x, y: g * (1 - y * y), "y", ("tanh_fwd", "tanh_bwd"), functional=True)
sigmoid = unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), lambda g, x, y: g * y * (1 - y), "y",
                ("sigmoid_fwd", "sigmoid_bwd"), functional=True)
exp = unary("exp", np.exp, lambda g, x, y: g * y, "y", ("exp_fwd", "mul"))
log = unary("log", np.log, lambda g, x, y: g / x, "x", ("log_fwd", "div"))
_relu = unary("relu", lambda x: np.maximum(x, 0), lambda g, x, y: np.where(y > 0, g, 0), "y",
              ("relu_fwd", "relu_bwd"), to_float=False, public=False)
_abs = unary("abs", np.abs, lambda g, x, y: g * np.sign(x), "x", ("abs_fwd", "abs_bwd"), to_float=False,
             public=False)
_leaky = unary("leaky_relu", lambda x, s: np.where(x > 0, x, x * s), lambda g, x, y, s: np.where(x > 0, g, g * s),
               "x", ("leaky_relu_fwd", "leaky_relu_bwd"), public=False)
_gelu_erf = unary("gelu", lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2.0))),
                  lambda g, x, y: g * (0.5 * (1 + _erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x)
                                       / math.sqrt(2 * math.pi)), "x", ("gelu_erf_fwd", "gelu_erf_bwd"), public=False)


def _gelu_tanh_grad(g, x, y):
    k0, k1 = math.sqrt(2.0 / math.pi), 0.044715
    t = np.tanh(k0 * (x + k1 * x ** 3))
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k0 * (1 + 3 * k1 * x * x))


_gelu_tanh_op = unary("gelu_tanh", _gelu_tanh, _gelu_tanh_grad, "x", ("gelu_tanh_fwd", "gelu_tanh_bwd"),
                      node="GeluBackward0", public=False)


# activations (F.<name>; the parameters of elu/celu/softplus/hardtanh are the kernels' float a, b)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus1(x):   # log(1 + e^x) without overflow
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _mish_grad(g, x, y):
    t = np.tanh(_softplus1(x))
    return g * (t + x * _sig(x) * (1 - t * t))


_silu = unary("silu", lambda x: x * _sig(x), lambda g, x, y: g * _sig(x) * (1 + x * (1 - _sig(x))), "x",
              ("silu_fwd", "silu_bwd"), public=False)
_mish = unary("mish", lambda x: x * np.tanh(_softplus1(x)), _mish_grad, "x", ("mish_fwd", "mish_bwd"), public=False)
_elu = unary("elu", lambda x, a: np.where(x > 0, x, a * np.expm1(x)),
             lambda g, x, y, a: np.where(x > 0, g, g * a * np.exp(x)), "x", ("elu_fwd", "elu_bwd"), public=False)
_selu = unary("selu", lambda x: _SELU_S * np.where(x > 0, x, _SELU_A * np.expm1(x)),
              lambda g, x, y: np.where(x > 0, g * _SELU_S, g * _SELU_S * _SELU_A * np.exp(x)), "x",
              ("selu_fwd", "selu_bwd"), public=False)
_celu = unary("celu", lambda x, a: np.where(x > 0, x, a * np.expm1(x / a)),
              lambda g, x, y, a: np.where(x > 0, g, g * np.exp(x / a)), "x", ("celu_fwd", "celu_bwd"), public=False)
_softplus = unary("softplus", lambda x, b, t: np.where(x * b > t, x, np.log1p(np.exp(x * b)) / b),
                  lambda g, x, y, b, t: np.where(x * b > t, g, g * _sig(x * b)), "x", ("softplus_fwd", "softplus_bwd"),
                  public=False)
_hardtanh = unary("hardtanh", lambda x, lo, hi: np.where(x < lo, lo, np.where(x > hi, hi, x)),
                  lambda g, x, y, lo, hi: np.where((x <= lo) | (x >= hi), 0, g), "x", ("hardtanh_fwd", "hardtanh_bwd"),
                  public=False)
_relu6 = unary("relu6", lambda x: np.minimum(np.maximum(x, 0), 6), lambda g, x, y: np.where((x <= 0) | (x >= 6), 0, g),
               "x", ("relu6_fwd", "relu6_bwd"), node="HardtanhBackward0", public=False)
_hardswish = unary("hardswish", lambda x: np.where(x <= -3, 0, np.where(x >= 3, x, x * (x + 3) / 6)),
                   lambda g, x, y: np.where(x < -3, 0, np.where(x <= 3, g * (x / 3 + 0.5), g)), "x",
                   ("hardswish_fwd", "hardswish_bwd"), public=False)
_hardsigmoid = unary("hardsigmoid", lambda x: np.where(x <= -3, 0, np.where(x >= 3, 1, x / 6 + 0.5)),
                     lambda g, x, y: np.where((x > -3) & (x < 3), g / 6, 0), "x",
                     ("hardsigmoid_fwd", "hardsigmoid_bwd"), public=False)
_logsigmoid = unary("logsigmoid", lambda x: -_softplus1(-x), lambda g, x, y: g * _sig(-x), "x",
                    ("logsigmoid_fwd", "logsigmoid_bwd"), node="LogSigmoidBackward0", public=False)
_softsign = unary("softsign", lambda x: x / (1 + np.abs(x)), lambda g, x, y: g / (1 + np.abs(x)) ** 2, "x",
                  ("softsign_fwd", "softsign_bwd"), public=False)
_tanhshrink = unary("tanhshrink", lambda x: x - np.tanh(x), lambda g, x, y: g * np.tanh(x) ** 2, "x",
                    ("tanhshrink_fwd", "tanhshrink_bwd"), public=False)


# Ops whose public signature has more than the input (or keeps integer dtypes).
def relu(input, inplace=False):  # noqa: A002
    """max(x, 0) (integers stay integers)."""
    return inplace_form(get("relu"))(input) if inplace else apply(_relu, input)


def abs(input):  # noqa: A001,A002
    """|x|; integers stay integers (and take no gradient)."""
    return apply(_abs, input)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    if inplace:
        return inplace_form(get("leaky_relu"))(input, negative_slope)
    return apply(_leaky, input, (float(negative_slope),))


def gelu(input, approximate="none"):  # noqa: A002
    """GELU with the exact erf (approximate='none') or PyTorch's tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return apply(_gelu_erf if approximate == "none" else _gelu_tanh_op, input)




def _act(op, input, p=(), inplace=False, name=None):  # noqa: A002
    if inplace:
        return inplace_form(get(name or op.name))(input, *p)
    return apply(op, input, tuple(float(v) for v in p))


def silu(input, inplace=False):  # noqa: A002
    """x * sigmoid(x)."""
    return _act(_silu, input, inplace=inplace)


def mish(input, inplace=False):  # noqa: A002
    """x * tanh(softplus(x))."""
    return _act(_mish, input, inplace=inplace)


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return _act(_elu, input, (alpha,), inplace)


def selu(input, inplace=False):  # noqa: A002
    """scale * elu(x, alpha) with the self-normalizing constants."""
    return _act(_selu, input, inplace=inplace)


def celu(input, alpha=1.0, inplace=False):  # noqa: A002
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _act(_celu, input, (alpha,), inplace)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    """log(1 + exp(beta * x)) / beta, and x where beta * x > threshold."""
    return _act(_softplus, input, (beta, threshold))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    """x clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _act(_hardtanh, input, (min_val, max_val), inplace)


def relu6(input, inplace=False):  # noqa: A002
    """min(max(x, 0), 6) (PyTorch's hardtanh(x, 0, 6))."""
    if inplace:
        return inplace_form(get("hardtanh"))(input, 0.0, 6.0)
    return apply(_relu6, input)


def hardswish(input, inplace=False):  # noqa: A002
    """x * relu6(x + 3) / 6."""
    return _act(_hardswish, input, inplace=inplace)


def hardsigmoid(input, inplace=False):  # noqa: A002
    """relu6(x + 3) / 6."""
    return _act(_hardsigmoid, input, inplace=inplace)


def logsigmoid(input):  # noqa: A002
    """log(sigmoid(x)) = -softplus(-x)."""
    return apply(_logsigmoid, input)


def softsign(input):  # noqa: A002
    """x / (1 + |x|)."""
    return apply(_softsign, input)


def tanhshrink(input):  # noqa: A002
    """x - tanh(x)."""
    return apply(_tanhshrink, input)


declare("relu", relu, family="unary", functional=True, inplace=True)
declare("abs", abs, family="unary", inplace=True, aliases=("absolute",))
declare("leaky_relu", leaky_relu, family="unary", functional=True, inplace=True, torch=False, method=False)
declare("gelu", gelu, family="unary", functional=True, torch=False, method=False)
_F = dict(family="unary", functional=True, torch=False, method=False)
declare("silu", silu, **_F)
declare("mish", mish, **_F)
declare("elu", elu, inplace=True, **_F)
declare("selu", selu, family="unary", functional=True, inplace=True, method=False)
declare("celu", celu, family="unary", functional=True, inplace=True, method=False)
declare("softplus", softplus, **_F)
declare("hardtanh", hardtanh, inplace=True, **_F)
declare("relu6", relu6, **_F)
declare("hardswish", hardswish, **_F)
declare("hardsigmoid", hardsigmoid, **_F)
declare("logsigmoid", logsigmoid, **_F)
declare("softsign", softsign, **_F)
declare("tanhshrink", tanhshrink, **_F)
