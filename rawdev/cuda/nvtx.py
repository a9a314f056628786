"""`rawdev.cuda.nvtx`: PyTorch's NVTX names. rawdev loads no NVTX library (the driver API has none), so a range
becomes a mark on rawdev's memory timeline instead (rawdev.cuda.memory.mark: recorded while memory history is
on, shown by `rawdev mem show --html` and kept in snapshots as PyTorch's external annotations)."""
import contextlib
import threading

from . import memory as _memory

__all__ = ["range_push", "range_pop", "range", "mark"]

_local = threading.local()


def _stack():
    if not hasattr(_local, "ranges"):
        _local.ranges = []
    return _local.ranges


def range_push(msg: str) -> int:
    """Open a nested range named msg; returns its depth (0 for the outermost), as NVTX does."""
    r = _memory.mark(msg)
    _stack().append(r)
    return len(_stack()) - 1


def range_pop() -> int:
    """Close the innermost open range; returns the depth it had, or -1 when none was open."""
    ranges = _stack()
    if not ranges:
        return -1
    ranges.pop().__exit__(None, None, None)
    return len(ranges)


@contextlib.contextmanager
def range(msg: str, *args, **kwargs):  # noqa: A001  (PyTorch's name)
    """`with nvtx.range("step {}", i):` — a range around the block (msg formatted with args, as PyTorch)."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()


def mark(msg: str) -> None:
    """An instant mark on the timeline."""
    _memory.mark(msg)
