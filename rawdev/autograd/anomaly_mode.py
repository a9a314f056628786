"""detect_anomaly / set_detect_anomaly (torch.autograd.anomaly_mode): accepted and remembered.

rawdev does not record forward tracebacks; with anomaly detection on, a backward that produces NaN raises
(PyTorch's "Function 'XBackward0' returned nan values in its 0th output.")."""
import threading
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

_state = threading.local()


def is_anomaly_enabled():
    return getattr(_state, "enabled", False)


def is_anomaly_check_nan_enabled():
    return getattr(_state, "check_nan", True)


def _set(mode, check_nan):
    _state.enabled, _state.check_nan = bool(mode), bool(check_nan)


class detect_anomaly:  # noqa: N801
    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return func(*args, **kwargs)
        return wrapper


class set_detect_anomaly:  # noqa: N801
    """set_detect_anomaly(mode, check_nan=True): takes effect at once; a context manager restores it."""

    def __init__(self, mode, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        _set(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False
