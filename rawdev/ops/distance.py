"""Norms of vectors along a dim and the distances built on them, composed from declared ops (both devices and
autograd come with them): F.normalize, F.cosine_similarity, F.pairwise_distance, cdist and F.pdist."""
from .binary import add, mul, sub
from .binary_math import pow
from .reduce.functions import sum
from .registry import declare
from .shape import reshape
from .unary import abs, sqrt


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


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim."""
    d = add(sub(x1, x2), eps)
    dim = max(d.ndim - 1, 0)
    if d.ndim == 0:
        d = reshape(d, (1,))
    if p == 2:
        r = sqrt(sum(mul(d, d), dim, keepdim=keepdim))
    elif p == 1:
        r = sum(abs(d), dim, keepdim=keepdim)
    elif p == float("inf"):
        r = abs(d).amax(dim, keepdim=keepdim)
    elif p == 0:
        r = (d != 0).to(dtype=d.dtype).sum(dim, keepdim=keepdim)
    else:
        r = pow(sum(pow(abs(d), p), dim, keepdim=keepdim), 1.0 / p)
    return r


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances between every row of x1 [..., P, M] and every row of x2 [..., R, M]: [..., P, R]. Computed
    directly as ‖x1_i − x2_j‖_p over the broadcast difference (every p; exact, no cancellation)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, -1)


def pdist(input, p=2):  # noqa: A002
    """The p-norm distances between every pair of rows i < j of input [N, M], in row-major order: [N(N−1)/2].

    Example:
        >>> F.pdist(torch.tensor([[0., 0.], [3., 4.], [6., 8.]]))
        tensor([ 5., 10.,  5.])
    """
    import numpy as np

    from ..tensor.factory import tensor
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    ii, jj = tensor(i, device=input.device), tensor(j, device=input.device)
    return (input.index_select(0, ii) - input.index_select(0, jj)).norm(p, -1)


declare("cosine_similarity", cosine_similarity, family="distance", functional=True, method=False)
declare("cdist", cdist, family="distance", method=False)
declare("normalize", normalize, family="distance", functional=True, torch=False, method=False)
declare("pdist", pdist, family="distance", functional=True, torch=False, method=False)
declare("pairwise_distance", pairwise_distance, family="distance", functional=True, torch=False, method=False)
