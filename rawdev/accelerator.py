"""rawdev.accelerator, as torch.accelerator: the one accelerator rawdev drives is CUDA (a GPU, or the
simulated GPU when RAWDEV_DRIVER=sim)."""
from . import cuda as _cuda
from .device import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "device_index", "synchronize"]


def is_available():
    """True when a CUDA device can be used (a real one, or the simulator when chosen)."""
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """device('cuda') when CUDA is available (or check_available=False, PyTorch's default); None otherwise
    when check_available=True."""
    if check_available and not is_available():
        return None
    return _device("cuda")


def device_count():
    return _cuda.device_count() if is_available() else 0


def current_device_index():
    return _cuda.current_device()


def set_device_index(device):
    _cuda.set_device(device)


class device_index:  # noqa: N801  (PyTorch's name: a context manager)
    """torch.accelerator.device_index(idx): the current accelerator device is idx inside the block (None: no
    change), restored after it."""

    def __init__(self, device, /):
        self.idx, self.prev = device, None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device_index(self.prev)
        return False


def synchronize(device=None):
    _cuda.synchronize(device)
