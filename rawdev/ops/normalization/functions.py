"""The normalization ops, declared once: layer_norm, rms_norm, group_norm, instance_norm, batch_norm.

Each op is its checks, its autograd Function and its registry record; the arithmetic is the backend's (cpu.py
numpy, cuda.py kernel launches beside this file, reached through dispatch's backend(...) by the names below), so
nothing here depends on the device.

layer_norm / rms_norm flatten the normalized dimensions into D and run one fused kernel per direction (cuda: one
warp per row with Welford statistics); the weight's and bias's gradients are column sums of dy*xhat and dy that
the backend computes without materializing the [rows, D] products (cuda: a column-tiled reduction over chunks of
rows; backend row_norm / row_norm_bwd).

group_norm views x [N, C, *] as [N, C, S] (contiguous) and normalizes each (n, group) row of (C/G)*S values
(cuda: one block per row, Welford statistics and the per-channel affine fused; backend group_norm_fwd /
group_norm_bwd). instance_norm is group_norm with one group per channel when the input's
statistics are used, and batch_norm's eval path (per-channel running statistics) otherwise, as PyTorch.

batch_norm normalizes each channel over the batch and the remaining dims (backend bn_stats / bn_apply / bn_bwd).

float16/bfloat16 inputs keep their statistics (mean, rstd, invstd) in float32; on cuda the kernels read and write
the 16-bit tensors themselves (normalization/cuda.py's `native_low`).
"""
import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function, attach_to_edge
from ...autograd.grad_mode import no_grad
from ..dispatch import backend, backend_of
from ..registry import declare


# ------------------------------------------------------------------ layer_norm / rms_norm
class _RowNorm(Function):
    node_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, w, b, eps, rms, shape):
        B = backend("layer_norm", x, w, b)
        x2 = x.reshape(-1, w.numel() if w is not None else shape[1]).contiguous()
        y, mean, rstd = B.row_norm(x2, w, b, eps, rms)
        ctx.save_for_backward(x2, mean, rstd, w)
        ctx.rms, ctx.xshape, ctx.eps = rms, x.shape, eps
        ctx.bias_dtype = b.dtype if b is not None else None
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        x2, mean, rstd, w = ctx.saved_tensors
        B = backend_of(g)
        g2 = g.reshape(x2.shape).contiguous()
        need_dx, need_dw, need_db = ctx.needs_input_grad[:3]
        dx, dw, db = B.row_norm_bwd(g2, x2, mean, rstd, w, ctx.rms, need_dx, need_dw and w is not None, need_db)
        # the column sums come unrounded (float32 for a 16-bit input): rounded once to the parameter's dtype, so a
        # float32 weight or bias of a 16-bit input (the mixed case) keeps its float32 sum
        if dw is not None and dw.dtype is not w.dtype:
            dw = B.cast(dw, w.dtype)
        if db is not None and db.dtype is not ctx.bias_dtype:
            db = B.cast(db, ctx.bias_dtype)
        return dx.reshape(ctx.xshape) if need_dx else None, dw, db, None, None, None

    @staticmethod
    def backward_graph(ctx, g):
        """create_graph=True: the normalization rebuilt from differentiable ops on the input. The saved rows
        were made inside forward (a reshaped copy), so an alias of them in the input's shape is given the
        input's place in the graph (the node's first edge)."""
        x2, _mean, _rstd, w = ctx.saved_tensors
        n, d = x2.shape
        edge, nr = ctx._graph_node.next_functions[0]
        x = x2.detach().reshape(ctx.xshape)
        attach_to_edge(x, edge, nr)
        xr = x.reshape(n, d)
        g2 = g.reshape(n, d)
        if ctx.rms:
            rstd = ((xr * xr).mean(1, keepdim=True) + ctx.eps) ** -0.5
            xhat = xr * rstd
        else:
            xc = xr - xr.mean(1, keepdim=True)
            rstd = ((xc * xc).mean(1, keepdim=True) + ctx.eps) ** -0.5
            xhat = xc * rstd
        gxhat = g2 * w if w is not None else g2
        proj = xhat * (gxhat * xhat).mean(1, keepdim=True)
        dx = rstd * (gxhat - proj if ctx.rms else gxhat - gxhat.mean(1, keepdim=True) - proj)
        dw = (g2 * xhat).sum(0) if w is not None and ctx.needs_input_grad[1] else None
        db = g2.sum(0) if ctx.needs_input_grad[2] else None
        return dx.reshape(ctx.xshape) if ctx.needs_input_grad[0] else None, dw, db, None, None, None


