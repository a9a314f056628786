"""`torch._inductor.codecache`: part of the Inductor compiler, refused with torch._inductor (see its docstring)."""
from ..refusals import refusing_getattr
from . import WHY

__getattr__ = refusing_getattr("torch._inductor.codecache", "TorchInductor (torch._inductor)", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
