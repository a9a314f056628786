"""Quantized modules (PyTorch's torch.nn.quantized / torch.ao.nn.quantized): the dynamic ones (see .dynamic).
The statically quantized modules (quantized.Linear, Conv2d, ... taking quantized tensors) are not built: their
names raise NotImplementedError saying so."""
from ...refusals import refusing_getattr
from . import dynamic, engine  # noqa: F401  (engine: imported before __getattr__ would answer for it)

__all__ = ["dynamic"]

WHY = ("rawdev builds dynamic quantization only (nn.quantized.dynamic.Linear and LSTM); the statically quantized "
       "modules, which take and return quantized tensors, are not built")
__getattr__ = refusing_getattr("torch.nn.quantized", "statically quantized modules (torch.nn.quantized)", WHY)
