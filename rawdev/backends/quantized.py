"""`torch.backends.quantized`: the quantized engine switch (engine, supported_engines), refused with quantization
(see rawdev.quantization): rawdev has no quantized kernels to choose between."""
from ..refusals import _QUANTIZED, refusing_getattr

__getattr__ = refusing_getattr("torch.backends.quantized", "quantization (torch.backends.quantized)", _QUANTIZED)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
