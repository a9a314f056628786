"""The margin losses composed from declared ops (both devices and autograd come with them): margin_ranking,
cosine_embedding, triplet_margin, hinge_embedding, soft_margin, multilabel_soft_margin, multi_margin,
multilabel_margin and triplet_margin_with_distance. Formulas and defaults are PyTorch's."""

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from .binary import add, div, eq, mul, neg, sub
from .distance import pairwise_distance
from .loss import _check_reduction, _reduce, _reduction
from .reduce.functions import sum
from .registry import declare
from .select.functions import where as _where
from .unary import relu, sqrt

_F = dict(family="loss_margin", functional=True, torch=False, method=False)


# ------------------------------------------------------------------ losses
def _red(size_average, reduce, reduction):
    return _check_reduction(_reduction(size_average, reduce, reduction))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """x where target is 1, max(0, margin − x) where it is −1.

    Example:
        >>> F.hinge_embedding_loss(torch.tensor([0.3, 2.]), torch.tensor([1., -1.]))
        tensor(0.1500)
    """
    r = _red(size_average, reduce, reduction)
    margin_part = _where(target != 1, (margin - input).clamp_min(0), 0.0)
    self_part = _where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, r)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """log(1 + exp(−y·x)), the two-class logistic loss.

    Example:
        >>> F.soft_margin_loss(torch.tensor([0.]), torch.tensor([1.]))
        tensor(0.6931)
    """
    from .unary import softplus
    return _reduce(softplus(-(target * input)), _red(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                reduction="mean"):
    """−mean over classes of y·log σ(x) + (1 − y)·log σ(−x), per sample.

    Example:
        >>> F.multilabel_soft_margin_loss(torch.zeros(1, 2), torch.tensor([[1., 0.]]))
        tensor(0.6931)
    """
    from .unary import logsigmoid
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, _red(size_average, reduce, reduction))


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,  # noqa: A002
                      reduction="mean"):
    """Σ_{i ≠ y} max(0, margin − x[y] + x[i])^p / C per sample (times weight[y]); input [N, C] or [C].

    Example:
        >>> F.multi_margin_loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([3]))
        tensor(0.3250)
    """
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if input.ndim not in (1, 2):
        raise ValueError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                         f"{list(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    t = target.reshape(-1)
    n, c = x.shape
    if t.numel() != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got {list(target.shape)}")
    if n and (int(t.min().item()) < 0 or int(t.max().item()) >= c):
        raise IndexError("Target out of bounds")
    xy = x.gather(1, t.unsqueeze(1))
    z = (margin - xy + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.take(t).unsqueeze(1)
    from ..tensor.factory import arange
    not_y = (arange(c, device=x.device).unsqueeze(0) != t.unsqueeze(1))
    loss = _where(not_y, z, 0.0).sum(1) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, _red(size_average, reduce, reduction))


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """Σ_{j target, i not target} max(0, 1 − (x[j] − x[i])) / C per sample; target holds class indices, ended by
    the first −1.

    Example:
        >>> F.multilabel_margin_loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """
    from .scan_sort import cumprod
    x = input.unsqueeze(0) if input.ndim == 1 else input
    t = target.unsqueeze(0) if target.ndim == 1 else target
    if tuple(t.shape) != tuple(x.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    c = x.shape[1]
    with no_grad():
        valid = cumprod((t != -1).to(dtype=_dt.int64), 1).bool()                 # before the first −1
        if t.numel() and (bool(((t < -1) | (t >= c)).any().item())):
            raise RuntimeError("multilabel_margin_loss: target index out of range")
        tc = _where(valid, t, 0)
        from ..tensor.factory import arange
        classes = arange(c, device=x.device)
        is_target = ((tc.unsqueeze(2) == classes) & valid.unsqueeze(2)).any(1)      # [N, C]
    xt = x.gather(1, tc)                                                          # [N, J]
    pair = (1 - xt.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)                   # [N, J, C]
    keep = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = _where(keep, pair, 0.0).sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, _red(size_average, reduce, reduction))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(d(a, p) − d(a, n) + margin, 0) with any distance function (default pairwise_distance); swap uses
    min(d(a, n), d(p, n)).

    Example:
        >>> a = torch.zeros(1, 2); F.triplet_margin_with_distance_loss(a, a, a + 3)
        tensor(0.)
    """
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    d = distance_function if distance_function is not None else pairwise_distance
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        from .select.functions import minimum
        dn = minimum(dn, d(positive, negative))
    return _reduce((dp - dn + margin).clamp_min(0), _check_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,  # noqa: A002
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduce(relu(add(neg(mul(target, sub(input1, input2))), margin)), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,  # noqa: A002
                          reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1 (cos along the last
    dim, with PyTorch's 1e-12 added to each squared norm)."""
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    if target.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.ndim == 1:
        if not (input1.ndim == 2 and input2.ndim == 2):
            raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                               f"{list(input1.shape)} and {list(input2.shape)}.")
    elif not (input1.ndim == 1 and input2.ndim == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    d = input1.ndim - 1
    eps = 1e-12
    prod = sum(mul(input1, input2), d)
    m1 = add(sum(mul(input1, input1), d), eps)
    m2 = add(sum(mul(input2, input2), d), eps)
    cos = div(prod, sqrt(mul(m1, m2)))
    pos = eq(target, 1).to(dtype=cos.dtype)
    negm = eq(target, -1).to(dtype=cos.dtype)
    out = add(mul(pos, sub(1.0, cos)), mul(negm, relu(sub(cos, margin))))
    return _reduce(out, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,  # noqa: A002
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the p-norm pairwise distance; swap uses min(d(a, n), d(p, n))."""
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:   # min(d_neg, d_swap) = d_neg - relu(d_neg - d_swap)
        d_swap = pairwise_distance(positive, negative, p, eps)
        d_neg = sub(d_neg, relu(sub(d_neg, d_swap)))
    return _reduce(relu(add(sub(d_pos, d_neg), margin)), reduction)


declare("margin_ranking_loss", margin_ranking_loss, **_F)
declare("cosine_embedding_loss", cosine_embedding_loss, **_F)
declare("triplet_margin_loss", triplet_margin_loss, **_F)
declare("hinge_embedding_loss", hinge_embedding_loss, **_F)
declare("soft_margin_loss", soft_margin_loss, **_F)
declare("multilabel_soft_margin_loss", multilabel_soft_margin_loss, **_F)
declare("multi_margin_loss", multi_margin_loss, **_F)
declare("multilabel_margin_loss", multilabel_margin_loss, **_F)
declare("triplet_margin_with_distance_loss", triplet_margin_with_distance_loss, **_F)
