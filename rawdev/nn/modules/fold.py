"""torch.nn.modules.fold's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.conv import Fold, Unfold  # noqa: F401

__all__ = ["Fold", "Unfold"]
