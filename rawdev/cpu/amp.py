"""rawdev.cpu.amp: torch.cpu.amp's deprecated spelling of rawdev.amp.autocast("cpu"), warning as PyTorch's."""
import warnings

from .. import dtypes as _dt
from ..amp import autocast_mode as _ac
from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(_ac.autocast):
    """torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True): deprecated for
    rawdev.autocast("cpu", ...), which it is.

    Args:
        enabled: bool.
        dtype: bfloat16 or float16.
        cache_enabled: bool.

    Example:
        >>> # with rawdev.cpu.amp.autocast(): ...   (FutureWarning: use rawdev.amp.autocast('cpu'))
    """

    def __init__(self, enabled=True, dtype=_dt.bfloat16, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. "
                      "Please use `torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """torch.cpu.amp.GradScaler: deprecated for rawdev.amp.GradScaler("cpu", ...), which it is.

    Args:
        init_scale, growth_factor, backoff_factor, growth_interval, enabled: as rawdev.amp.GradScaler.

    Example:
        >>> # scaler = rawdev.cpu.amp.GradScaler()   (FutureWarning: use rawdev.amp.GradScaler('cpu'))
    """

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. "
                      "Please use `torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
