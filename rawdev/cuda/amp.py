"""rawdev.cuda.amp: torch.cuda.amp's deprecated spellings of rawdev.amp (autocast("cuda"), GradScaler("cuda"),
custom_fwd/custom_bwd), each warning as PyTorch's does."""
import functools
import warnings

from .. import dtypes as _dt
from ..amp import autocast_mode as _ac
from ..amp import grad_scaler as _gs

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_ac.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True): deprecated for
    rawdev.autocast("cuda", ...), which it is.

    Args:
        enabled: bool.
        dtype: float16 or bfloat16.
        cache_enabled: bool.

    Example:
        >>> # with rawdev.cuda.amp.autocast(): ...   (FutureWarning: use rawdev.amp.autocast('cuda'))
    """

    def __init__(self, enabled=True, dtype=_dt.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. "
                      "Please use `torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_gs.GradScaler):
    """torch.cuda.amp.GradScaler(init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
    enabled=True): deprecated for rawdev.amp.GradScaler("cuda", ...), which it is.

    Args:
        init_scale, growth_factor, backoff_factor, growth_interval, enabled: as rawdev.amp.GradScaler.

    Example:
        >>> # scaler = rawdev.cuda.amp.GradScaler()   (FutureWarning: use rawdev.amp.GradScaler('cuda'))
    """

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. "
                      "Please use `torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: deprecated for rawdev.amp.custom_fwd(device_type="cuda").

    Args:
        fwd: the forward, or None.
        cast_inputs: a dtype, or None.

    Returns:
        The decorated forward.

    Example:
        >>> # @rawdev.cuda.amp.custom_fwd
    """
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. "
                  "Please use `torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    if fwd is None:
        return functools.partial(_ac.custom_fwd, device_type="cuda", cast_inputs=cast_inputs)
    return _ac.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """torch.cuda.amp.custom_bwd: deprecated for rawdev.amp.custom_bwd(device_type="cuda").

    Args:
        bwd: the backward.

    Returns:
        The decorated backward.

    Example:
        >>> # @rawdev.cuda.amp.custom_bwd
    """
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. "
                  "Please use `torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    if bwd is None:
        return functools.partial(_ac.custom_bwd, device_type="cuda")
    return _ac.custom_bwd(bwd, device_type="cuda")
