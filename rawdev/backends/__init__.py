"""rawdev.backends, shaped like torch.backends (a package: `import rawdev.backends.cudnn as cudnn` works): the
switches PyTorch programs set, with what they mean here.

rawdev has no cuDNN, MKL-DNN, OpenMP or MPS: `cudnn.benchmark`, `cudnn.deterministic` and `cudnn.enabled` are
accepted and recorded (rawdev's kernels are deterministic except the atomics of scatter-adds),
`mps.is_available()` is False. `cuda.matmul.allow_tf32` is read by rawdev's GEMM when it picks a kernel (False by
default, as PyTorch: float32 GEMMs stay exact float32).
"""
from . import cpu, cuda, cudnn, mha, mkldnn, mps, openmp, opt_einsum

__all__ = ["cudnn", "cuda", "mps", "cpu", "mkldnn", "openmp", "mha", "opt_einsum"]

from . import quantized  # noqa: E402,F401  (torch.backends.quantized: the quantized engine switch)
