"""torch.nn.modules.upsampling's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.resample import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401

__all__ = ["UpsamplingNearest2d", "UpsamplingBilinear2d", "Upsample"]
