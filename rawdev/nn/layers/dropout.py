from .. import functional as F
from ..module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Zeroes each element with probability p in training (mask from rawdev's generator), scales by 1/(1-p)."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):  # noqa: A002
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class _DropoutNd(Module):
    _fn: str | None = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):  # noqa: A002
        return getattr(F, self._fn)(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) / (C, L) inputs with probability p in training."""
    _fn = "dropout1d"


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) / (C, H, W) inputs with probability p in training."""
    _fn = "dropout2d"


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) / (C, D, H, W) inputs with probability p in training."""
    _fn = "dropout3d"


class AlphaDropout(_DropoutNd):
    """Dropout that keeps a selu network's self-normalizing mean and variance."""
    _fn = "alpha_dropout"


class FeatureAlphaDropout(_DropoutNd):
    _fn = "feature_alpha_dropout"


__all__ += ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
