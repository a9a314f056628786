"""Grad mode: no_grad / enable_grad / set_grad_enabled / inference_mode, thread-local like PyTorch."""
import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode"]

_state = threading.local()


def is_grad_enabled():
    return getattr(_state, "enabled", True)


def _set(flag):
    _state.enabled = bool(flag)


class _DecoratorContextManager:
    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return func(*args, **kwargs)
        return wrapper

    _args = ()


class no_grad(_DecoratorContextManager):
    """Ops inside record no graph: results have requires_grad=False. Also a decorator."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set(False)

    def __exit__(self, *exc):
        _set(self.prev)
        return False


class enable_grad(_DecoratorContextManager):
    def __enter__(self):
        self.prev = is_grad_enabled()
        _set(True)

    def __exit__(self, *exc):
        _set(self.prev)
        return False


class set_grad_enabled(_DecoratorContextManager):
    """set_grad_enabled(mode): takes effect immediately (as a function) and restores on exit (as a context)."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self._args = (mode,)
        _set(mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set(self.prev)
        return False


class inference_mode(_DecoratorContextManager):
    """rawdev has no separate inference tensors: inference_mode(True) is no_grad."""

    def __init__(self, mode=True):
        self._args = (mode,)
        self.mode = mode

    def __enter__(self):
        self.prev = is_grad_enabled()
        if self.mode:
            _set(False)

    def __exit__(self, *exc):
        _set(self.prev)
        return False
