"""`torch.utils.benchmark.op_fuzzers`: PyTorch's ready-made operator fuzzers, refused (rawdev has no fuzzers)."""
from ....refusals import refusing_getattr

WHY = "rawdev has no tensor fuzzers; build the inputs with rawdev's random functions and time them with Timer"
__getattr__ = refusing_getattr("torch.utils.benchmark.op_fuzzers", "benchmark fuzzers", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
