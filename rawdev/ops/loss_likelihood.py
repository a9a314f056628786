"""Likelihood losses composed from declared ops (both devices and autograd come with them): poisson_nll_loss,
gaussian_nll_loss and ctc_loss (the alpha recursion in log space). Formulas and defaults are PyTorch's."""
import math

from .. import dtypes as _dt
from .loss import _check_reduction, _reduce, _reduction
from .registry import declare
from .select.functions import where as _where

_F = dict(family="loss_likelihood", functional=True, torch=False, method=False)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,  # noqa: A002
                     reduce=None, reduction="mean"):
    """exp(x) − y·x (log_input) or x − y·log(x + eps); full adds Stirling's y·log y − y + ½log(2πy) where y > 1.

    Example:
        >>> F.poisson_nll_loss(torch.tensor([0.]), torch.tensor([1.]))
        tensor(1.)
    """
    r = _check_reduction(_reduction(size_average, reduce, reduction))
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


def _lengths(x):
    if isinstance(x, int):
        return [x]
    if hasattr(x, "tolist"):
        return [int(v) for v in x.reshape(-1).tolist()]
    return [int(v) for v in x]


def _lse3(a, b, c):
    """log(e^a + e^b + e^c) elementwise, −inf when all three are −inf (no nan, in value or gradient)."""
    from .select.functions import maximum
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


declare("ctc_loss", ctc_loss, **_F)
declare("poisson_nll_loss", poisson_nll_loss, **_F)
declare("gaussian_nll_loss", gaussian_nll_loss, **_F)
