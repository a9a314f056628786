"""torch.backends.cuda's switches. `matmul` is the object rawdev's GEMM reads (rawdev.flags.matmul:
`allow_tf32`, PyTorch's default False); the scaled-dot-product-attention kernel switches are recorded (rawdev has
one attention path, the math one, so the flags choose nothing); `cufft_plan_cache` answers as an empty cache
(rawdev's FFTs keep no plans)."""
import contextlib
import enum

from .. import flags as _flags

__all__ = ["matmul", "is_built", "cufft_plan_cache", "enable_flash_sdp", "flash_sdp_enabled",
           "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", "enable_math_sdp", "math_sdp_enabled",
           "enable_cudnn_sdp", "cudnn_sdp_enabled", "sdp_kernel", "preferred_linalg_library", "SDPBackend"]

matmul = _flags.matmul


def is_built() -> bool:
    """True: rawdev's cuda path ships with it (the driver is found at run time)."""
    return True


class _PlanCache:
    """An FFT plan cache that holds nothing: size 0, and max_size settable as in PyTorch."""
    size = 0
    max_size = 4096

    def clear(self) -> None:
        """Nothing to free."""

    def __getitem__(self, device):
        return self


cufft_plan_cache = _PlanCache()
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def enable_flash_sdp(enabled: bool) -> None:
    """Record the flash-attention switch (rawdev's attention is one kernel path; nothing changes)."""
    _sdp["flash"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Record the memory-efficient-attention switch."""
    _sdp["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_math_sdp(enabled: bool) -> None:
    """Record the math-attention switch."""
    _sdp["math"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Record the cuDNN-attention switch."""
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """Set the attention switches inside a with block and restore them after."""
    old = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(old)


def preferred_linalg_library(backend=None):
    """rawdev has one linear-algebra path; answers 'default' (PyTorch's _LinalgBackend.Default) for any choice."""
    return "default"


class SDPBackend(enum.IntEnum):
    """PyTorch's torch.backends.cuda.SDPBackend (torch.nn.attention.SDPBackend): the attention kernels by name, with
    PyTorch's values. Programs use them as keys for sdp_kernel's switches; rawdev runs the math path whichever
    is chosen.

    Example:
        >>> with sdp_kernel(enable_math=True, enable_flash=False):   # e.g. chosen through SDPBackend.MATH
        ...     pass
    """
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4
