"""`torch.utils.benchmark.op_fuzzers.binary`: refused (see rawdev.utils.benchmark.op_fuzzers)."""
from ....refusals import refusing_getattr
from . import WHY

__getattr__ = refusing_getattr("torch.utils.benchmark.op_fuzzers.binary", "benchmark fuzzers", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
