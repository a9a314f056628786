"""BatchNorm1d and BatchNorm2d: the layers whose buffers (running_mean, running_var, num_batches_tracked) are
why model.cuda() moves buffers as well as parameters."""
from ... import dtypes as _dt
from ...ops.dispatch import owner_scope
from ...tensor.factory import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _BatchNorm(Module):
    """Per-channel normalization over the batch (and spatial dims): weight ones, bias zeros (affine); buffers
    running_mean zeros, running_var ones, num_batches_tracked 0 (track_running_stats).

    In training the batch statistics normalize and the running ones are updated: with momentum m,
    r = (1 − m)·r + m·batch (the variance unbiased); momentum=None keeps a cumulative average
    (m = 1 / num_batches_tracked). In eval the running statistics normalize.
    """

    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]
    _expect: tuple[int, ...] = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dt.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim not in self._expect:
            want = " or ".join(f"{d}D" for d in self._expect)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")

    def forward(self, input):  # noqa: A002
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:     # the cumulative average reads the count (a host read, as PyTorch's)
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        with owner_scope(getattr(self, "_rawdev_tag", None) or type(self).__name__):
            return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                                self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of [N, C] or [N, C, L] over N (and L).

    Example:
        >>> bn = nn.BatchNorm1d(100); y = bn(torch.randn(20, 100))
    """
    _expect = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of [N, C, H, W] over N, H and W.

    Example:
        >>> bn = nn.BatchNorm2d(16); y = bn(torch.randn(8, 16, 14, 14))
        >>> sorted(b for b, _ in bn.named_buffers())
        ['num_batches_tracked', 'running_mean', 'running_var']
    """
    _expect = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of [N, C, D, H, W] over N, D, H and W.

    Example:
        >>> nn.BatchNorm3d(4)(torch.randn(2, 4, 3, 5, 5)).shape
        torch.Size([2, 4, 3, 5, 5])
    """
    _expect = (5,)

