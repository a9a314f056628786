"""torch.nn.modules.dropout's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.dropout import (  # noqa: F401
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
    _DropoutNd,  # noqa: F401  (base classes code subclasses)
)

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
