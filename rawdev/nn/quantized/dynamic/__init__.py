"""Dynamic quantized modules (PyTorch's torch.ao.nn.quantized.dynamic): weights quantized ahead of time,
activations quantized per call. rawdev has Linear and LSTM; GRU and the RNN cells stay float under quantize_dynamic."""
from .linear import Linear
from .rnn import LSTM

__all__ = ["Linear", "LSTM"]
