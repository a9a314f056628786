"""Losses: cross_entropy (fused kernels on cuda), nll_loss (nll kernels), mse_loss; the elementwise losses
(l1, smooth_l1, huber, binary_cross_entropy[_with_logits], kl_div: one pointwise_loss kernel pair on cuda,
numpy beside it on the cpu); cosine_embedding, margin_ranking and triplet_margin as compositions of ops
that have kernels."""
import warnings

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function, attach_to_edge
from .activation import log_softmax
from .binary import add, div, eq, mul, neg, pow, sub
from .dispatch import backend, backend_of
from .reduce import mean, sum
from .registry import declare
from .shape import expand, reshape
from .unary import abs, relu, sigmoid, softplus, sqrt


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


# ------------------------------------------------------------------ elementwise losses (pointwise_loss kernels)
_PW = {"l1": 0, "smooth_l1": 1, "huber": 2, "bce": 3, "bce_logits": 4, "kl": 5, "kl_log": 6}
_PW_NODE = {"l1": "L1LossBackward0", "smooth_l1": "SmoothL1LossBackward0", "huber": "HuberLossBackward0",
            "bce": "BinaryCrossEntropyBackward0", "bce_logits": "BinaryCrossEntropyWithLogitsBackward0",
            "kl": "KlDivBackward0", "kl_log": "KlDivBackward0"}


def _sp(x):   # log(1 + exp(x)) without overflow
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _pw_forward(op, x, t, w, a):
    """numpy: the loss of each element (the kernels' formulas, in x's dtype)."""
    if op == "l1":
        return np.abs(x - t)
    if op == "smooth_l1":
        d = np.abs(x - t)
        return np.where(d < a, 0.5 * d * d / a, d - 0.5 * a)
    if op == "huber":
        d = np.abs(x - t)
        return np.where(d < a, 0.5 * d * d, a * (d - 0.5 * a))
    if op == "bce":
        return -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    if op == "bce_logits":
        lw = 1 + (w - 1) * t if w is not None else 1
        return (1 - t) * x + lw * _sp(-x)
    if op == "kl":
        return np.where(t == 0, -(t * x), t * (np.log(np.where(t == 0, 1, t)) - x))
    return np.exp(t) * (t - x)


def _pw_backward(op, g, x, t, w, a):
    """numpy: (dloss/dx, dloss/dt) times g."""
    if op in ("l1", "smooth_l1", "huber"):
        d = x - t
        if op == "l1":
            gx = np.sign(d)
        elif op == "smooth_l1":
            gx = np.where(d < -a, -1, np.where(d > a, 1, d / a))
        else:
            gx = np.where(d < -a, -a, np.where(d > a, a, d))
        return g * gx, -g * gx
    if op == "bce":
        gx = (x - t) / np.maximum((1 - x) * x, 1e-12)
        gt = np.maximum(np.log1p(-x), -100) - np.maximum(np.log(x), -100)
        return g * gx, g * gt
    if op == "bce_logits":
        w = 1 if w is None else w
        lw = 1 + (w - 1) * t
        return g * ((1 - t) - lw / (1 + np.exp(x))), g * ((w - 1) * _sp(-x) - x)
    if op == "kl":
        return -g * t, g * (np.log(t) + 1 - x)
    et = np.exp(t)
    return -g * et, g * et * (t - x + 1)


