"""torch.nn.modules.pixelshuffle's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.resample import PixelShuffle, PixelUnshuffle  # noqa: F401

__all__ = ["PixelShuffle", "PixelUnshuffle"]
