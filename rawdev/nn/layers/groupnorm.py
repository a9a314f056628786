"""GroupNorm and InstanceNorm1d/2d over F.group_norm / F.instance_norm (rawdev/ops/normalization/functions.py)."""
import warnings

from ...ops.dispatch import owner_scope
from ...tensor.factory import empty
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .batchnorm import _BatchNorm

__all__ = ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class GroupNorm(Module):
    """Group normalization (PyTorch's nn.GroupNorm): the C channels of [N, C, *] in num_groups groups, each
    normalized per sample; weight ones and bias zeros of [C] (affine).

    Example:
        >>> gn = nn.GroupNorm(3, 6); y = gn(torch.randn(20, 6, 10, 10))
    """

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(empty(num_channels, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_channels, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "GroupNorm"):
            return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_BatchNorm):
    """Per-sample, per-channel normalization; PyTorch's defaults affine=False, track_running_stats=False."""

    _no_batch = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim not in (self._no_batch, self._no_batch + 1):
            raise ValueError(f"expected {self._no_batch}D or {self._no_batch + 1}D input (got {input.ndim}D input)")

    def _apply(self, x):
        with owner_scope(getattr(self, "_rawdev_tag", None) or type(self).__name__):
            return F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                   self.training or not self.track_running_stats,
                                   self.momentum if self.momentum is not None else 0.0, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = (local_metadata or {}).get("version", None)
        if version is None and not self.track_running_stats:
            keys = [prefix + n for n in ("running_mean", "running_var") if prefix + n in state_dict]
            if keys:
                error_msgs.append(
                    "Unexpected running stats buffer(s) {names} for {klass} with track_running_stats=False. If "
                    "state_dict is a checkpoint saved before 0.4.0, this may be expected because {klass} does not "
                    "track running stats by default since 0.4.0. Please remove these keys from state_dict. If the "
                    "running stats are actually needed, instead set track_running_stats=True in {klass} to enable "
                    "them. See the documentation of {klass} for details.".format(
                        names=" and ".join(f'"{k}"' for k in keys), klass=type(self).__name__))
                for k in keys:
                    state_dict.pop(k)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, input):  # noqa: A002
        self._check_input_dim(input)
        fdim = input.ndim - self._no_batch
        if input.shape[fdim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={fdim} to match num_features ({self.num_features}), "
                                 f"but got: {input.shape[fdim]}.")
            warnings.warn(f"input's size at dim={fdim} does not match num_features. You can silence this warning by "
                          f"not passing in num_features, which is not used because affine=False", stacklevel=2)
        if input.ndim == self._no_batch:
            return self._apply(input.unsqueeze(0)).squeeze(0)
        return self._apply(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of [N, C, L] (or unbatched [C, L]) over L.

    Example:
        >>> y = nn.InstanceNorm1d(100)(torch.randn(20, 100, 40))
    """
    _no_batch = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of [N, C, H, W] (or unbatched [C, H, W]) over H and W.

    Example:
        >>> y = nn.InstanceNorm2d(100, affine=True)(torch.randn(20, 100, 35, 45))
    """
    _no_batch = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of [N, C, D, H, W] (or unbatched [C, D, H, W]) over D, H and W.

    Example:
        >>> y = nn.InstanceNorm3d(4)(torch.randn(2, 4, 3, 5, 5))
    """
    _no_batch = 4
