"""`torch.distributed.rpc.functions.async_execution`: a function that returns a Future instead of its result; the
worker running it answers the caller when the Future completes, without holding a thread meanwhile."""
from collections.abc import Callable
from typing import Any

__all__ = ["async_execution"]


def async_execution(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark `fn` (a function, or a staticmethod/classmethod's function) as returning a torch.futures.Future.

    Example:
        >>> @rpc.functions.async_execution
        ... def add_later(x):
        ...     fut = rawdev.futures.Future()
        ...     fut.set_result(x + 1)
        ...     return fut
    """
    target: Any = getattr(fn, "__func__", fn)
    target._rawdev_async_execution = True
    return fn
