"""`torch.distributed.nn`: RemoteModule and distributed functional collectives, which rawdev refuses (RPC)."""
from ..refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.distributed.nn", "torch.distributed.nn (RemoteModule)")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
