"""`torch.library`: registering custom operators with PyTorch's dispatcher, which rawdev refuses (it has none).
Importing works; using any name raises NotImplementedError saying so and what to use instead."""
from .refusals import refusing_getattr

WHY = ("rawdev has no ATen dispatcher to register operators with; a new op is a Python function over rawdev "
       "tensors, an autograd.Function, or a CUDA kernel through rawdev.rawkernel")
__getattr__ = refusing_getattr("torch.library", "custom operator registration (torch.library)", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
