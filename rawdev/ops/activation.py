"""Softmax, log_softmax, softmin, prelu and glu (row-wise kernels on cuda); and, composed from declared ops,
F.threshold, F.hardshrink, F.softshrink, F.rrelu and F.gumbel_softmax. The dropouts are the dropout family
(rawdev/ops/dropout/)."""
from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor.core import Tensor
from .binary import add, mul, neg, sub
from .dispatch import backend_of
from .registry import declare
from .select.functions import where as _where
from .shape import reshape
from .slice_views import narrow
from .unary import relu, sigmoid


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

    @staticmethod
    def backward_graph(ctx, g):
        y, = ctx.saved_tensors
        if ctx.log:   # g - exp(y) * sum(g)
            return g - y.exp() * g.sum(ctx.dim, keepdim=True), None, None
        return y * (g - (g * y).sum(ctx.dim, keepdim=True)), None, None


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



def softmin(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    """softmax(-x) along dim."""
    if dtype is not None:
        input = input.to(dtype=_dt.as_dtype(dtype))  # noqa: A001
    return _softmax(neg(input), dim, False, None)


# ------------------------------------------------------------------ prelu, glu
def prelu(input, weight):  # noqa: A002
    """x where x > 0, weight * x elsewhere; weight is one value or one per channel (dim 1; dim 0 of a 1-D
    input). relu(x) + weight * (x - relu(x)): exact in float32 (one of the two terms is 0)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' (position 2) must be Tensor, not {type(weight).__name__}")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    if weight.numel() != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
    w = weight
    if input.ndim >= 2:
        shape = [1] * input.ndim
        shape[1] = weight.numel()
        w = reshape(weight, shape)
    elif weight.ndim == 1 and input.ndim == 0:
        w = reshape(weight, ())
    r = relu(input)
    return add(r, mul(w, sub(input, r)))


def glu(input, dim=-1):  # noqa: A002
    """a * sigmoid(b) with a, b the two halves of input along dim."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = input._wrap_dim(dim)
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    return mul(narrow(input, d, 0, n // 2), sigmoid(narrow(input, d, n // 2, n // 2)))


def _inplace_result(input, out, inplace):  # noqa: A002
    if inplace:
        with no_grad():
            input.copy_(out.detach())
        return input
    return out


# ------------------------------------------------------------------ activations
def threshold(input, threshold, value, inplace=False):  # noqa: A002
    """x where x > threshold, else value.

    Example:
        >>> F.threshold(torch.tensor([-1., 0.5, 2.]), 1.0, 0.0)
        tensor([0., 0., 2.])
    """
    return _inplace_result(input, _where(input > threshold, input, float(value)), inplace)


def threshold_(input, threshold_value, value):  # noqa: A002
    """In-place threshold."""
    return threshold(input, threshold_value, value, inplace=True)


def hardshrink(input, lambd=0.5):  # noqa: A002
    """x where |x| > lambd, else 0.

    Example:
        >>> F.hardshrink(torch.tensor([-1., 0.2, 0.7]))
        tensor([-1.0000,  0.0000,  0.7000])
    """
    return _where(input.abs() > lambd, input, 0.0)


def softshrink(input, lambd=0.5):  # noqa: A002
    """x − lambd above lambd, x + lambd below −lambd, 0 between.

    Example:
        >>> F.softshrink(torch.tensor([-1., 0.2, 0.7]))
        tensor([-0.5000,  0.0000,  0.2000])
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _where(input > lambd, input - lambd, _where(input < -lambd, input + lambd, 0.0))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):  # noqa: A002
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training, and is
    (lower + upper) / 2 in evaluation.

    Example:
        >>> F.rrelu(torch.tensor([-3., 2.]))
        tensor([-0.6875,  2.0000])
    """
    if training:
        with no_grad():
            slope = input.detach().new_empty(tuple(input.shape)).uniform_(lower, upper)
    else:
        slope = (lower + upper) / 2
    return _inplace_result(input, _where(input >= 0, input, input * slope), inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):  # noqa: A002
    """In-place rrelu."""
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A sample from the Gumbel-softmax distribution: softmax((logits + g) / tau) with g ~ Gumbel(0, 1); hard=True
    returns the one-hot argmax with the soft sample's gradient (straight-through).

    Example:
        >>> F.gumbel_softmax(torch.zeros(2, 3), hard=True).sum(-1)
        tensor([1., 1.])
    """
    with no_grad():
        gumbels = -logits.detach().new_empty(tuple(logits.shape)).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = logits.detach().new_zeros(tuple(logits.shape)).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


declare("softmax", softmax, family="activation", functional=True)
declare("log_softmax", log_softmax, family="activation", functional=True)
declare("softmin", softmin, family="activation", functional=True, torch=False, method=False)
declare("prelu", prelu, family="activation", functional=True)
declare("glu", glu, family="activation", functional=True, torch=False, method=False)
declare("gumbel_softmax", gumbel_softmax, family="activation", functional=True, torch=False, method=False)
declare("threshold", threshold, family="activation", functional=True, torch=False, method=False)
declare("threshold_", threshold_, family="activation", functional=True, torch=False, method=False)
declare("hardshrink", hardshrink, family="activation", functional=True, torch=False, method=False)
declare("softshrink", softshrink, family="activation", functional=True, torch=False, method=False)
declare("rrelu", rrelu, family="activation", functional=True, torch=False, method=False)
declare("rrelu_", rrelu_, family="activation", functional=True, torch=False, method=False)
