"""torch.backends.cudnn's flags. rawdev has no cuDNN (its convolutions are its own PTX kernels): the flags are
recorded so programs that set them run; `is_available()` is False and `version()` None, as PyTorch answers
without cuDNN."""
import contextlib

__all__ = ["enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit", "is_available", "version",
           "flags"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True          # PyTorch's default for cuDNN convolutions
benchmark_limit = 10


def is_available() -> bool:
    """False: rawdev does not use cuDNN."""
    return False


def version():
    """None, as PyTorch's without cuDNN."""
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags inside a with block and restore them after (PyTorch's torch.backends.cudnn.flags)."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    old = {n: g[n] for n in names}
    g.update(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    try:
        yield
    finally:
        g.update(old)
