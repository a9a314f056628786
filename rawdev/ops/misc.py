"""Small everyday ops composed from declared ones (so autograd and both devices come with them): square, diag,
numel, type_as, and the functional one_hot and normalize."""
from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor.core import Tensor
from .registry import declare


class _DiagEmbed(Function):
    node_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, v, offset):
        from ..tensor.factory import zeros
        n = v.shape[0] + abs(offset)
        out = zeros((n, n), dtype=v.dtype, device=v.device)
        out.diagonal(offset).copy_(v)
        ctx.offset = offset
        return out

    @staticmethod
    def backward(ctx, g):
        return g.diagonal(ctx.offset), None


def diag(input, diagonal=0):  # noqa: A002
    """1-D input: the square matrix with input on its diagonal-th diagonal. 2-D input: that diagonal, a copy.

    Example:
        >>> torch.diag(torch.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    if input.ndim == 1:
        return _DiagEmbed.apply(input, int(diagonal))
    if input.ndim == 2:
        return input.diagonal(diagonal).clone()
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " f"{input.ndim}D")


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape tensor.shape + (num_classes,) with a 1 at each value's position.
    num_classes=-1 takes max(tensor) + 1 (a host read on cuda, as PyTorch's).

    Example:
        >>> F.one_hot(torch.tensor([0, 2]), 3)
        tensor([[1, 0, 0],
                [0, 0, 1]])
    """
    from ..tensor.factory import arange
    if not isinstance(tensor, Tensor) or tensor.dtype is not _dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1 and tensor.numel() == 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    if tensor.numel():
        host = tensor.detach().cpu()       # the range check reads the values, as PyTorch's does
        lo, hi = int(host.min().item()), int(host.max().item())
        if num_classes == -1:
            num_classes = hi + 1
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if hi >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(dtype=_dt.int64)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    """input / max(‖input‖_p along dim, eps).

    Example:
        >>> F.normalize(torch.tensor([[3., 4.]]), dim=1)
        tensor([[0.6000, 0.8000]])
    """
    if out is not None:
        raise TypeError("normalize(out=...) is not supported by rawdev")
    a = input.abs()
    # the clamp goes before the root so a zero vector's gradient is 0, not 0·∞ (max(‖x‖, eps) is unchanged)
    if p == float("inf"):
        norm = a.max(dim, keepdim=True)[0].clamp_min(eps)
    elif p == 1:
        norm = a.sum(dim, keepdim=True).clamp_min(eps)
    elif p == 2:
        norm = (a * a).sum(dim, keepdim=True).clamp_min(eps * eps).sqrt()
    else:
        norm = (a ** p).sum(dim, keepdim=True).clamp_min(eps ** p) ** (1.0 / p)
    return input / norm.expand_as(input)


def _broadcast(a, b):
    import numpy as _np
    shape = tuple(_np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    return (a if tuple(a.shape) == shape else a.expand(*shape)), (b if tuple(b.shape) == shape else b.expand(*shape))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps)) along dim, the operands broadcast first (PyTorch's formula:
    each vector is normalized with its own clamp)."""
    x1, x2 = _broadcast(x1, x2)
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances between every row of x1 [..., P, M] and every row of x2 [..., R, M]: [..., P, R]. Computed
    directly as ‖x1_i − x2_j‖_p over the broadcast difference (every p; exact, no cancellation)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, -1)


declare("cosine_similarity", cosine_similarity, family="misc", functional=True, method=False)
declare("cdist", cdist, family="misc", method=False)
declare("diag", diag, family="misc")
declare("one_hot", one_hot, family="misc", functional=True, torch=False, method=False)
declare("normalize", normalize, family="misc", functional=True, torch=False, method=False)
