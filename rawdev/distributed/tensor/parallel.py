"""`torch.distributed.tensor.parallel`: tensor parallelism, which rawdev refuses (data parallel only)."""
from ...refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.distributed.tensor.parallel", "tensor parallelism (parallelize_module)")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__   # the scan reports this module as refused
