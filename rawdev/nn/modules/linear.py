"""torch.nn.modules.linear's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.extra import Bilinear  # noqa: F401
from ..layers.flatten import Identity  # noqa: F401
from ..layers.linear import LazyLinear, Linear, NonDynamicallyQuantizableLinear  # noqa: F401

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear", "NonDynamicallyQuantizableLinear"]
