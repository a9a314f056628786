"""`torch.ao.nn`: the quantized modules (ao.nn.quantized)."""
from . import quantized

__all__ = ["quantized"]
