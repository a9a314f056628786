"""rawdev: what `model.cuda()` really does, on the CUDA driver API alone.

Importing rawdev touches no driver: the driver is chosen on first use (RAWDEV_DRIVER=cuda|sim|auto,
or rawdev.use_driver(name) before that).
"""
import sys as _sys

from . import cuda, errors
from .errors import CudaError, NoDeviceError, NoDriverError, OutOfMemoryError
from .runtime.seam import use_driver
from .runtime.trace import trace

__version__ = "0.1.0"


def _excepthook(tp, value, tb, _previous=_sys.excepthook):
    # A missing driver or GPU is a setup problem, not a bug: say it in one line, no traceback.
    if isinstance(value, (NoDriverError, NoDeviceError)):
        print(f"{tp.__module__}.{tp.__name__}: {value}", file=_sys.stderr)
    else:
        _previous(tp, value, tb)


_sys.excepthook = _excepthook
