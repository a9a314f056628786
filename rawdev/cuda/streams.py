"""torch.cuda's Stream, Event, stream(), current_stream() and default_stream(), and get_device_properties,
over rawdev's runtime streams and events.

Where rawdev's work runs: on the current stream of its device, per thread. That is the device's compute stream
(`default_stream()`) unless a `with torch.cuda.stream(s):` block made s current: then launches, copies, memsets
and allocations go to s, as in PyTorch. Cross-stream order is the program's business (`wait_stream`, events,
`synchronize`), and a tensor used on a stream other than the one it was allocated on should be recorded there
(`Tensor.record_stream(s)`) so the caching pool does not reuse its memory before s is done with it.
"""
from __future__ import annotations

import collections
import contextlib
from typing import Any

__all__ = ["Stream", "Event", "stream", "current_stream", "default_stream", "get_device_properties",
           "is_bf16_supported", "StreamContext"]


def _device(device=None):
    from .device_arg import _dev
    return _dev(device)


class Stream:
    """A CUDA stream (torch.cuda.Stream). Stream() makes a new non-blocking stream on the current device;
    current_stream() wraps the stream rawdev queues this thread's work on.

    Example:
        >>> s = torch.cuda.Stream()
        >>> s.wait_stream(torch.cuda.current_stream())
        >>> s.synchronize()
    """

    def __init__(self, device: Any = None, priority: int = 0, _runtime=None) -> None:
        dev = _device(device)
        if _runtime is None:
            from ..runtime.device import Stream as _RtStream
            _runtime = _RtStream(dev, "user")
        self._rt = _runtime
        self.device = _torch_device(dev.index)
        self.priority = priority

    @property
    def cuda_stream(self) -> int:
        """The CUstream handle as an int."""
        return self._rt._int

    def query(self) -> bool:
        """True when all work queued on the stream so far is done."""
        return self._rt.query()

    def synchronize(self) -> None:
        """Wait until all work queued on the stream so far is done."""
        self._rt.synchronize()

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream after now waits for `event` (no host sync)."""
        self._rt.wait_event(event._event())

    def wait_stream(self, stream: Stream) -> None:
        """Work queued on this stream after now waits for everything queued on `stream` so far."""
        self._rt.wait_stream(stream._rt)

    def record_event(self, event: Event | None = None) -> Event:
        """Record `event` (a new one if None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other._rt is self._rt

    def __hash__(self) -> int:
        return hash(self._rt._int)

    def __repr__(self) -> str:
        return f"<rawdev.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


def _torch_device(index):
    from ..device import device
    return device("cuda", index)


class Event:
    """A CUDA event (torch.cuda.Event): record it on a stream, wait for it, or time the work between two.

    Args:
        enable_timing: whether elapsed_time may be asked of it (events without timing are cheaper).
        blocking, interprocess: accepted for PyTorch's signature (rawdev's synchronize waits either way;
            interprocess events are not supported).

    Example:
        >>> start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        >>> start.record(); y = x @ x; end.record(); torch.cuda.synchronize()
        >>> start.elapsed_time(end)     # milliseconds
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        if interprocess:
            raise NotImplementedError("rawdev does not share CUDA events between processes")
        self.enable_timing, self.blocking = enable_timing, blocking
        self._rt: Any = None

    def _event(self):
        if self._rt is None:
            from ..runtime.device import Event as _RtEvent
            self._rt = _RtEvent(_device(), timing=self.enable_timing)
        return self._rt

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on `stream` (default: the current stream, where rawdev's work runs)."""
        stream = current_stream() if stream is None else stream
        if self._rt is not None and self._rt.device is not stream._rt.device:
            raise RuntimeError("Event device does not match recording stream's device")
        if self._rt is None:
            from ..runtime.device import Event as _RtEvent
            self._rt = _RtEvent(stream._rt.device, timing=self.enable_timing)
        self._rt.record(stream._rt)

    def wait(self, stream: Stream | None = None) -> None:
        """Make `stream` (default: the current one) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """True when the work captured by the event is done (an unrecorded event counts as done)."""
        return True if self._rt is None else self._rt.query()

    def synchronize(self) -> None:
        """Wait until the work captured by the event is done."""
        if self._rt is not None:
            self._rt.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event to end_event (both recorded with enable_timing=True, and completed)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._rt is None or end_event._rt is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return float(self._rt.elapsed_time(end_event._rt))

    def __repr__(self) -> str:
        return f"<rawdev.cuda.Event {'recorded' if self._rt is not None else 'uninitialized'}>"


def current_stream(device: Any = None) -> Stream:
    """The stream this thread queues the device's work on: the one a `with rawdev.cuda.stream(s):` block made
    current, else the device's default stream."""
    dev = _device(device)
    return Stream(dev.index, _runtime=dev.compute_stream)


def default_stream(device: Any = None) -> Stream:
    """The device's default stream for rawdev's work (its own compute stream), whatever stream is current."""
    dev = _device(device)
    return Stream(dev.index, _runtime=dev.default_stream)


class StreamContext(contextlib.AbstractContextManager):
    """`with torch.cuda.stream(s):` — inside the block, this thread's launches, copies, memsets and allocations on
    s's device go to s and current_stream() returns it; on exit the stream current before is back. None: no-op."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._prev: list = []

    def __enter__(self) -> StreamContext:
        if self.stream is not None:
            from ..runtime.device import set_current_stream
            rt = self.stream._rt
            self._prev.append((rt.device, set_current_stream(rt.device, rt)))
        return self

    def __exit__(self, *exc) -> None:
        if self.stream is not None and self._prev:
            from ..runtime.device import set_current_stream
            dev, prev = self._prev.pop()
            set_current_stream(dev, prev)
        return None


def stream(stream: Stream | None) -> StreamContext:  # noqa: F811 (PyTorch's name for the context manager)
    """Context manager for `with torch.cuda.stream(s):`."""
    return StreamContext(stream)


_CudaDeviceProperties = collections.namedtuple("_CudaDeviceProperties", ["name", "major", "minor", "total_memory",
                                                                         "multi_processor_count", "is_integrated"])


def get_device_properties(device: Any = None):
    """The device's name, compute capability (major, minor), total_memory in bytes and multi_processor_count.

    Example:
        >>> p = torch.cuda.get_device_properties(0)
        >>> p.total_memory > 0
        True
    """
    dev = _device(device)
    major, minor = dev.capability
    return _CudaDeviceProperties(dev.name, major, minor, dev.total_memory, dev.multiprocessors, False)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 tensors work on the device: always on rawdev (they compute through float32 kernels)."""
    from ..runtime import is_available
    return bool(is_available())
