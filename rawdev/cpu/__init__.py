"""rawdev.cpu: the parts of torch.cpu that programs touch — is_available, device_count, synchronize and the
deprecated torch.cpu.amp spellings."""
from . import amp

__all__ = ["amp", "is_available", "device_count", "synchronize", "current_device"]


def is_available():
    """Always True: the cpu is there.

    Returns:
        bool

    Example:
        >>> rawdev.cpu.is_available()
        True
    """
    return True


def device_count():
    """One cpu device.

    Returns:
        int

    Example:
        >>> rawdev.cpu.device_count()
        1
    """
    return 1


def synchronize(device=None):
    """Nothing to wait for: cpu ops finish before they return.

    Args:
        device: ignored.

    Returns:
        None

    Example:
        >>> rawdev.cpu.synchronize()
    """


def current_device():
    """The cpu device's name.

    Returns:
        "cpu"

    Example:
        >>> rawdev.cpu.current_device()
        'cpu'
    """
    return "cpu"
