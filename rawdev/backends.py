"""rawdev.backends, shaped like torch.backends: the switches PyTorch programs set, with what they mean here.

rawdev has no cuDNN and no MPS: `cudnn.benchmark`, `cudnn.deterministic` and `cudnn.enabled` are accepted and
recorded (rawdev's kernels are deterministic except the atomics of scatter-adds), `mps.is_available()` is
False. `cuda.matmul.allow_tf32` is read by rawdev's GEMM when it picks a kernel (False by default, as PyTorch:
float32 GEMMs stay exact float32).
"""
from . import flags as _flags
from .flags import Flags as _Flags

__all__ = ["cudnn", "cuda", "mps", "mkldnn", "openmp"]


cudnn = _Flags(enabled=True, benchmark=False, deterministic=False, allow_tf32=True)
cudnn.is_available = lambda: False
cudnn.version = lambda: None

cuda = _Flags(matmul=_flags.matmul)   # the object rawdev's GEMM reads (rawdev.flags)


def _cuda_is_built():
    return True   # rawdev's cuda path ships with it (the driver is found at run time)


cuda.is_built = _cuda_is_built
mps = _Flags(is_available=lambda: False, is_built=lambda: False)
mkldnn = _Flags(enabled=False, is_available=lambda: False)
openmp = _Flags(is_available=lambda: False)
