"""`torch.distributed.algorithms`: DDP communication hooks and wrappers, which rawdev refuses (data parallel only)."""
from ...refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.distributed.algorithms", "distributed training algorithms")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__   # the scan reports this module as refused
