"""Losses: cross_entropy (fused kernels on cuda), nll_loss, mse_loss."""
from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor.core import Tensor
from .dispatch import backend, backend_of
from .activation import log_softmax
from .binary import add, div, mul, neg, sub
from .reduce import mean, sum
from .registry import declare
from .shape import reshape

# ------------------------------------------------------------------ losses
class _CrossEntropy(Function):
    node_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, logits, target, weight, ignore_index, reduction, smoothing):
        B = backend("cross_entropy", logits, target, weight)
        loss, saved = B.cross_entropy(logits, target, weight, ignore_index, reduction, smoothing)
        ctx.args = (ignore_index, reduction, smoothing)
        ctx.nsaved = len(saved)
        ctx.save_for_backward(*saved, target, weight)
        return loss

    @staticmethod
    def backward(ctx, g):
        st = ctx.saved_tensors
        saved, target, weight = st[:ctx.nsaved], st[ctx.nsaved], st[ctx.nsaved + 1]
        gx = backend_of(g).cross_entropy_bwd(g, saved, target, weight, *ctx.args)
        return gx, None, None, None, None, None


def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
                  reduction="mean", label_smoothing=0.0):
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target.dtype.is_floating_point and target.shape == input.shape:
        # class probabilities (PyTorch's test is exactly this: a float target of the input's shape):
        # -(target * log_softmax).sum(class dim), weighted per class
        cdim = 1 if input.ndim > 1 else 0
        c = input.shape[cdim]
        if label_smoothing:
            target = add(mul(target, 1 - label_smoothing), label_smoothing / c)
        lp = log_softmax(input, cdim)
        if weight is not None:
            wshape = [1] * input.ndim
            wshape[cdim] = c
            lp = mul(lp, reshape(weight, wshape))
        per = neg(sum(mul(lp, target), cdim))
        if reduction == "none":
            return per
        if reduction == "sum":
            return sum(per)
        return div(sum(per), input.shape[0]) if input.ndim > 1 else per
    if input.ndim == 1 and target.ndim == 0 and target.dtype.is_floating_point:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype._legacy[:-6]}")
    if input.ndim == 1:
        out = _CrossEntropy.apply(reshape(input, (1, -1)), reshape(target, (1,)), weight, ignore_index,
                                  reduction, float(label_smoothing))
        return reshape(out, ()) if reduction == "none" else out
    if input.ndim != 2:
        raise NotImplementedError("cross_entropy over extra (K-dimensional) axes is not supported: pass [N, C] logits")
    if target.ndim == 0 or target.shape[0] != input.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}).")
    if target.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dtype.is_floating_point:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype._legacy[:-6]}")
    return _CrossEntropy.apply(input, target, weight, ignore_index, reduction, float(label_smoothing))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    """nll on log-probabilities: cross_entropy of log-probabilities equals nll (log_softmax is idempotent)."""
    return cross_entropy(input, target, weight, size_average, ignore_index, reduce, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        import warnings
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                      f"({tuple(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      f"Please ensure they have the same size.", UserWarning, stacklevel=2)
    d = sub(input, target)
    sq = mul(d, d)
    if reduction == "none":
        return sq
    if reduction == "sum":
        return sum(sq)
    if reduction == "mean":
        return mean(sq)
    raise ValueError(f"{reduction} is not a valid value for reduction")




declare("cross_entropy", cross_entropy, family="loss", functional=True, torch=False, method=False)
declare("nll_loss", nll_loss, family="loss", functional=True, torch=False, method=False)
declare("mse_loss", mse_loss, family="loss", functional=True, torch=False, method=False)
