"""`torch._dynamo.utils`: TorchDynamo's helpers, refused with torch._dynamo (see its docstring)."""
from ..refusals import refusing_getattr
from . import WHY

__getattr__ = refusing_getattr("torch._dynamo.utils", "TorchDynamo (torch._dynamo)", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
