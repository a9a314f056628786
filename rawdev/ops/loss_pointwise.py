"""The elementwise losses: l1, smooth_l1, huber, binary_cross_entropy, binary_cross_entropy_with_logits and
kl_div. Each is one pointwise_loss_fwd / pointwise_loss_bwd kernel pair on cuda (ptx/src/loss.cu, selected by
_PW's op code) and the same formulas in numpy beside it on the cpu, then loss.py's reduction."""
import warnings

import numpy as np

from ..autograd.function import Function
from .binary import add, div, mul, neg, sub
from .loss import _check_reduction, _reduce, _reduction
from .reduce.functions import sum
from .registry import declare
from .shape import expand
from .unary import abs, sigmoid, softplus

_F = dict(family="loss_pointwise", functional=True, torch=False, method=False)


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


for _name, _fn in (("l1_loss", l1_loss), ("smooth_l1_loss", smooth_l1_loss), ("huber_loss", huber_loss),
                   ("binary_cross_entropy", binary_cross_entropy), ("kl_div", kl_div),
                   ("binary_cross_entropy_with_logits", binary_cross_entropy_with_logits)):
    declare(_name, _fn, **_F)
