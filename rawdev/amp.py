"""rawdev.amp (and rawdev.cuda.amp): autocast and GradScaler accepted so mixed-precision programs run.

rawdev computes in float32 under autocast (it has no float16 GEMM path yet): autocast is a context manager
and decorator that changes nothing, and GradScaler scales nothing (scale 1.0); each says so once. Programs
written for AMP therefore train in float32 with the same code."""
import functools
import warnings

__all__ = ["autocast", "GradScaler"]

_told: set = set()


def _once(what):
    if what not in _told:
        _told.add(what)
        warnings.warn(f"rawdev: {what} is accepted but rawdev computes in float32 (no mixed precision yet)",
                      UserWarning, stacklevel=3)


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): float32 in rawdev."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        self.device_type, self.dtype, self.enabled = device_type, dtype, enabled
        if enabled:
            _once("autocast")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class GradScaler:
    """torch.amp.GradScaler: scale(loss) returns loss, step(optimizer) steps it, update() does nothing."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._enabled = enabled
        if enabled:
            _once("GradScaler")

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        pass

    def get_scale(self):
        return 1.0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        return {"scale": 1.0, "enabled": self._enabled}

    def load_state_dict(self, state_dict):
        pass
