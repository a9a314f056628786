"""`torch.utils.benchmark`: Timer, Measurement and Compare for Python statements (rawdev/utils/benchmark/timer.py),
and the fuzzers that generate benchmark inputs (Fuzzer, FuzzedParameter, ParameterAlias, FuzzedTensor in
rawdev/utils/benchmark/fuzzer.py; the ready-made ones in op_fuzzers). Callgrind statistics and C++ statements are
refused: rawdev does not have them, nor FuzzedSparseTensor (see each name's NotImplementedError)."""
from ...refusals import Refused
from . import op_fuzzers
from .fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from .timer import Compare, Language, Measurement, Timer

__all__ = ["Timer", "Measurement", "Compare", "Language", "Fuzzer", "FuzzedParameter", "ParameterAlias",
           "FuzzedTensor", "op_fuzzers"]

_CALLGRIND = "rawdev runs no Valgrind; use Timer.blocked_autorange for wall-clock times"
CallgrindStats = Refused("torch.utils.benchmark.CallgrindStats", "Callgrind instruction counts", _CALLGRIND)
FunctionCounts = Refused("torch.utils.benchmark.FunctionCounts", "Callgrind instruction counts", _CALLGRIND)
FuzzedSparseTensor = Refused("torch.utils.benchmark.FuzzedSparseTensor", "sparse benchmark fuzzers",
                              "rawdev's sparse COO tensors are matrices, not the n-d hybrid ones FuzzedSparseTensor "
                              "draws; fuzz dense tensors with FuzzedTensor")
