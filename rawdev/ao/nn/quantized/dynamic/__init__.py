"""`torch.ao.nn.quantized.dynamic`: the dynamic quantized modules (rawdev.nn.quantized.dynamic's)."""
from .....nn.quantized.dynamic import LSTM, Linear

__all__ = ["Linear", "LSTM"]
