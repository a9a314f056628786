"""`torch.distributed.algorithms`: of PyTorch's training algorithms, the activation-checkpoint wrappers
(`_checkpoint.checkpoint_wrapper`); the DDP communication hooks, join and model averaging are refused."""
from ...refusals import refusing_getattr
from . import _checkpoint  # noqa: F401  (torch.distributed.algorithms._checkpoint... resolves as an attribute)

__getattr__ = refusing_getattr("torch.distributed.algorithms", "distributed training algorithms")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__   # the scan reports this module as refused
