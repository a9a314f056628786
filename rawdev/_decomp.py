"""`torch._decomp`: ATen operator decomposition tables for graph compilers, which rawdev refuses: rawdev's ops are
Python functions over its own kernels, not ATen operators, and there is no graph to decompose."""
from .refusals import refusing_getattr

_WHY = "rawdev's ops are not ATen operators and rawdev records no operator graph to decompose"
__getattr__ = refusing_getattr("torch._decomp", "ATen decompositions (torch._decomp)", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
