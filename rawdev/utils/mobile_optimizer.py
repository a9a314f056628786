"""`torch.utils.mobile_optimizer`: rewriting TorchScript modules for PyTorch Mobile, which rawdev refuses: it has
no TorchScript (rawdev.jit.script returns the module itself) and no mobile runtime."""
from ..refusals import refusing_getattr

_WHY = "rawdev has no TorchScript modules and no mobile runtime; export with rawdev.onnx.export instead"
__getattr__ = refusing_getattr("torch.utils.mobile_optimizer", "mobile optimization (torch.utils.mobile_optimizer)",
                               _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
