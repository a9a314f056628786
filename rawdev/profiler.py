"""`rawdev.profiler`: PyTorch's torch.profiler names over what rawdev can see — every driver call it makes.

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("model_inference"):
            model(inputs)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))

Rows are the record_function ranges (host time), and per kernel and per driver call (cuLaunchKernel rows are
named after the kernel, copies after their call: cuMemcpyHtoDAsync, ...): host time spent in the call and,
with ProfilerActivity.CUDA, device time measured by a pair of CUDA events recorded around each launch and
copy on its stream (so the timed stream runs with those events between its operations). PyTorch's profiler
also lists its aten:: operators; rawdev's ops are Python functions and are not listed — the kernels they
launch are. export_chrome_trace writes the Chrome/Perfetto trace JSON; schedule/step/on_trace_ready and
tensorboard_trace_handler work as PyTorch's. On the simulated GPU the device times are the interpreter's.
"""
import enum
import json
import os
import socket
import threading
import time

from .runtime import seam
from .runtime.device import Event

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler"]

_TIMED = ("cuLaunchKernel", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuMemsetD8Async",
          "cuMemsetD32Async", "cuMemcpyAsync")
_active: list = []                   # running profilers (record_function reports to them)
_local = threading.local()


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """PyTorch's schedule: the action for step n — skip_first steps, then cycles of wait, warmup and active
    steps (the last active step of a cycle saves: on_trace_ready is called), repeat cycles (0: forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


class _Event:
    __slots__ = ("name", "kind", "start_us", "cpu_us", "device_us", "pair", "thread")

    def __init__(self, name, kind, start_us, cpu_us, pair=None):
        self.name, self.kind, self.start_us, self.cpu_us = name, kind, start_us, cpu_us
        self.device_us, self.pair, self.thread = 0.0, pair, threading.get_ident()


class FunctionEventAvg:
    """One row of key_averages(): a name's call count and times (microseconds)."""

    def __init__(self, key):
        self.key, self.count = key, 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.kind = None

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def cuda_time(self):
        return self.cuda_time_total / self.count if self.count else 0.0

    device_time_total = property(lambda self: self.cuda_time_total)
    self_device_time_total = property(lambda self: self.self_cuda_time_total)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.1f}us "
                f"cuda_time_total={self.cuda_time_total:.1f}us>")


_SORT_KEYS = {"cpu_time_total": "cpu_time_total", "self_cpu_time_total": "self_cpu_time_total",
              "cuda_time_total": "cuda_time_total", "self_cuda_time_total": "self_cuda_time_total",
              "device_time_total": "cuda_time_total", "self_device_time_total": "self_cuda_time_total",
              "cpu_time": "cpu_time", "cuda_time": "cuda_time", "count": "count"}


