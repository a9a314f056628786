"""Losses: cross_entropy (fused kernels on cuda), nll_loss (nll kernels), mse_loss, and the reduction handling
every loss file uses (_reduction: the legacy size_average/reduce arguments; _check_reduction; _reduce).

The other losses: loss_pointwise.py (l1, smooth_l1, huber, binary_cross_entropy[_with_logits], kl_div: one
pointwise_loss kernel pair), loss_margin.py (margin_ranking, cosine_embedding, triplet_margin, hinge_embedding,
soft_margin, multi(label)_margin, ...), loss_likelihood.py (poisson_nll, gaussian_nll, ctc)."""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function, attach_to_edge
from .activation import log_softmax
from .binary import add, div, mul, neg, sub
from .dispatch import backend, backend_of
from .reduce.functions import mean, sum
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

    @staticmethod
    def backward_graph(ctx, g):
        """create_graph=True: d(loss)/d(logits) = gs * ((1-eps) w (softmax - onehot) + eps/C valid (sum(wc) softmax
        - wc)), recorded. The first saved tensor (logp on the cpu, the logits on cuda) has the logits' softmax;
        it is given the logits' place in the graph (the node's first edge), so softmax of it records a node whose
        backward reaches the logits."""
        from ..tensor.factory import from_numpy
        from .activation import softmax
        from .cpu import _ce_weights
        ignore_index, reduction, smoothing = ctx.args
        node = ctx._graph_node
        st = ctx.saved_tensors
        vals, target, weight = st[0], st[ctx.nsaved], st[ctx.nsaved + 1]
        t = vals.detach()
        edge, nr = node.next_functions[0]
        if edge is None:
            return None, None, None, None, None, None
        attach_to_edge(t, edge, nr)
        p = softmax(t, 1)
        n, c = t.shape
        dt, dev = t.dtype, t.device
        npdt = np.float64 if dt is _dt.float64 else np.float32
        wv = None if weight is None else weight.detach().cpu()
        ts, w, valid = _ce_weights(target.detach().cpu(), c, wv, ignore_index, npdt)
        onehot = np.zeros((n, c), npdt)
        onehot[np.arange(n), ts] = 1

        def const(a):
            return from_numpy(np.ascontiguousarray(a, npdt)).to(device=dev, dtype=dt)
        d = mul(sub(p, const(onehot)), const(w[:, None] * (1 - smoothing)))
        if smoothing:
            wc = np.asarray(wv, npdt) if wv is not None else np.ones(c, npdt)
            d = add(d, mul(sub(mul(p, float(wc.sum())), const(wc[None, :])), const(valid[:, None] * (smoothing / c))))
        if reduction == "none":
            gs = reshape(g, (n, 1))
        elif reduction == "sum":
            gs = reshape(g, (1, 1))
        else:
            total = float(w.sum())
            gs = reshape(div(g, total) if total else mul(g, 0.0), (1, 1))
        return mul(d, gs), None, None, None, None, None


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
        target = _class_indices(input, target)
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
    target = _class_indices(input, target)
    return _CrossEntropy.apply(input, target, weight, ignore_index, reduction, float(label_smoothing))


def _class_indices(input, target):  # noqa: A002
    """Class-index targets as int64: Long as is, Byte widened (PyTorch reads both); any other integer dtype is
    refused with PyTorch's error for the device (its cpu kernel reads the targets as int64, its cuda kernels are
    dispatched on Long and Byte only)."""
    if target.dtype is _dt.int64:
        return target
    if target.dtype is _dt.uint8:
        return target.to(_dt.int64)
    name = target.dtype._legacy[:-6]
    if input.is_cuda:
        raise RuntimeError(f'"nll_loss_forward_reduce_cuda_kernel_2d_index" not implemented for \'{name}\'')
    raise RuntimeError(f"expected scalar type Long but found {name}")


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return sum(loss) if reduction == "sum" else mean(loss)


# ------------------------------------------------------------------ nll_loss
def _nll_cpu(x, target, weight, ignore_index):
    """(per-element loss [N*inner], picked class indices, weights, n/k index arrays) for x [N, C, inner]."""
    from .cpu import _ce_weights, v
    xv = v(x)
    n, c, inner = xv.shape
    ts, w, _ = _ce_weights(target, c, weight, ignore_index, xv.dtype)
    r = np.arange(n * inner)
    ni, ki = r // inner, r % inner
    return -xv[ni, ts, ki] * w, ts, w, ni, ki


