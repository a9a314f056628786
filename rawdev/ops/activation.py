"""Softmax, log_softmax, softmin, prelu, glu and the dropouts (row-wise kernels on cuda; Philox masks for
dropout: the channel-wise and alpha variants draw their masks with the same dropout_fwd kernel, dropout3d
included); and, composed from declared ops, F.threshold, F.hardshrink, F.softshrink, F.rrelu and
F.gumbel_softmax."""
import math

import numpy as np

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

    @staticmethod
    def backward_graph(ctx, g):   # the mask is a constant: the backward is its own adjoint
        from ..autograd.function import linear_backward
        mask, = ctx.saved_tensors
        p = ctx.p

        def bwd(t):
            return backend_of(t).dropout_bwd(t, mask, p)

        def adj(t):
            return linear_backward(t, bwd, adj)
        return adj(g), None, None


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


def _keep(shape, p, scale, like, generator=None):
    """A tensor of shape on like's device and dtype: scale where an element is kept (probability 1 - p), 0
    elsewhere. cpu: drawn from rawdev's host generator; cuda: the dropout_fwd kernel (Philox, seed drawn from
    the generator) run over ones."""
    from .. import random as _random
    gen = generator or _random.default_generator
    shape = tuple(shape)
    if like.device.type == "cpu":
        from .cpu import _vdt, wrap
        dtp = _vdt(like.dtype)
        keep = gen.np.random(shape) >= p
        return wrap(keep.astype(dtp) * np.asarray(scale, dtp), like.dtype)
    from . import cuda as _cuda
    _cuda._f32("dropout", like)
    ones = _cuda.full(shape, 1.0, like.dtype, like.device, "dropout ones")
    y = _cuda.empty(shape, like.dtype, like.device, "dropout mask")
    n = y.numel()
    seed = int(gen.np.integers(0, 2 ** 63))
    _cuda._ew(_cuda._rdev(like), "dropout_fwd", [y.data_ptr(), 0, ones.data_ptr(), n, float(p), float(scale), seed, 0],
              n, "dropout")
    return y


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _in_place(fn, input, args):  # noqa: A002
    from .inplace import apply_inplace
    return apply_inplace(input, fn, fn.__name__ + "_", args, {})


def _feature_dropout(input, p, training, generator=None):  # noqa: A002
    """PyTorch's feature dropout: one mask value per (batch, channel), broadcast over the rest."""
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return mul(input, 0.0)
    noise_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return mul(input, _keep(noise_shape, p, 1.0 / (1.0 - p), input, generator))


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability p, scale the rest by 1/(1-p)."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           f"dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           f"channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if not training or p == 0.0:
        return input
    if inplace:
        return _in_place(dropout1d, input, (p, training))
    if input.ndim == 3:
        return _feature_dropout(input, p, training)
    return reshape(_feature_dropout(reshape(input, (1,) + tuple(input.shape)), p, training), tuple(input.shape))


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of (N, C, H, W) or (C, H, W) inputs with probability p, scale the rest by 1/(1-p)."""
    import warnings
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
                      f"in an error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      f"inputs).", UserWarning, stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", UserWarning, stacklevel=2)
    if inplace and training:
        return _in_place(dropout2d, input, (p, training))
    return _feature_dropout(input, p, training)


_SELU_ALPHA_PRIME = 1.7580993408473766   # -scale * alpha of selu


def alpha_dropout(input, p=0.5, training=False, inplace=False, generator=None):  # noqa: A002
    """Dropout that keeps a self-normalizing (selu) activation's mean and variance: dropped elements become
    -alpha', then everything is scaled by a and shifted by b (PyTorch's formula)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if inplace:
        return _in_place(alpha_dropout, input, (p, training))
    if p == 1.0:
        return mul(input, 0.0)
    return _alpha(input, p, tuple(input.shape), generator)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    """alpha_dropout with one mask value per (batch, channel)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if inplace:
        return _in_place(feature_alpha_dropout, input, (p, training))
    if p == 1.0:
        return mul(input, 0.0)
    return _alpha(input, p, tuple(input.shape[:2]) + (1,) * (input.ndim - 2))


def _alpha(input, p, noise_shape, generator=None):  # noqa: A002
    alpha = _SELU_ALPHA_PRIME
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = _keep(noise_shape, p, 1.0, input, generator)          # 0/1
    b = add(mul(keep, alpha * a), -alpha * a + alpha * a * p)   # (keep - 1) * alpha * a + alpha * a * p
    return add(mul(input, mul(keep, a)), b)


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


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability p, scale the rest by
    1/(1 − p)."""
    _check_p(p)
    if input.ndim not in (4, 5):
        import warnings
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout3d exists to provide channel-wise dropout on "
                      "inputs with 3 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      "4D or 5D inputs).", UserWarning, stacklevel=2)
    if not training or p == 0.0:
        return input
    x = input.unsqueeze(0) if input.ndim == 4 else input
    out = _feature_dropout(x, p, training)
    out = out.squeeze(0) if input.ndim == 4 else out
    return _inplace_result(input, out, inplace)


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
declare("dropout", dropout, family="activation", functional=True, torch=False, method=False)
declare("softmin", softmin, family="activation", functional=True, torch=False, method=False)
declare("prelu", prelu, family="activation", functional=True)
declare("glu", glu, family="activation", functional=True, torch=False, method=False)
declare("dropout1d", dropout1d, family="activation", functional=True, torch=False, method=False)
declare("dropout2d", dropout2d, family="activation", functional=True, torch=False, method=False)
declare("alpha_dropout", alpha_dropout, family="activation", functional=True, method=False)
declare("feature_alpha_dropout", feature_alpha_dropout, family="activation", functional=True, method=False)
declare("dropout3d", dropout3d, family="activation", functional=True, torch=False, method=False)
declare("gumbel_softmax", gumbel_softmax, family="activation", functional=True, torch=False, method=False)
declare("threshold", threshold, family="activation", functional=True, torch=False, method=False)
declare("threshold_", threshold_, family="activation", functional=True, torch=False, method=False)
declare("hardshrink", hardshrink, family="activation", functional=True, torch=False, method=False)
declare("softshrink", softshrink, family="activation", functional=True, torch=False, method=False)
declare("rrelu", rrelu, family="activation", functional=True, torch=False, method=False)
declare("rrelu_", rrelu_, family="activation", functional=True, torch=False, method=False)
