"""`torch.futures`: the Future type of torch.distributed.rpc, which rawdev refuses with the RPC framework."""
from .refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.futures", "torch.futures (asynchronous RPC results)")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
