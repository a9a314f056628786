"""`torch.distributed.autograd`: distributed autograd (RPC), which rawdev refuses (data parallel only):
see rawdev.refusals."""
from ..refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.distributed.autograd", "distributed autograd (RPC)")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__   # the scan reports this module as refused
