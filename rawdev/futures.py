"""`torch.futures`: a result that arrives later, from another thread (an asynchronous checkpoint save, a callback
chain). Thread-safe; waiting blocks the caller until the result or the error is set.

Example:
    >>> import threading
    >>> fut = Future()
    >>> threading.Thread(target=fut.set_result, args=(41,)).start()
    >>> fut.then(lambda f: f.value() + 1).wait()
    42
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")

_UNSET = object()


class Future(Generic[T]):
    """A value (or an error) that another thread sets once.

    Args:
        devices: accepted for PyTorch's signature (the devices whose streams the value may use); a value's
            tensors are complete when it is set, since rawdev sets results after synchronizing.

    Example:
        >>> fut = Future()
        >>> fut.set_result(3)
        >>> fut.done(), fut.wait()
        (True, 3)
    """

    def __init__(self, *, devices: Iterable[Any] | None = None) -> None:
        self._cond = threading.Condition()
        self._value: Any = _UNSET
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], None]] = []

    def done(self) -> bool:
        """True once a result or an error is set."""
        with self._cond:
            return self._value is not _UNSET or self._error is not None

    def wait(self) -> T:
        """Block until the future completes; return its value, or raise the error it was completed with."""
        with self._cond:
            while self._value is _UNSET and self._error is None:
                self._cond.wait()
        return self.value()

    def value(self) -> T:
        """The value of a completed future (raises its error); a future not yet done is a RuntimeError."""
        with self._cond:
            if self._error is not None:
                raise self._error
            if self._value is _UNSET:
                raise RuntimeError("Future.value() called on a Future that is not completed yet; call wait()")
            return self._value

    def _complete(self, value: Any, error: BaseException | None) -> None:
        with self._cond:
            if self._value is not _UNSET or self._error is not None:
                raise RuntimeError("Future can only be marked completed once (its result or error is already set)")
            if error is None:
                self._value = value
            else:
                self._error = error
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:   # outside the lock: a callback may wait on other futures
            cb(self)

    def set_result(self, result: T) -> None:
        """Complete the future with `result`, waking its waiters and running its callbacks."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an error: wait() and value() raise it."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run callback(self) when the future completes (at once, in this thread, if it already has)."""
        with self._cond:
            if self._value is _UNSET and self._error is None:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new future completed with callback(self) once this one completes (or with the error the callback
        raises).

        Args:
            callback: takes this (completed) future; what it returns is the new future's value.

        Returns:
            The chained Future.
        """
        nxt: Future[S] = Future()

        def run(f: Future[T]) -> None:
            try:
                out = callback(f)
            except BaseException as e:   # the callback's error belongs to the chained future, as PyTorch does
                nxt.set_exception(e)
            else:
                nxt.set_result(out)
        self.add_done_callback(run)
        return nxt

    def __repr__(self) -> str:
        state = "done" if self.done() else "pending"
        return f"<rawdev.futures.Future {state}>"


def collect_all(futures: list[Future[Any]]) -> Future[list[Future[Any]]]:
    """A future completed, with the list of `futures` itself, once every one of them is complete.

    Example:
        >>> a, b = Future(), Future()
        >>> both = collect_all([a, b]); a.set_result(1); b.set_result(2)
        >>> [f.value() for f in both.wait()]
        [1, 2]
    """
    futures = list(futures)
    out: Future[list[Future[Any]]] = Future()
    remaining = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])
        return out

    def one_done(_f: Future[Any]) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.set_result(futures)
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures: list[Future[Any]]) -> list[Any]:
    """Wait for every future and return their values in order; the first error met is raised.

    Example:
        >>> f = Future(); f.set_result("x")
        >>> wait_all([f])
        ['x']
    """
    return [f.wait() for f in collect_all(futures).wait()]
