"""Dynamic quantized modules (PyTorch's torch.ao.nn.quantized.dynamic): weights quantized ahead of time,
activations quantized per call. rawdev has Linear; LSTM/GRU and the cells stay float under quantize_dynamic."""
from .linear import Linear

__all__ = ["Linear"]
