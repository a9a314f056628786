"""Grad mode: no_grad / enable_grad / set_grad_enabled / inference_mode, thread-local like PyTorch.

Each is a context manager and a decorator (no_grad, enable_grad and inference_mode also without the
parentheses: `@rawdev.no_grad`). rawdev has no separate inference tensors: inference_mode(True) is no_grad
plus the flag is_inference_mode_enabled() reports.
"""
import functools
import inspect
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled"]

_state = threading.local()


def is_grad_enabled():
    return getattr(_state, "enabled", True)


def is_inference_mode_enabled():
    return getattr(_state, "inference", False)


def _set(flag):
    _state.enabled = bool(flag)


class _DecoratorContextManager:
    """A context manager that also decorates a function (a fresh instance per call, as PyTorch's)."""

    _args = ()

    def clone(self):
        return self.__class__(*self._args)

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError("Please use the decorator on functions, not classes")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    try:
                        with self.clone():
                            response = gen.send(request)
                    except StopIteration as e:
                        return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: @no_grad."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):  # noqa: N801
    """Ops inside record no graph: results have requires_grad=False. Also a decorator."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set(False)

    def __exit__(self, *exc):
        _set(self.prev)
        return False


class enable_grad(_NoParamDecoratorContextManager):  # noqa: N801
    def __enter__(self):
        self.prev = is_grad_enabled()
        _set(True)

    def __exit__(self, *exc):
        _set(self.prev)
        return False


class set_grad_enabled(_DecoratorContextManager):  # noqa: N801
    """set_grad_enabled(mode): takes effect immediately (as a function) and restores on exit (as a context);
    as a decorator it changes nothing until the function runs."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        self._args = (mode,)
        _set(mode)

    def __call__(self, func):
        _set(self.prev)
        return super().__call__(func)

    def __enter__(self):
        _set(self.mode)

    def __exit__(self, *exc):
        _set(self.prev)
        return False


class inference_mode(_DecoratorContextManager):  # noqa: N801
    """inference_mode(mode=True): no_grad, and is_inference_mode_enabled() is True inside."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode=True):
        self._args = (mode,)
        self.mode = mode

    def __enter__(self):
        self.prev = is_grad_enabled()
        self.prev_inf = is_inference_mode_enabled()
        if self.mode:
            _set(False)
        _state.inference = bool(self.mode)

    def __exit__(self, *exc):
        _set(self.prev)
        _state.inference = self.prev_inf
        return False
