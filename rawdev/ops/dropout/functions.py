"""The dropout ops (rawdev/ops/dropout/__init__.py): dropout with its autograd Function (the backend draws the mask
and saves it), the channel-wise dropout1d/2d/3d and alpha_dropout/feature_alpha_dropout (their masks from the
backend's dropout_keep, composed with mul/add), and their in-place forms. Device-free: the masks and the
arithmetic are the backend's."""
import math

from ...autograd.function import Function
from ..activation import _inplace_result
from ..binary import add, mul
from ..dispatch import backend_of
from ..registry import declare
from ..shape import reshape


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
        from ...autograd.function import linear_backward
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
    from ... import random as _random
    return _Dropout.apply(input, float(p), generator or _random.default_generator)


def _keep(shape, p, scale, like, generator=None):
    """A tensor of shape on like's device and dtype: scale where an element is kept (probability 1 - p), 0
    elsewhere, from the backend's dropout_keep (cpu: drawn from rawdev's host generator; cuda: the dropout_fwd
    kernel, Philox with a seed drawn from the generator, run over ones)."""
    from ... import random as _random
    gen = generator or _random.default_generator
    return backend_of(like).dropout_keep(tuple(shape), p, scale, like.dtype, like.device, gen)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _in_place(fn, input, args):  # noqa: A002
    from ..inplace import apply_inplace
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


declare("dropout", dropout, family="dropout", functional=True, torch=False, method=False)
declare("dropout1d", dropout1d, family="dropout", functional=True, torch=False, method=False)
declare("dropout2d", dropout2d, family="dropout", functional=True, torch=False, method=False)
declare("alpha_dropout", alpha_dropout, family="dropout", functional=True, method=False)
declare("feature_alpha_dropout", feature_alpha_dropout, family="dropout", functional=True, method=False)
declare("dropout3d", dropout3d, family="dropout", functional=True, torch=False, method=False)
