"""`torch.distributed.algorithms._checkpoint.checkpoint_wrapper`: FSDP activation-checkpoint wrappers, which
rawdev refuses (use rawdev.utils.checkpoint.checkpoint in a single process)."""
from ....refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.distributed.algorithms._checkpoint.checkpoint_wrapper",
                               "FSDP activation-checkpoint wrapping")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__   # the scan reports this module as refused