class _NLL(Function):
    node_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, reduction):
        """x [N, C, inner] log-probabilities, target [N*inner] class indices."""
        ctx.args = (ignore_index, reduction)
        ctx.shape = tuple(x.shape)
        if x.device.type == "cpu":
            from .cpu import wrap
            per, ts, w, _, _ = _nll_cpu(x, target, weight, ignore_index)
            if reduction == "none":
                r = per
            elif reduction == "sum":
                r = per.sum()
            else:
                with np.errstate(invalid="ignore", divide="ignore"):
                    r = per.sum() / w.sum()
            ctx.save_for_backward(target, weight, None)
            return wrap(np.asarray(r, per.dtype), x.dtype)
        from .opmath import run

        def on_cuda(x, target, weight):   # float16/bfloat16 compute in float32 (rawdev.ops.opmath)
            from . import cuda as _c
            _c._f32("nll_loss", x, weight)
            x, target, weight = _c.dense(x), _c.dense(target), _c.dense(weight)
            n, c, inner = ctx.shape
            rows = n * inner
            wptr = weight.data_ptr() if weight is not None else 0
            rdev = _c._rdev(x)
            per = _c.empty((rows,), x.dtype, x.device, "nll_loss per-element loss")
            _c._ew(rdev, "nll_fwd", [per.data_ptr(), x.data_ptr(), target.data_ptr(), wptr, rows, c, inner,
                                     int(ignore_index)], rows, "nll_loss")
            if reduction == "none":
                ctx.save_for_backward(target, weight, None)
                return per
            out = _c.empty((), x.dtype, x.device, "loss")
            denom = _c.empty((1,), x.dtype, x.device, "nll_loss weight sum")
            _c._kernel(rdev, "cross_entropy_ws_reduce", "nll_loss").launch(
                1, 1024, [out.data_ptr(), denom.data_ptr(), per.data_ptr(), target.data_ptr(), wptr, rows, c,
                          int(ignore_index), _c._REDUCTION[reduction]])
            ctx.save_for_backward(target, weight, denom)
            return out
        return run("nll_fwd", on_cuda, x, target, weight)

    @staticmethod
    def backward(ctx, g):
        target, weight, denom = ctx.saved_tensors
        ignore_index, reduction = ctx.args
        n, c, inner = ctx.shape
        if g.device.type == "cpu":
            from .cpu import _vdt, v, wrap
            dtp = _vdt(g.dtype)
            from .cpu import _ce_weights
            ts, w, _ = _ce_weights(target, c, weight, ignore_index, dtp)
            gv = v(g)
            if reduction == "none":
                gs = gv.reshape(-1)
            elif reduction == "sum":
                gs = np.full(n * inner, gv.reshape(()), dtp)
            else:
                tot = w.sum()
                gs = np.full(n * inner, gv.reshape(()) / tot if tot != 0 else 0, dtp)
            gx = np.zeros((n, c, inner), dtp)
            r = np.arange(n * inner)
            gx[r // inner, ts, r % inner] = -w * gs
            return wrap(gx, g.dtype), None, None, None, None
        from .opmath import run

        def on_cuda(g, denom, weight):   # float16/bfloat16 compute in float32 (rawdev.ops.opmath)
            from . import cuda as _c
            g = _c.dense(g)
            gx = _c.empty((n, c, inner), g.dtype, g.device, "nll_loss grad")
            _c._ew(_c._rdev(g), "nll_bwd", [gx.data_ptr(), g.data_ptr(), denom.data_ptr() if denom is not None else 0,
                                            target.data_ptr(), weight.data_ptr() if weight is not None else 0,
                                            gx.numel(), c, inner, int(ignore_index), _c._REDUCTION[reduction]],
                   gx.numel(), "nll_loss backward")
            return gx, None, None, None, None
        return run("nll_bwd", on_cuda, g, denom, weight)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    """Negative log-likelihood of class-index targets on log-probabilities: input [N, C], [C] or
    [N, C, d1, ...], target [N], [] or [N, d1, ...]: loss = -weight[t] * input[n, t, ...]; 'mean' divides by
    the summed weights of the non-ignored targets."""
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim != 1 and (target.ndim == 0 or input.shape[0] != target.shape[0]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}).")
    if input.ndim <= 2 and target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim == 1 and target.ndim != 0:
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)}, target: {list(target.shape)})")
    if input.ndim > 2:
        expected = [input.shape[0]] + list(input.shape[2:])
        if list(target.shape) != expected:
            raise RuntimeError(f"Expected target size {expected}, got {list(target.shape)}")
    target = _class_indices(input, target)
    c = input.shape[0] if input.ndim == 1 else input.shape[1]
    if weight is not None and (weight.ndim != 1 or weight.numel() != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    if input.ndim == 1:
        x3 = reshape(input, (1, c, 1))
    else:
        n = input.shape[0]
        inner = 1
        for d in input.shape[2:]:
            inner *= d
        x3 = reshape(input, (n, c, inner))
    out = _NLL.apply(x3, reshape(target, (-1,)), weight, int(ignore_index), reduction)
    if reduction == "none":
        return reshape(out, tuple(target.shape))
    return out


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
