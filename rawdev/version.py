"""`torch.version`: rawdev's version, and what PyTorch reports about its build. rawdev is not compiled against a
CUDA toolkit (it loads the driver at run time and ships PTX), so `cuda` is None as in a CPU-only PyTorch
build; rawdev.cuda.is_available() says whether a GPU can be used."""
__all__ = ["__version__", "cuda", "git_version", "hip", "debug"]

__version__ = "0.1.0"
cuda = None
hip = None
git_version = "unknown"
debug = False
