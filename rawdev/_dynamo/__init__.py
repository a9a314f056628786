"""`torch._dynamo`: the TorchDynamo graph capture behind torch.compile, which rawdev refuses (rawdev.compile returns
what it is given and runs it eagerly). Importing works; using any name raises NotImplementedError saying so."""
from ..refusals import refusing_getattr

WHY = ("rawdev runs Python eagerly and has no graph compiler (no TorchDynamo, no Inductor); "
       "rawdev.compile returns the module or function unchanged")
__getattr__ = refusing_getattr("torch._dynamo", "TorchDynamo (torch._dynamo)", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
