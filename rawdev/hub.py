"""`torch.hub`: loading models and files from GitHub and the web, which rawdev refuses: it downloads and runs
a repository's hubconf.py, code from the network, and the weights it fetches are pickles."""
from .refusals import refusing_getattr

_WHY = ("torch.hub downloads and executes a repository's code and loads pickled weights; fetch a safetensors "
        "file yourself and load it with rawdev.load")
__getattr__ = refusing_getattr("torch.hub", "torch.hub", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
