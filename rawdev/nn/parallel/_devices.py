"""Device indices as torch.nn.parallel takes them (PyTorch's torch._utils._get_device_index): an int, a
"cuda:i" string or a device give the CUDA index; the cpu is -1 where allowed; "cuda" alone is the calling
thread's current device."""
from ...device import as_device, device


def device_index(d, allow_cpu=False):
    """The CUDA index of `d` (an int, a string, a device), or -1 for the cpu when allow_cpu.

    Args:
        d: the device.
        allow_cpu: accept the cpu (as -1) instead of raising.

    Returns:
        int
    """
    if isinstance(d, int):
        return d
    dev = as_device(d)
    if dev.type == "cpu":
        if allow_cpu:
            return -1
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return dev.index


def as_torch_device(index):
    """-1 (or "cpu") -> the cpu, i -> cuda:i.

    Args:
        index: a device index from device_index.

    Returns:
        A rawdev.device.
    """
    if index == -1 or index == "cpu":
        return device("cpu")
    return device("cuda", index)
