"""`torch.ao.nn.quantized`: rawdev's quantized modules (the dynamic ones), which live in rawdev.nn.quantized."""
from . import dynamic

__all__ = ["dynamic"]
