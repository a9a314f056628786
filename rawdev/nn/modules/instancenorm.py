"""torch.nn.modules.instancenorm's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.groupnorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from ..layers.lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d  # noqa: F401

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]
