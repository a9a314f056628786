"""`torch.classes`: TorchScript custom C++ classes (loaded from shared libraries), which rawdev refuses."""
from .refusals import refusing_getattr

_WHY = "rawdev loads no C++ extension libraries (custom classes and ops need PyTorch's C++ runtime)"
__getattr__ = refusing_getattr("torch.classes", "torch.classes", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