class _PointwiseLoss(Function):
    @staticmethod
    def forward(ctx, x, t, w, op, a):
        ctx.op, ctx.a = op, a
        ctx.save_for_backward(x, t, w)
        if x.device.type == "cpu":
            from .cpu import _vdt, v, wrap
            dtp = _vdt(x.dtype)
            with np.errstate(all="ignore"):
                r = _pw_forward(op, v(x), v(t), None if w is None else v(w), dtp.type(a))
            return wrap(np.asarray(r, dtp), x.dtype)
        from .opmath import run

        def on_cuda(x, t, w):   # float16/bfloat16 compute in float32 (rawdev.ops.opmath)
            from . import cuda as _c
            _c._f32(op, x, t, w)
            x, t, w = _c.dense(x), _c.dense(t), _c.dense(w)
            y = _c.empty(x.shape, x.dtype, x.device, f"{op} loss")
            n = x.numel()
            _c._ew(_c._rdev(x), "pointwise_loss_fwd", [y.data_ptr(), x.data_ptr(), t.data_ptr(),
                                                       w.data_ptr() if w is not None else 0, _PW[op], float(a), n],
                   n, op)
            return y
        return run("pointwise_loss_fwd", on_cuda, x, t, w)

    @staticmethod
    def backward(ctx, g):
        x, t, w = ctx.saved_tensors
        op, a = ctx.op, ctx.a
        need_x, need_t, need_w = ctx.needs_input_grad[:3]
        gw = None
        if need_w:   # pos_weight: d/dpw = t * log(1 + exp(-x))
            gw = mul(mul(g, t), softplus(neg(x)))
        if g.device.type == "cpu":
            from .cpu import _vdt, v, wrap
            dtp = _vdt(g.dtype)
            with np.errstate(all="ignore"):
                gx, gt = _pw_backward(op, v(g), v(x), v(t), None if w is None else v(w), dtp.type(a))
            gx = wrap(np.asarray(gx, dtp), g.dtype) if need_x else None
            gt = wrap(np.asarray(gt, dtp), g.dtype) if need_t else None
            return gx, gt, gw, None, None
        from .opmath import run

        def on_cuda(g, x, t, w):   # float16/bfloat16 compute in float32 (rawdev.ops.opmath)
            from . import cuda as _c
            g, x, t, w = _c.dense(g), _c.dense(x), _c.dense(t), _c.dense(w)
            gx = _c.empty(x.shape, g.dtype, g.device, f"{op} grad") if need_x else None
            gt = _c.empty(x.shape, g.dtype, g.device, f"{op} target grad") if need_t else None
            n = x.numel()
            _c._ew(_c._rdev(g), "pointwise_loss_bwd",
                   [gx.data_ptr() if gx is not None else 0, gt.data_ptr() if gt is not None else 0, g.data_ptr(),
                    x.data_ptr(), t.data_ptr(), w.data_ptr() if w is not None else 0, _PW[op], float(a), n], n,
                   op + " backward")
            return gx, gt, gw, None, None
        return run("pointwise_loss_bwd", on_cuda, g, x, t, w)

    @staticmethod
    def backward_graph(ctx, g):
        """create_graph=True: d(loss)/d(input) from recorded ops (branch masks and the target as constants);
        gradients for a target or pos_weight that need one keep the kernels' values, with a delayed error."""
        from ..autograd.function import delayed_error
        from ..autograd.grad_mode import no_grad
        x, t, w = ctx.saved_tensors
        op, a = ctx.op, ctx.a
        need_x, need_t, need_w = ctx.needs_input_grad[:3]
        gx = None
        if need_x:
            td = t.detach()

            def const(m):
                return m.detach().to(dtype=g.dtype)
            d = sub(x, td)
            if op == "l1":
                gx = mul(g, const(d.sign()))
            elif op in ("smooth_l1", "huber"):
                m = const(abs(d.detach()) < a)
                lin = div(d, a) if op == "smooth_l1" else d
                out = mul(const(d.sign()), 1.0 if op == "smooth_l1" else a)
                gx = mul(g, add(mul(m, lin), mul(sub(1, m), out)))
            elif op == "bce":
                gx = mul(g, div(d, mul(sub(1, x), x)))
            elif op == "bce_logits":
                lw = 1 if w is None else add(mul(sub(w.detach(), 1), td), 1)
                gx = mul(g, sub(sub(1, td), mul(lw, sigmoid(neg(x)))))
            elif op == "kl":
                gx = mul(g, neg(td))
            else:
                gx = mul(g, neg(td.exp()))
        gt = gw = None
        if need_t or need_w:
            with no_grad():
                _, gt, gw, _, _ = _PointwiseLoss.backward(ctx, g.detach())
            gt, gw = delayed_error((gt, gw), _PW_NODE[op])
        return gx, gt, gw, None, None


