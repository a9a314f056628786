"""Softmax, log_softmax and dropout (row-wise kernels on cuda; Philox masks for dropout)."""
from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor.core import Tensor
from .dispatch import backend, backend_of
from .binary import mul
from .registry import declare
from .shape import reshape

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



declare("softmax", softmax, family="activation", functional=True)
declare("log_softmax", log_softmax, family="activation", functional=True)
declare("dropout", dropout, family="activation", functional=True, torch=False, method=False)
