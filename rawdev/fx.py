"""`torch.fx`: symbolic tracing and graph rewriting of modules, which rawdev refuses: rawdev runs Python eagerly
and records no graph of a module's forward (rawdev.jit.trace returns the module unchanged). Importing works;
using any name raises NotImplementedError saying so."""
from .refusals import refusing_getattr

_WHY = "rawdev executes modules eagerly and has no symbolic tracer or graph IR (torch.fx's Graph/Node/Proxy)"
__getattr__ = refusing_getattr("torch.fx", "torch.fx graph capture", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