def _pointwise(op, x, t, w=None, a=0.0):
    out = _PointwiseLoss.apply(x, t, w, op, float(a))
    if out.grad_fn is not None:
        out.grad_fn.rename(_PW_NODE[op])
    return out


def _broadcast_pair(input, target):  # noqa: A002
    """input and target expanded to their broadcast shape, with PyTorch's warning when the sizes differ."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      f"This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      f"same size.", UserWarning, stacklevel=3)
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(target.shape)))
        input, target = expand(input, shape), expand(target, shape)  # noqa: A001
    return input, _same_dtype(input, target)


def _same_dtype(input, target):  # noqa: A002
    if target.dtype is not input.dtype:
        if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
            raise RuntimeError(f"Found dtype {target.dtype._legacy[:-6]} but expected {input.dtype._legacy[:-6]}")
        target = target.to(dtype=input.dtype)
    return target


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    input, target = _broadcast_pair(input, target)  # noqa: A001
    return _reduce(_pointwise("l1", input, target), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):  # noqa: A002
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _broadcast_pair(input, target)  # noqa: A001
    if beta == 0.0:
        return _reduce(_pointwise("l1", input, target), reduction)
    return _reduce(_pointwise("smooth_l1", input, target, a=beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):  # noqa: A002
    reduction = _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _broadcast_pair(input, target)  # noqa: A001
    loss = _pointwise("huber", input, target, a=delta)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError(f"Weights and input must have the same size. Got {weight.size()} and {input.size()}")
        loss = mul(loss, weight)
    return _reduce(loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """-w (t log x + (1 - t) log(1 - x)) on probabilities x, each log clamped at -100 (PyTorch)."""
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    target = _same_dtype(input, target)
    if input.device.type == "cpu":
        from .cpu import v
        xv = v(input)
        if np.any((xv < 0) | (xv > 1)):
            raise RuntimeError("all elements of input should be between 0 and 1")
    loss = _pointwise("bce", input, target)
    if weight is not None:
        loss = mul(loss, weight)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                     reduction="mean", pos_weight=None):
    """sigmoid + binary cross-entropy in the stable form (1 - t) x + (1 + (pw - 1) t) log(1 + exp(-x)),
    log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)); pos_weight broadcasts over the last (class) dim."""
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    target = _same_dtype(input, target)
    pw = None
    if pos_weight is not None:
        shape = tuple(np.broadcast_shapes(tuple(pos_weight.shape), tuple(input.shape)))
        if shape != tuple(input.shape):
            raise RuntimeError(f"The size of pos_weight {tuple(pos_weight.shape)} does not broadcast to the input "
                               f"size {tuple(input.shape)}")
        pw = expand(_same_dtype(input, pos_weight), tuple(input.shape))
    loss = _pointwise("bce_logits", input, target, pw)
    if weight is not None:
        loss = mul(loss, weight)
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):  # noqa: A002
    """target * (log target - input) (0 where target is 0), or exp(t) (t - input) for log_target; reduction
    'batchmean' divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if tuple(target.shape) != tuple(input.shape):
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(target.shape)))
        input, target = expand(input, shape), expand(target, shape)  # noqa: A001
    target = _same_dtype(input, target)
    loss = _pointwise("kl_log" if log_target else "kl", input, target)
    if reduction == "batchmean":
        s = sum(loss)
        return div(s, input.shape[0]) if input.ndim else s
    return _reduce(loss, reduction)


# ------------------------------------------------------------------ losses composed of ops with kernels
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
for _name, _fn in (("l1_loss", l1_loss), ("smooth_l1_loss", smooth_l1_loss), ("huber_loss", huber_loss),
                   ("binary_cross_entropy", binary_cross_entropy), ("kl_div", kl_div),
                   ("binary_cross_entropy_with_logits", binary_cross_entropy_with_logits),
                   ("margin_ranking_loss", margin_ranking_loss), ("cosine_embedding_loss", cosine_embedding_loss),
                   ("pairwise_distance", pairwise_distance), ("triplet_margin_loss", triplet_margin_loss)):
    declare(_name, _fn, family="loss", functional=True, torch=False, method=False)