def _norm_rows(input, normalized_shape, weight, bias, eps, rms):  # noqa: A002
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != ns or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(p.shape)} and normalized_shape = {list(ns)}")
    D = int(np.prod(ns))
    w = weight.reshape(D) if weight is not None else None
    b = bias.reshape(D) if bias is not None else None
    out = _RowNorm.apply(input, w, b, eps, rms, (input.numel() // max(D, 1), D))
    if out.grad_fn is not None and rms:
        out.grad_fn.rename("RmsNormBackward0")
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalize over the last len(normalized_shape) dims to mean 0 and variance 1 (biased), then scale by
    weight and shift by bias (both of normalized_shape, optional).

    Example:
        >>> F.layer_norm(x, (x.shape[-1],))
    """
    return _norm_rows(input, normalized_shape, weight, bias, eps, rms=False)


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight (optional).
    eps=None uses torch.finfo(input.dtype).eps, as PyTorch."""
    if eps is None:
        eps = float(_dt.finfo(input.dtype).eps)
    return _norm_rows(input, normalized_shape, weight, None, eps, rms=True)


declare("layer_norm", layer_norm, family="normalization", functional=True, method=False)
declare("rms_norm", rms_norm, family="normalization", functional=True, method=False)


# ------------------------------------------------------------------ group_norm / instance_norm
class _GroupNorm(Function):
    node_name = "NativeGroupNormBackward0"

    @staticmethod
    def forward(ctx, x, w, b, G, eps):
        B = backend("group_norm", x, w, b)
        N, C = x.shape[:2]
        x3 = x.reshape(N, C, x.numel() // max(N * C, 1)).contiguous()
        y, mean, rstd = B.group_norm_fwd(x3, w, b, G, eps)
        ctx.save_for_backward(x3, mean, rstd, w)
        ctx.G, ctx.shape = G, tuple(x.shape)
        return y.reshape(ctx.shape)

    @staticmethod
    def backward(ctx, g):
        x3, mean, rstd, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        g3 = g.reshape(x3.shape).contiguous()
        dx, dw, db = backend_of(g).group_norm_bwd(g3, x3, mean, rstd, w, ctx.G, need[0], need[1] and w is not None,
                                                  need[2])
        return dx.reshape(ctx.shape) if dx is not None else None, dw, db, None, None


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalize x [N, C, *] over each group of C/num_groups channels (and all remaining dims) per sample, to
    mean 0 and variance 1 (biased), then scale and shift per channel by weight and bias ([C], optional).

    Example:
        >>> F.group_norm(torch.randn(2, 6, 5, 5), 3)
    """
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    N, C = input.shape[:2]
    if num_groups <= 0 or C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (p.ndim != 1 or p.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(p.shape)} and input of shape {list(input.shape)}")
    return _GroupNorm.apply(input, weight, bias, int(num_groups), float(eps))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) of x [N, C, *] over the remaining dims.

    use_input_stats=True: each instance's own mean and biased variance normalize (group_norm with C groups);
    running_mean/running_var (when given) are updated in place with momentum towards the batch average of the
    instances' means and unbiased variances. use_input_stats=False: the running statistics normalize.

    Example:
        >>> F.instance_norm(torch.randn(2, 3, 8, 8))
    """
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    N, C = input.shape[:2]
    S = input.numel() // max(N * C, 1)
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if S <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"torch.Size({list(input.shape)})")
    if running_mean is not None or running_var is not None:
        with no_grad():
            x3 = input.detach().reshape(N, C, S)
            mean = x3.mean(2, keepdim=True)
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.mean(0).reshape(C).to(running_mean.dtype) * momentum)
            if running_var is not None:
                d = x3 - mean
                var = (d * d).sum(2) * (1.0 / max(S - 1, 1))
                running_var.mul_(1 - momentum).add_(var.mean(0).to(running_var.dtype) * momentum)
    return group_norm(input, C, weight, bias, eps)


declare("group_norm", group_norm, family="normalization", functional=True, method=False)
declare("instance_norm", instance_norm, family="normalization", functional=True, method=False)


# ------------------------------------------------------------------ batch_norm
class _BatchNorm(Function):
    node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, x, w, b, mean, invstd, training):
        B = backend("batch_norm", x, w, b)
        x3 = x.reshape(x.shape[0], x.shape[1], -1).contiguous()
        ctx.save_for_backward(x3, mean, invstd, w)
        ctx.training, ctx.shape = training, tuple(x.shape)
        return B.bn_apply(x3, mean, invstd, w, b).reshape(ctx.shape)

    @staticmethod
    def backward(ctx, g):
        x3, mean, invstd, w = ctx.saved_tensors
        g3 = g.reshape(x3.shape).contiguous()
        dx, sdy, sdx = backend_of(g).bn_bwd(g3, x3, mean, invstd, w, ctx.training)
        need = ctx.needs_input_grad
        return (dx.reshape(ctx.shape) if need[0] else None, sdx if need[1] else None, sdy if need[2] else None,
                None, None, None)

    @staticmethod
    def backward_graph(ctx, g):
        """create_graph=True: batch norm rebuilt from differentiable ops on the input. The saved [N, C, L] rows
        were made inside forward, so an alias of them in the input's shape takes the input's place in the graph
        (the node's first edge). In training the statistics are the batch's: invstd = (var(x) + c)^-1/2 with
        c = 1/invstd² − var, the constant that stands for eps (so the value is the forward's)."""
        from ...tensor.factory import from_numpy
        x3, mean, invstd, w = ctx.saved_tensors
        N, C, L = x3.shape
        need = ctx.needs_input_grad
        edge, nr = ctx._graph_node.next_functions[0]
        x = x3.detach().reshape(ctx.shape)
        attach_to_edge(x, edge, nr)
        xr = x.reshape(N, C, L)
        g3 = g.reshape(N, C, L)
        wc = w.reshape(1, C, 1) if w is not None else None
        if ctx.training:
            mu = xr.mean((0, 2), keepdim=True)
            xc = xr - mu
            var = (xc * xc).mean((0, 2), keepdim=True)
            xv = np.asarray(x3.detach().cpu(), np.float64)
            c = 1.0 / np.asarray(invstd.detach().cpu(), np.float64) ** 2 - xv.var(axis=(0, 2))
            cst = from_numpy(np.ascontiguousarray(c.reshape(1, C, 1))).to(device=x.device, dtype=x.dtype)
            rstd = (var + cst) ** -0.5
            xhat = xc * rstd
            gxhat = g3 * wc if wc is not None else g3
            dx = rstd * (gxhat - gxhat.mean((0, 2), keepdim=True) - xhat * (gxhat * xhat).mean((0, 2), keepdim=True))
        else:
            rstd = invstd.detach().reshape(1, C, 1).to(x.dtype)
            xhat = (xr - mean.detach().reshape(1, C, 1).to(x.dtype)) * rstd
            dx = g3 * (wc * rstd if wc is not None else rstd)
        dw = (g3 * xhat).sum((0, 2)) if w is not None and need[1] else None
        db = g3.sum((0, 2)) if need[2] else None
        return dx.reshape(ctx.shape) if need[0] else None, dw, db, None, None, None


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,  # noqa: A002
               eps=1e-5):
    """Normalize each channel (dim 1) of input [N, C, *] over the batch and the remaining dims.

    training=True: the batch's mean and biased variance normalize (one Welford pass), and running_mean/
    running_var (when given) are updated in place with momentum, the variance unbiased (·n/(n−1)) as PyTorch
    keeps it. training=False: running_mean/running_var normalize.

    Example:
        >>> F.batch_norm(x, rm, rv, training=True, momentum=0.1)
    """
    if input.ndim < 2:
        raise ValueError(f"Expected 2D or more input to batch_norm (got {input.ndim}D input)")
    N, C = input.shape[:2]
    n = input.numel() // max(C, 1)
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    if training:
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"torch.Size({list(input.shape)})")
        with no_grad():
            mean, var = backend("batch_norm", input).bn_stats(input.reshape(N, C, -1).contiguous())
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var.to(running_var.dtype) * (momentum * n / (n - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean, var = running_mean.detach(), running_var.detach()
    # 16-bit inputs normalize with float32 statistics, as PyTorch's kernels (their accumulate type): 16-bit running
    # statistics are widened before invstd is computed, and the batch's float32 ones are never rounded
    stat = _dt.float32 if input.dtype in (_dt.float16, _dt.bfloat16) else input.dtype
    if stat is not input.dtype:
        mean, var = mean.to(stat), var.to(stat)
    with no_grad():
        invstd = (var + eps).rsqrt()
    if mean.dtype is not stat:
        mean, invstd = mean.to(stat), invstd.to(stat)
    return _BatchNorm.apply(input, weight, bias, mean.contiguous(), invstd.contiguous(), bool(training))


declare("batch_norm", batch_norm, family="normalization", functional=True, method=False)
