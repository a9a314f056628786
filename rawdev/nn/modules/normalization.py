"""torch.nn.modules.normalization's classes, as PyTorch's file holds them (defined in rawdev.nn).

Not in rawdev: CrossMapLRN2d."""
from ..layers.extra import LocalResponseNorm  # noqa: F401
from ..layers.groupnorm import GroupNorm  # noqa: F401
from ..layers.normalization import LayerNorm, RMSNorm  # noqa: F401

__all__ = ["LocalResponseNorm", "LayerNorm", "GroupNorm", "RMSNorm"]
