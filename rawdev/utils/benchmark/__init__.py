"""`torch.utils.benchmark`: Timer, Measurement and Compare for Python statements (rawdev/utils/benchmark/timer.py).
The fuzzers (Fuzzer, FuzzedParameter, FuzzedTensor, op_fuzzers), Callgrind statistics and C++ statements are
refused: rawdev does not have them (see each name's NotImplementedError)."""
from ...refusals import Refused
from .timer import Compare, Language, Measurement, Timer

__all__ = ["Timer", "Measurement", "Compare", "Language"]

_FUZZ = ("rawdev has no tensor fuzzers; build the inputs with rawdev's random functions and time them with Timer")
_CALLGRIND = "rawdev runs no Valgrind; use Timer.blocked_autorange for wall-clock times"
Fuzzer = Refused("torch.utils.benchmark.Fuzzer", "benchmark fuzzers", _FUZZ)
FuzzedParameter = Refused("torch.utils.benchmark.FuzzedParameter", "benchmark fuzzers", _FUZZ)
FuzzedTensor = Refused("torch.utils.benchmark.FuzzedTensor", "benchmark fuzzers", _FUZZ)
ParameterAlias = Refused("torch.utils.benchmark.ParameterAlias", "benchmark fuzzers", _FUZZ)
CallgrindStats = Refused("torch.utils.benchmark.CallgrindStats", "Callgrind instruction counts", _CALLGRIND)
FunctionCounts = Refused("torch.utils.benchmark.FunctionCounts", "Callgrind instruction counts", _CALLGRIND)
