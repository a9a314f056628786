"""Pooling forms composed from declared ops (conv/pooling.py holds the kernel-backed pools): lp_pool1d/2d (through the
average pool), max_unpool1d/2d (a scatter of the pooled values to their saved indices), and local_response_norm
(a mean of squares over neighbouring channels, as PyTorch's average pool computes it). Formulas and defaults are
PyTorch's."""
import math

from .registry import declare

_F = dict(family="pooling_composed", functional=True, torch=False, method=False)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """x / (k + alpha · mean of x² over `size` neighbouring channels)^beta (zero-padded at the ends, the mean
    over `size` as PyTorch's average pool with padding).

    Example:
        >>> F.local_response_norm(torch.ones(1, 3, 1, 1), 2).shape
        torch.Size([1, 3, 1, 1])
    """
    from .join import cat
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    c = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    zeros = [sq.new_zeros((sq.shape[0], n) + tuple(sq.shape[2:])) for n in (before, after)]
    padded = cat([t for t in (zeros[0], sq, zeros[1]) if t.shape[1]], 1)
    acc = padded.narrow(1, 0, c)
    for j in range(1, size):
        acc = acc + padded.narrow(1, j, c)
    div = (acc * (alpha / size) + k) ** beta
    return input / div


# ------------------------------------------------------------------ unpooling and power pooling
def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, dims, name):  # noqa: A002
    k = _tuple(kernel_size, dims)
    s = _tuple(stride if stride is not None else kernel_size, dims)
    p = _tuple(padding, dims)
    spatial = tuple(input.shape[-dims:])
    default = tuple((spatial[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(dims))
    if output_size is None:
        out_sp = default
    else:
        out_sp = tuple(output_size)[-dims:]
        for i in range(dims):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < out_sp[i] < hi:
                raise ValueError(f"invalid output_size \"{list(output_size)}\" (dim {i} must be between {lo} and {hi})")
    lead = tuple(input.shape[:-dims])
    plane = math.prod(out_sp)
    flat_in = input.reshape(-1, math.prod(spatial))
    flat_idx = indices.reshape(-1, math.prod(spatial))
    if flat_idx.numel():
        hi = int(flat_idx.max().item())
        lo = int(flat_idx.min().item())
        if lo < 0 or hi >= plane:
            raise RuntimeError(f"Found an invalid max index: {hi if hi >= plane else lo} (output volumes are of "
                               f"size {'x'.join(map(str, out_sp))}")
    out = flat_in.new_zeros((flat_in.shape[0], plane)).scatter(1, flat_idx, flat_in)
    return out.reshape(*lead, *out_sp)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of max_pool1d(return_indices=True): each value put back at its index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of max_pool2d(return_indices=True): each value put back at its flat h·W+w index.

    Example:
        >>> x = torch.arange(16.).reshape(1, 1, 4, 4)
        >>> y, i = F.max_pool2d(x, 2, return_indices=True)
        >>> F.max_unpool2d(y, i, 2)[0, 0, 1]
        tensor([ 0.,  5.,  0.,  7.])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """(Σ x^p over each window)^(1/p), PyTorch's formula through the average pool."""
    from .conv.pooling import avg_pool1d
    from .unary import relu
    out = avg_pool1d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kernel_size).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """(Σ x^p over each window)^(1/p) in 2-D.

    Example:
        >>> F.lp_pool2d(torch.ones(1, 1, 2, 2), 2, 2)
        tensor([[[[2.]]]])
    """
    from .conv.pooling import avg_pool2d
    from .unary import relu
    kh, kw = _tuple(kernel_size, 2)
    out = avg_pool2d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kh * kw).pow(1.0 / norm_type)


declare("local_response_norm", local_response_norm, **_F)
declare("max_unpool1d", max_unpool1d, **_F)
declare("max_unpool2d", max_unpool2d, **_F)
declare("lp_pool1d", lp_pool1d, **_F)
declare("lp_pool2d", lp_pool2d, **_F)
