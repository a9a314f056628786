"""The runtime: the only layer (with rawdev.sim) that calls the CUDA driver."""
from . import seam
from .device import Device, Event, Stream, device_count, get_device
from .seam import call, driver_name, use_driver
from .trace import trace

__all__ = ["seam", "Device", "Event", "Stream", "device_count", "get_device", "call", "driver_name", "use_driver",
           "trace", "is_available"]


def is_available():
    """True when a CUDA device (real, or the simulator when chosen) can be used. Never raises."""
    from ..errors import NoDeviceError, NoDriverError
    try:
        return seam.driver_name() in ("cuda", "sim") and device_count() > 0
    except (NoDriverError, NoDeviceError):
        return False


def reset_for_tests(name):
    """Forget the chosen driver, opened devices and loaded modules, then choose `name` (tests only).

    With the simulator, the simulated GPU goes back to its power-on state too. On the real driver each opened
    device's queued frees are issued and its pool and streams destroyed (one test after another would otherwise
    pile up a pool per test); the primary contexts survive (rawdev never releases them), and so do the modules
    loaded into them: not JITed again.
    """
    from . import device, kernels
    if seam._name == "cuda":   # the GPU keeps running: give back each device's pool and streams first
        device._close_devices()
    device._forget_devices()
    kernels._forget_modules(contexts_survive=name == "cuda" and seam._name == "cuda")
    seam._reset_for_tests()
    if name == "sim":
        from .. import sim
        sim.reset()
    seam.use_driver(name)
