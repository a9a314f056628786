"""Functional forms of the less common layers and losses, composed from declared ops (both devices and autograd
come with them): threshold, hardshrink, softshrink, rrelu, local_response_norm, channel_shuffle, bilinear,
max_unpool1d/2d, lp_pool1d/2d, and the losses hinge_embedding, soft_margin, multilabel_soft_margin,
multi_margin, multilabel_margin, poisson_nll, gaussian_nll, triplet_margin_with_distance. Formulas and
defaults are PyTorch's."""
import math

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from .loss import _check_reduction, _reduce, _reduction
from .registry import declare
from .select import where as _where

_F = dict(family="nn_extra", functional=True, torch=False, method=False)


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


def channel_shuffle(input, groups):  # noqa: A002
    """Interleave the channels of `groups` groups: [N, g·k, *] viewed as [N, g, k, *], transposed to [N, k, g, *].

    Example:
        >>> F.channel_shuffle(torch.arange(4.).reshape(1, 4, 1, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    n, c = input.shape[0], input.shape[1]
    if groups <= 0:
        raise ValueError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if c % groups:
        raise ValueError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


def bilinear(input1, input2, weight, bias=None):
    """y = x1ᵀ A x2 + b for weight A [out, in1, in2] over inputs [..., in1] and [..., in2].

    Example:
        >>> F.bilinear(torch.ones(2, 3), torch.ones(2, 4), torch.ones(5, 3, 4)).shape
        torch.Size([2, 5])
    """
    from .products import einsum
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input sizes {input1.shape[-1]} and {input2.shape[-1]} do not match "
                           f"weight {list(weight.shape)}")
    lead = tuple(input1.shape[:-1])
    x1, x2 = input1.reshape(-1, input1.shape[-1]), input2.reshape(-1, input2.shape[-1])
    # (x1 A_o) · x2 for every o: one GEMM [B, in1] × [in1, out·in2], then a product with x2 summed over in2
    t = (x1 @ weight.permute(1, 0, 2).reshape(weight.shape[1], -1)).reshape(x1.shape[0], weight.shape[0], -1)
    y = einsum("boj,bj->bo", t, x2)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, weight.shape[0])


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
    from .conv import avg_pool1d
    from .unary import relu
    out = avg_pool1d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kernel_size).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """(Σ x^p over each window)^(1/p) in 2-D.

    Example:
        >>> F.lp_pool2d(torch.ones(1, 1, 2, 2), 2, 2)
        tensor([[[[2.]]]])
    """
    from .conv import avg_pool2d
    from .unary import relu
    kh, kw = _tuple(kernel_size, 2)
    out = avg_pool2d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kh * kw).pow(1.0 / norm_type)


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


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,  # noqa: A002
                     reduce=None, reduction="mean"):
    """exp(x) − y·x (log_input) or x − y·log(x + eps); full adds Stirling's y·log y − y + ½log(2πy) where y > 1.

    Example:
        >>> F.poisson_nll_loss(torch.tensor([0.]), torch.tensor([1.]))
        tensor(1.)
    """
    r = _red(size_average, reduce, reduction)
    loss = (input.exp() - target * input) if log_input else (input - target * (input + eps).log())
    if full:
        safe = _where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + _where(target > 1, stirling, 0.0)
    return _reduce(loss, r)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """½(log max(var, eps) + (x − y)² / max(var, eps)) (+ ½log 2π when full); var may be one value per sample
    ([..., 1] or the input's shape less its last dimension). The clamp does not stop var's gradient (PyTorch's).

    Example:
        >>> F.gaussian_nll_loss(torch.tensor([1.]), torch.tensor([1.]), torch.tensor([1.]))
        tensor(0.)
    """
    if not hasattr(var, "shape"):
        from ..tensor.factory import full_like
        var = full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any().item()):
        raise ValueError("var has negative entry/entries")
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(d(a, p) − d(a, n) + margin, 0) with any distance function (default pairwise_distance); swap uses
    min(d(a, n), d(p, n)).

    Example:
        >>> a = torch.zeros(1, 2); F.triplet_margin_with_distance_loss(a, a, a + 3)
        tensor(0.)
    """
    from .loss import pairwise_distance
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    d = distance_function if distance_function is not None else pairwise_distance
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        from .select import minimum
        dn = minimum(dn, d(positive, negative))
    return _reduce((dp - dn + margin).clamp_min(0), _check_reduction(reduction))


def _lengths(x):
    if isinstance(x, int):
        return [x]
    if hasattr(x, "tolist"):
        return [int(v) for v in x.reshape(-1).tolist()]
    return [int(v) for v in x]


def _lse3(a, b, c):
    """log(e^a + e^b + e^c) elementwise, −inf when all three are −inf (no nan, in value or gradient)."""
    from .select import maximum
    m = maximum(maximum(a, b), c)
    none = m == float("-inf")
    m = _where(none, 0.0, m).detach()
    total = (a - m).exp() + (b - m).exp() + (c - m).exp()
    # log(0) would send 0·inf = nan back through the unreachable states: their value is a constant −inf
    return _where(none, float("-inf"), m + _where(none, 1.0, total).log())


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",  # noqa: C901
             zero_infinity=False):
    """The connectionist temporal classification loss: −log of the total probability of every alignment of each
    target to its input frames, by the forward (alpha) recursion over the blank-extended target, in log space.
    Differentiable through the recursion (one small step per frame).

    Args:
        log_probs: [T, N, C] (or [T, C] unbatched) log-softmax outputs.
        targets: [N, S] padded class indices, or the targets concatenated into one 1-D tensor.
        input_lengths, target_lengths: per-sample lengths (tensors or sequences).
        blank: the blank class. reduction: 'mean' (each loss divided by its target length, then the batch mean),
            'sum' or 'none'. zero_infinity: impossible alignments give 0 (and no gradient) instead of inf.

    Example:
        >>> lp = torch.randn(5, 1, 4).log_softmax(2)
        >>> F.ctc_loss(lp, torch.tensor([[1, 2]]), [5], [2]).shape
        torch.Size([])
    """
    from ..tensor.factory import full, tensor
    from .join import cat
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    t_max, n, _ = lp.shape
    in_lens, tg_lens = _lengths(input_lengths), _lengths(target_lengths)
    if len(in_lens) != n or len(tg_lens) != n:
        raise RuntimeError(f"Expected input_lengths and target_lengths to have {n} values, got {len(in_lens)} and "
                           f"{len(tg_lens)}")
    if max(in_lens) > t_max:
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {max(in_lens)}")
    tgt = targets.detach().to(device="cpu")
    if tgt.ndim == 1 and not unbatched:                       # the targets of the batch concatenated
        flat, rows, off = [int(v) for v in tgt.tolist()], [], 0
        for k in tg_lens:
            rows.append(flat[off:off + k])
            off += k
    else:                                                     # padded [N, S] (or one unbatched target [S])
        t2 = tgt.reshape(n, -1).tolist()
        rows = [[int(v) for v in t2[i][:tg_lens[i]]] for i in range(n)]
    s_max = max(tg_lens) if tg_lens else 0
    width = 2 * s_max + 1
    ext = [[blank] * width for _ in range(n)]
    skip = [[False] * width for _ in range(n)]
    for i, r in enumerate(rows):
        for j, c in enumerate(r):
            ext[i][2 * j + 1] = c
            if j > 0 and c != r[j - 1]:
                skip[i][2 * j + 1] = True
    dev = lp.device
    ext_t = tensor(ext, dtype=_dt.int64, device=dev)                       # [N, L]
    skip_t = tensor(skip, dtype=_dt.bool, device=dev)
    emit = lp.gather(2, ext_t.unsqueeze(0).expand(t_max, n, width))         # [T, N, L]
    neg = full((n, 1), float("-inf"), dtype=lp.dtype, device=dev)
    start = tensor([[0.0, 0.0] + [float("-inf")] * (width - 2) if tg_lens[i] else [0.0] + [float("-inf")] *
                    (width - 1) for i in range(n)], dtype=lp.dtype, device=dev)
    alpha = emit[0] + start
    running = tensor([[t < in_lens[i] for i in range(n)] for t in range(t_max)], dtype=_dt.bool, device=dev)
    for t in range(1, t_max):
        one = cat([neg, alpha[:, :-1]], 1)
        two = _where(skip_t, cat([neg, neg, alpha[:, :-2]], 1) if width > 2 else alpha * 0 + float("-inf"),
                     float("-inf"))
        new = _lse3(alpha, one, two) + emit[t]
        alpha = _where(running[t].unsqueeze(1), new, alpha)
    last = tensor([[2 * k, max(2 * k - 1, 0)] for k in tg_lens], dtype=_dt.int64, device=dev)
    ends = alpha.gather(1, last)
    single = tensor([[k == 0] for k in tg_lens], dtype=_dt.bool, device=dev)
    keep = cat([single | ~single, ~single], 1)                 # an empty target ends at position 0 only
    ends = _where(keep, ends, float("-inf"))
    m = ends.detach().amax(1, keepdim=True)
    none = (m == float("-inf")).squeeze(1)
    m = _where(m == float("-inf"), 0.0, m)
    total = (ends - m).exp().sum(1)
    loss = _where(none, float("inf"), -(m.squeeze(1) + _where(none, 1.0, total).log()))
    if zero_infinity:
        loss = _where(loss == float("inf"), 0.0, loss)
    if unbatched:
        loss = loss.reshape(())
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        lens = tensor(tg_lens, dtype=lp.dtype, device=dev).clamp_min(1)
        return (loss / (lens.reshape(()) if unbatched else lens)).mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability p, scale the rest by
    1/(1 − p)."""
    from .activation import _check_p, _feature_dropout
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
    from .activation import softmax
    with no_grad():
        gumbels = -logits.detach().new_empty(tuple(logits.shape)).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = logits.detach().new_zeros(tuple(logits.shape)).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


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


for _fn in (ctc_loss, dropout3d, gumbel_softmax, pdist, threshold, threshold_, hardshrink, softshrink, rrelu, rrelu_,
            local_response_norm, channel_shuffle,
            bilinear, max_unpool1d, max_unpool2d, lp_pool1d, lp_pool2d, hinge_embedding_loss, soft_margin_loss,
            multilabel_soft_margin_loss, multi_margin_loss, multilabel_margin_loss, poisson_nll_loss,
            gaussian_nll_loss, triplet_margin_with_distance_loss):
    declare(_fn.__name__, _fn, **_F)
