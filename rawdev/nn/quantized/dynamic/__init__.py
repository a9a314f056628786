"""Dynamic quantized modules (PyTorch's torch.ao.nn.quantized.dynamic): weights quantized ahead of time,
activations quantized per call. rawdev has Linear and LSTM; GRU and the RNN cells stay float under quantize_dynamic."""
from ....refusals import refusing_getattr
from .linear import Linear
from .rnn import LSTM

__all__ = ["Linear", "LSTM"]
__getattr__ = refusing_getattr("torch.nn.quantized.dynamic", "dynamic quantized GRU, RNN cells and embeddings",
                               "rawdev's dynamic quantized modules are Linear and LSTM; quantize_dynamic leaves "
                               "GRU, the RNN cells and embeddings float")
