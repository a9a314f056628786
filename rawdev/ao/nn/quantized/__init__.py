"""`torch.ao.nn.quantized`: rawdev's quantized modules (the dynamic ones), which live in rawdev.nn.quantized."""
from ....nn.quantized import WHY
from ....refusals import refusing_getattr
from . import dynamic

__all__ = ["dynamic"]
__getattr__ = refusing_getattr("torch.ao.nn.quantized", "statically quantized modules (torch.ao.nn.quantized)", WHY)
