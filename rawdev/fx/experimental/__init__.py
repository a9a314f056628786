"""`torch.fx.experimental`: optimization (conv + batch-norm folding, dropout removal)."""
from . import optimization

__all__ = ["optimization"]
