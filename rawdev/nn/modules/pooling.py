"""torch.nn.modules.pooling's classes, as PyTorch's file holds them (defined in rawdev.nn).

Not in rawdev: MaxUnpool3d, FractionalMaxPool2d, FractionalMaxPool3d, LPPool3d."""
from ..layers.extra import LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d  # noqa: F401
from ..layers.pooling import (  # noqa: F401
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    _MaxPoolNd,  # noqa: F401  (base classes code subclasses)
)

__all__ = ["AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
           "LPPool1d", "LPPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d"]
