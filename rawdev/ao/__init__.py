"""`torch.ao`: PyTorch's architecture-optimization namespace; rawdev has its dynamic quantization (ao.quantization,
ao.nn.quantized.dynamic)."""
from . import nn, quantization

__all__ = ["nn", "quantization"]
