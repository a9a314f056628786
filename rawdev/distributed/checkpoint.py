"""`torch.distributed.checkpoint`: distributed checkpointing (use rawdev.save), which rawdev refuses (its
distributed training is data parallel only): see rawdev.refusals."""
from ..refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.distributed.checkpoint", "distributed checkpointing (use rawdev.save)")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__   # the scan reports this module as refused
