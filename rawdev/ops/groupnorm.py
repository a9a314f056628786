"""Group and instance normalization: group_norm, instance_norm.

group_norm views x [N, C, *] as [N, C, S] (contiguous) and normalizes each (n, group) row of (C/G)*S values;
the cuda path is groupnorm.ptx (one block per row: Welford statistics and the per-channel affine fused), the
cpu path numpy. instance_norm is group_norm with one group per channel when the input's statistics are used,
and batch_norm's eval path (per-channel running statistics) otherwise, as PyTorch.
"""
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from .dispatch import backend, backend_of
from .registry import declare


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
        from .conv import batch_norm
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


declare("group_norm", group_norm, family="norm", functional=True, method=False)
declare("instance_norm", instance_norm, family="norm", functional=True, method=False)
