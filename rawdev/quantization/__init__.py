"""`torch.quantization`: PyTorch's older name for torch.ao.quantization; the same objects (see rawdev.ao.quantization:
dynamic quantization is built, static quantization and QAT raise NotImplementedError saying so)."""
from ..ao.quantization import *  # noqa: F401,F403
from ..ao.quantization import WHY, __all__  # noqa: F401
from ..refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.quantization", "static quantization and QAT (torch.quantization)", WHY)