def _fmt_us(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """key_averages()'s result: FunctionEventAvg rows; table() prints them as PyTorch's profiler does."""

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, **kwargs):
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"'FunctionEventAvg' object has no attribute '{sort_by}'")
            rows.sort(key=lambda r: getattr(r, _SORT_KEYS[sort_by]), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        self_cpu = sum(r.self_cpu_time_total for r in self) or 1.0
        cuda = sum(r.self_cuda_time_total for r in self) or 1.0
        width = max([len("Name")] + [min(len(r.key), max_name_column_width) for r in rows]) + 2
        cols = ["Self CPU %", "Self CPU", "CPU total", "CPU time avg", "Self CUDA", "Self CUDA %", "CUDA total",
                "CUDA time avg", "# of Calls"]
        head = "Name".ljust(width) + "".join(c.rjust(15) for c in cols)
        line = "-" * len(head)
        out = [line, head, line]
        for r in rows:
            name = r.key if len(r.key) <= max_name_column_width else r.key[:max_name_column_width - 3] + "..."
            vals = [f"{100 * r.self_cpu_time_total / self_cpu:.2f}%", _fmt_us(r.self_cpu_time_total),
                    _fmt_us(r.cpu_time_total), _fmt_us(r.cpu_time), _fmt_us(r.self_cuda_time_total),
                    f"{100 * r.self_cuda_time_total / cuda:.2f}%", _fmt_us(r.cuda_time_total), _fmt_us(r.cuda_time),
                    str(r.count)]
            out.append(name.ljust(width) + "".join(v.rjust(15) for v in vals))
        out.append(line)
        out.append(f"Self CPU time total: {_fmt_us(sum(r.self_cpu_time_total for r in self))}")
        out.append(f"Self CUDA time total: {_fmt_us(sum(r.self_cuda_time_total for r in self))}")
        return "\n".join(out) + "\n"

    def __str__(self):
        return self.table()


class profile:
    """Record what rawdev does on the host and the GPU (see the module docstring).

    Args:
        activities: ProfilerActivity.CPU and/or .CUDA (default both when a GPU is in use, else CPU).
        schedule: a callable step -> ProfilerAction (rawdev.profiler.schedule); default: record throughout.
        on_trace_ready: called with the profiler when a scheduled cycle ends (and on exit when it was recording).
        record_shapes, profile_memory, with_stack, with_flops, with_modules: accepted; rawdev records none of them.

    Example:
        >>> with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        ...     y = model(x)
        >>> print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None):
        if activities is None:
            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if seam.driver_name() in ("cuda", "sim")
                                                   else [])
        if use_cuda:
            activities = list(activities) + [ProfilerActivity.CUDA]
        self.activities = set(activities)
        self.schedule, self.on_trace_ready = schedule, on_trace_ready
        self.step_num = 0
        self.events: list = []
        self._open: list = []           # (event, start Event) of launches whose device time is not read yet
        self._recording = False
        self._t0 = time.perf_counter()

    # --------------------------------------------------------------------- lifecycle
    def _action(self):
        return self.schedule(self.step_num) if self.schedule is not None else ProfilerAction.RECORD

    def start(self):
        self._recording = self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        seam._tracers.append(self)
        _active.append(self)

    def stop(self):
        if self in seam._tracers:
            seam._tracers.remove(self)
        if self in _active:
            _active.remove(self)
        self._collect()
        if self._recording and self.on_trace_ready is not None:
            self.on_trace_ready(self)
        self._recording = False

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self):
        """Mark the end of a training step (advances the schedule)."""
        before = self._action()
        self.step_num += 1
        after = self._action()
        if before == ProfilerAction.RECORD_AND_SAVE:
            self._collect()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE) and \
                before not in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self.events = []
        self._recording = after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    # --------------------------------------------------------------------- recording (seam tracer protocol)
    def _now_us(self):
        return (time.perf_counter() - self._t0) * 1e6

    def _before(self, fn, stream):
        """Called by rawdev.runtime.seam before a driver call: a start event goes on the stream of a timed call."""
        if not self._recording or getattr(_local, "busy", False) or stream is None:
            return
        if ProfilerActivity.CUDA in self.activities and fn in _TIMED:
            _local.busy = True
            try:
                s = _stream_of(stream)
                if s is not None:
                    _local.pending = (Event(s.device, timing=True).record(s), s)
            finally:
                _local.busy = False

    def _record(self, fn, nbytes, stream, owner, seconds, result):
        if not self._recording or getattr(_local, "busy", False):
            return
        name = owner if fn == "cuLaunchKernel" and owner else fn
        kind = "kernel" if fn == "cuLaunchKernel" else "driver"
        ev = _Event(name, kind, self._now_us() - seconds * 1e6, seconds * 1e6)
        pending = getattr(_local, "pending", None)
        if pending is not None and stream is not None and int(pending[1].handle) == int(stream):
            _local.pending = None
            start, s = pending
            _local.busy = True
            try:
                end = Event(s.device, timing=True).record(s)
            finally:
                _local.busy = False
            self._open.append((ev, start, end))
        self.events.append(ev)

    def _range(self, name, start_us, cpu_us):
        if self._recording:
            self.events.append(_Event(name, "user", start_us, cpu_us))

    def _collect(self):
        """Read the device times of the timed calls (waits for their end events)."""
        _local.busy = True
        try:
            for ev, start, end in self._open:
                end.synchronize()
                ev.device_us = start.elapsed_time(end) * 1e3
        finally:
            _local.busy = False
            self._open = []

    # --------------------------------------------------------------------- results
    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        self._collect()
        rows: dict = {}
        for ev in self.events:
            r = rows.get(ev.name)
            if r is None:
                r = rows[ev.name] = FunctionEventAvg(ev.name)
                r.kind = ev.kind
            r.count += 1
            r.cpu_time_total += ev.cpu_us
            r.cuda_time_total += ev.device_us
            r.self_cuda_time_total += ev.device_us
        # a user range's self time excludes the driver calls inside it
        for ev in self.events:
            if ev.kind == "user":
                inner = sum(e.cpu_us for e in self.events if e.kind != "user" and e.thread == ev.thread
                            and ev.start_us <= e.start_us <= ev.start_us + ev.cpu_us)
                rows[ev.name].self_cpu_time_total += max(ev.cpu_us - inner, 0.0)
            else:
                rows[ev.name].self_cpu_time_total += ev.cpu_us
        for ev in self.events:       # a range's device time: the device time of the calls it contains
            if ev.kind == "user":
                rows[ev.name].cuda_time_total += sum(e.device_us for e in self.events if e.kind != "user"
                                                     and ev.start_us <= e.start_us <= ev.start_us + ev.cpu_us)
        return EventList(rows.values())

    def events_list(self):
        self._collect()
        return list(self.events)

    def export_chrome_trace(self, path):
        """The recorded events as a Chrome trace (chrome://tracing, Perfetto): host spans on their threads, and
        device spans of the timed calls on a "cuda" track placed at their host start."""
        self._collect()
        trace = []
        for ev in self.events:
            trace.append({"name": ev.name, "ph": "X", "cat": ev.kind, "ts": ev.start_us, "dur": ev.cpu_us,
                          "pid": os.getpid(), "tid": ev.thread})
            if ev.device_us:
                trace.append({"name": ev.name, "ph": "X", "cat": "kernel" if ev.kind == "kernel" else "gpu_memcpy",
                              "ts": ev.start_us, "dur": ev.device_us, "pid": "cuda", "tid": "stream"})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


class record_function:
    """A named range in the profile: `with record_function("forward"):` (also a decorator)."""

    def __init__(self, name, args=None):
        self.name = name

    def __enter__(self):
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        end = time.perf_counter()
        for p in list(_active):
            p._range(self.name, (self._start - p._t0) * 1e6, (end - self._start) * 1e6)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with record_function(self.name):
                return fn(*a, **kw)
        return wrapper


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready callback writing each trace as <worker>.<time>.pt.trace.json into dir_name, where
    TensorBoard's profiler plugin looks for them."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{worker}.{time.time_ns() // 1000000}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip
            with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                g.write(f.read())
            os.remove(path)
    return handler


def _stream_of(handle):
    """rawdev's Stream object (a device's compute or copy stream) with this driver handle, or None."""
    from .runtime import device as _d
    for dev in _d._devices.values():
        for s in (dev.compute_stream, dev.copy_stream):
            if s is not None and int(s.handle) == int(handle):
                return s
    return None


def _record_function_enter(name, args=None):
    """torch.ops.profiler._record_function_enter: open a record_function range and return its handle."""
    rec = record_function(name, args)
    rec.__enter__()
    return rec


def _record_function_exit(handle):
    """torch.ops.profiler._record_function_exit: close the range _record_function_enter opened."""
    handle.__exit__(None, None, None)


from .ops import torch_ops as _torch_ops  # noqa: E402

_torch_ops.provide("profiler", {"_record_function_enter": _record_function_enter,
                                "_record_function_enter_new": _record_function_enter,
                                "_record_function_exit": _record_function_exit})
