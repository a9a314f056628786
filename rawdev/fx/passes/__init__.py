"""`torch.fx.passes`: analyses and transformations over GraphModules (shape_prop)."""
from . import shape_prop

__all__ = ["shape_prop"]
