"""Quantized modules (PyTorch's torch.nn.quantized / torch.ao.nn.quantized): the dynamic ones (see .dynamic)."""
from . import dynamic

__all__ = ["dynamic"]
