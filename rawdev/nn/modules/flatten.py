"""torch.nn.modules.flatten's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.flatten import Flatten, Unflatten  # noqa: F401

__all__ = ["Flatten", "Unflatten"]
