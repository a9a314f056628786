"""`torch.export`: whole-graph capture of a program into an ExportedProgram (export, Dim, dynamic shapes), which
rawdev refuses: it records no graph of a forward. rawdev.onnx.export traces a model into an ONNX file instead.
Importing works; using any name raises NotImplementedError saying so."""
from .refusals import refusing_getattr

_WHY = ("rawdev executes modules eagerly and records no graph (no TorchDynamo, no ExportedProgram); "
        "rawdev.onnx.export traces a model into ONNX instead")
__getattr__ = refusing_getattr("torch.export", "torch.export graph capture", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
