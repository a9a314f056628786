"""`torch.quantization` (torch.ao.quantization): int8 quantized modules and their conversion (quantize_dynamic,
qconfigs), which rawdev refuses: it has no quantized dtypes or quantized kernels. Importing works; using any name
raises NotImplementedError saying so. rawdev.qint8/quint8/qint32 are refused the same way."""
from .refusals import _QUANTIZED, refusing_getattr

WHY = _QUANTIZED
FEATURE = "quantization (torch.quantization)"
__getattr__ = refusing_getattr("torch.quantization", FEATURE, WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
