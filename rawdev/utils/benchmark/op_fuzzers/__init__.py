"""`torch.utils.benchmark.op_fuzzers`: PyTorch's ready-made operator fuzzers. BinaryOpFuzzer, UnaryOpFuzzer and
SpectralOpFuzzer are built (rawdev.utils.benchmark.fuzzer configurations, as PyTorch's); the sparse ones
(sparse_binary, sparse_unary) are refused: rawdev's sparse COO tensors have few ops."""
from .binary import BinaryOpFuzzer
from .spectral import SpectralOpFuzzer
from .unary import UnaryOpFuzzer

__all__ = ["BinaryOpFuzzer", "UnaryOpFuzzer", "SpectralOpFuzzer"]
