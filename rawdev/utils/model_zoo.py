"""`torch.utils.model_zoo`: downloading pickled pretrained weights (an alias of torch.hub's loader), which rawdev
refuses: the files are pickles from the network."""
from ..refusals import refusing_getattr

_WHY = ("it downloads pickled weights from the network; fetch a safetensors file yourself and load it with "
        "rawdev.load")
__getattr__ = refusing_getattr("torch.utils.model_zoo", "torch.utils.model_zoo", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
