"""`torch.distributed._tensor`: DTensor (sharded tensors), which rawdev refuses (data parallel only): see
rawdev.refusals."""
from ..refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.distributed._tensor", "DTensor (sharded tensors)")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__   # the scan reports this module as refused
