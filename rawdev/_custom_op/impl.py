"""`torch._custom_op.impl`: refused as torch.library is (see rawdev.library)."""
from ..library import WHY
from ..refusals import refusing_getattr

__getattr__ = refusing_getattr("torch._custom_op.impl", "custom operator registration (torch._custom_op)", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
