"""Devices (primary context, default streams, memory pool), streams and events."""
from __future__ import annotations

import sys
import threading

from cuda.bindings.driver import (
    CUdevice_attribute,
    CUevent_flags,
    CUmemAllocationType,
    CUmemLocationType,
    CUmemPool_attribute,
    CUmemPoolProps,
    CUstream,
    CUstream_flags,
    cuuint64_t,
)

from ..errors import NoDeviceError
from . import memory, seam
from .seam import call

_tls = threading.local()      # the context current on this thread
_devices: dict = {}
_devices_lock = threading.Lock()


class Stream:
    """A CUDA stream owned by rawdev (non-blocking: never serialized behind the legacy default stream)."""

    def __init__(self, device: Device, label: str) -> None:
        device.activate()
        self.device, self.label = device, label
        self.handle = call("cuStreamCreate", CUstream_flags.CU_STREAM_NON_BLOCKING.value,
                           ctx=f"creating the {label} stream on {device}")
        self._int = int(self.handle)
        seam.stream_names[self._int] = f"{label}"

    def synchronize(self):
        self.device.activate()
        call("cuStreamSynchronize", self.handle, ctx=lambda: f"waiting for the {self.label} stream of {self.device}",
             stream=self.handle)
        self.device.allocator.flush()

    def query(self):
        """True when all work queued so far is done."""
        from cuda.bindings.driver import CUresult
        self.device.activate()
        err, = seam.driver().cuStreamQuery(self.handle)
        if err == CUresult.CUDA_ERROR_NOT_READY:
            return False
        if err:
            raise seam._error(seam.driver(), "cuStreamQuery", err, f"querying the {self.label} stream")
        return True

    def record_event(self, timing: bool = False) -> Event:
        ev = Event(self.device, timing=timing)
        ev.record(self)
        return ev

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream after now waits for `event` (no host sync)."""
        self.device.activate()
        call("cuStreamWaitEvent", self.handle, event.handle, 0,
             ctx=lambda: f"making the {self.label} stream wait for an event", stream=self.handle)

    def wait_stream(self, other: Stream) -> None:
        self.wait_event(other.record_event())

    def __repr__(self):
        return f"<Stream {self.label} of {self.device}>"


def set_current_stream(device, stream):
    """Make `stream` the one this thread queues the device's launches, copies, memsets and allocations on.

    Args:
        device: the runtime Device.
        stream: a runtime Stream of `device`, or None for the device's own compute stream.

    Returns:
        The stream set before (None: the device's own), to restore with another call.

    Example:
        >>> prev = set_current_stream(dev, side)   # doctest: +SKIP
        >>> set_current_stream(dev, prev)          # doctest: +SKIP
    """
    cur = getattr(_tls, "streams", None)
    if cur is None:
        cur = _tls.streams = {}
    prev = cur.get(device)
    if stream is None or stream is device.default_stream:
        cur.pop(device, None)
    else:
        if stream.device is not device:
            raise ValueError(f"{stream!r} is not a stream of {device}")
        cur[device] = stream
    return prev


def wait_foreign_stream(device, handle, event):
    """Make a stream rawdev does not own (another library's, by its int handle; 0 = the legacy default
    stream) wait for `event`: how a DLPack export orders the consumer after rawdev's work."""
    device.activate()
    call("cuStreamWaitEvent", CUstream(int(handle)), event.handle, 0,
         ctx=f"ordering another library's stream 0x{int(handle):x} after rawdev's work on {device}")


class Event:
    def __init__(self, device: Device, timing: bool = False) -> None:
        device.activate()
        self.device = device
        flags = CUevent_flags.CU_EVENT_DEFAULT if timing else CUevent_flags.CU_EVENT_DISABLE_TIMING
        self.handle = call("cuEventCreate", flags.value, ctx="creating an event")

    def record(self, stream: Stream) -> Event:
        stream.device.activate()
        call("cuEventRecord", self.handle, stream.handle,
             ctx=lambda: f"recording an event on the {stream.label} stream",
             stream=stream.handle)
        return self

    def synchronize(self):
        self.device.activate()
        call("cuEventSynchronize", self.handle, ctx="waiting for an event")
        self.device.allocator.flush()

    def query(self):
        from cuda.bindings.driver import CUresult
        self.device.activate()
        err, = seam.driver().cuEventQuery(self.handle)
        if err == CUresult.CUDA_ERROR_NOT_READY:
            return False
        if err:
            raise seam._error(seam.driver(), "cuEventQuery", err, "querying an event")
        return True

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and `end` (both recorded with timing=True)."""
        self.device.activate()
        return call("cuEventElapsedTime", self.handle, end.handle, ctx="reading the time between two events")

    def __del__(self):
        # Destroying an event is safe even while it is pending; the driver defers the release.
        try:
            if seam._drv is not None:
                seam._drv.cuEventDestroy(self.handle)
        except Exception:
            pass


def ensure_context():
    """Make sure the calling thread has a current context (cuda:0's primary one when it has none yet): for the
    calls that need one but name no device (pinned host memory)."""
    if getattr(_tls, "ctx", None) is None:
        get_device(0).activate()


class Device:
    """One GPU: its primary context, a compute and a copy stream, and rawdev's memory pool on it."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.pool = self.compute_stream = self.copy_stream = None
        self.handle = call("cuDeviceGet", index, ctx=f"opening cuda:{index}")
        self.context = call("cuDevicePrimaryCtxRetain", self.handle,
                            ctx=f"retaining the primary context of cuda:{index}")
        try:
            self._open()
        except BaseException:
            self._undo_open()
            raise

    def _undo_open(self):
        """A failed open gives back what it took (streams, pool, the primary context's retain), so that
        opening again starts from nothing. Best effort: the driver may be in no state to answer."""
        from ..errors import CudaError
        for s in (self.copy_stream, self.compute_stream):
            if s is not None:
                try:
                    call("cuStreamDestroy", s.handle, ctx=f"closing the {s.label} stream after a failed open")
                except CudaError:
                    pass
                seam.stream_names.pop(s._int, None)
        if self.pool is not None:
            try:
                call("cuMemPoolDestroy", self.pool, ctx=f"destroying the pool of cuda:{self.index} after a failed open")
            except CudaError:
                pass
        try:
            call("cuDevicePrimaryCtxRelease", self.handle, ctx=f"releasing the primary context of cuda:{self.index}")
        except CudaError:
            pass
        if getattr(_tls, "ctx", None) is self:
            _tls.ctx = None
        self.pool = self.compute_stream = self.copy_stream = None

    def _open(self):
        index = self.index
        self.activate()
        what = f"opening cuda:{index}"
        self.name = call("cuDeviceGetName", 256, self.handle,
                         ctx=f"{what}: reading the device's name").split(b"\0", 1)[0].decode()
        A = CUdevice_attribute
        cap = f"{what}: reading its compute capability"
        self.capability = (call("cuDeviceGetAttribute", A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.handle,
                                ctx=cap),
                           call("cuDeviceGetAttribute", A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.handle,
                                ctx=cap))
        self.multiprocessors = call("cuDeviceGetAttribute", A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.handle,
                                    ctx=f"{what}: reading its multiprocessor count")
        self.total_memory = call("cuDeviceTotalMem", self.handle, ctx=f"{what}: reading its total memory")
        self.pool = self._create_pool()
        self.compute_stream = Stream(self, f"cuda:{index} compute")
        self.copy_stream = Stream(self, f"cuda:{index} copy")
        self.allocator = memory.Allocator(self)

    def _create_pool(self):
        props = CUmemPoolProps()
        props.allocType = CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        props.location.type = CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        props.location.id = self.index
        pool = call("cuMemPoolCreate", props, ctx=f"creating rawdev's memory pool on cuda:{self.index}")
        self.pool = pool   # from here on a failed open destroys it
        # Keep freed memory reserved (as PyTorch's caching allocator does); empty_cache() trims it.
        call("cuMemPoolSetAttribute", pool, CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
             cuuint64_t(2**64 - 1), ctx="setting the pool's release threshold")
        return pool

    @property
    def compute_stream(self):
        """The stream this thread queues the device's work on: the one a `rawdev.cuda.stream(s)` block made current
        (set_current_stream), else the device's own compute stream (default_stream)."""
        cur = getattr(_tls, "streams", None)
        if cur:
            s = cur.get(self)
            if s is not None:
                return s
        return self._compute

    @compute_stream.setter
    def compute_stream(self, stream):
        self._compute = stream

    @property
    def default_stream(self):
        """The device's own compute stream, whatever stream is current."""
        return self._compute

    def activate(self) -> None:
        """Make this device's primary context current on the calling thread (cheap when it already is)."""
        if getattr(_tls, "ctx", None) is not self:
            call("cuCtxSetCurrent", self.context, ctx=f"making cuda:{self.index} current")
            _tls.ctx = self

    def synchronize(self) -> None:
        self.activate()
        call("cuCtxSynchronize", ctx=f"synchronizing cuda:{self.index}")
        self.allocator.flush()

    def pool_attribute(self, name: str) -> int:
        """A pool attribute by short name: 'used', 'used_high', 'reserved', 'reserved_high'."""
        attr = {"used": "USED_MEM_CURRENT", "used_high": "USED_MEM_HIGH",
                "reserved": "RESERVED_MEM_CURRENT", "reserved_high": "RESERVED_MEM_HIGH"}[name]
        return int(call("cuMemPoolGetAttribute", self.pool, getattr(CUmemPool_attribute, "CU_MEMPOOL_ATTR_" + attr),
                        ctx=f"reading the {name} bytes of cuda:{self.index}'s memory pool"))

    def __repr__(self):
        return f"cuda:{self.index}"


_count = None   # cuDeviceGetCount's answer: it cannot change while the process runs (is_available() asks per op)
_reinit = False  # rawdev.sim.reset() happened: cuInit again before the next use


def device_count():
    global _count, _reinit
    n = _count
    if n is None:
        drv = seam.driver()
        if drv is None:
            return 0
        _watch_sim(drv)
        if _reinit and seam._name == "sim":
            call("cuInit", 0, ctx="initializing the simulated GPU again after rawdev.sim.reset()")
        _reinit = False
        n = _count = call("cuDeviceGetCount", ctx="counting CUDA devices")
    return n


def _watch_sim(drv):
    """With the simulator, have rawdev.sim.reset() re-initialize the runtime (see _on_sim_reset)."""
    on_reset = getattr(drv, "on_reset", None)
    if on_reset is not None:
        on_reset(_on_sim_reset)


def _on_sim_reset():
    """rawdev.sim.reset() power-cycled the simulated GPU: forget the devices and kernel modules opened on
    it; the next use initializes the driver again (cuInit), so rawdev works at once. Tensors and modules
    made before the reset keep addresses from the old GPU: the simulator refuses them by name."""
    global _reinit
    from . import kernels
    _forget_devices()
    kernels._forget_modules()
    _reinit = True


def get_device(index=0):
    """The Device for cuda:index, opened on first use."""
    dev = _devices.get(index)
    if dev is None:
        with _devices_lock:
            dev = _devices.get(index)
            if dev is None:
                n = device_count()
                if not 0 <= index < n:
                    raise NoDeviceError(f"cuda:{index} does not exist: the {seam.driver_name()} driver sees "
                                        f"{n} device(s)")
                dev = _devices[index] = Device(index)
    return dev


def _close_devices():
    """Give back what every opened Device holds on a driver that keeps running (tests: reset_for_tests("cuda")
    between ~1,800 GPU tests): its queued frees issued, its streams and pool destroyed. The primary context stays
    retained, so the modules loaded into it survive. Best effort: a device in a sticky error still lets go."""
    from ..errors import CudaError
    for dev in list(_devices.values()):
        try:
            dev.synchronize()          # queued work done: held staging released, queued frees issued
            dev.allocator.kept.clear()
            dev.allocator.flush()
            dev.synchronize()          # the frees land before the pool goes
        except CudaError:
            pass
        for s in (dev.copy_stream, dev.compute_stream):
            if s is not None:
                try:
                    call("cuStreamDestroy", s.handle, ctx=f"closing the {s.label} stream")
                except CudaError:
                    pass
                seam.stream_names.pop(s._int, None)
        if dev.pool is not None:
            try:   # blocks still held by tensors of earlier tests go back to the driver as those are freed
                call("cuMemPoolDestroy", dev.pool, ctx=f"destroying the pool of cuda:{dev.index}")
            except CudaError:
                pass
        dev.pool = dev.compute_stream = dev.copy_stream = None


def _forget_devices():
    """Drop every opened Device (after rawdev.sim.reset(); tests only)."""
    global _count
    _count = None
    _devices.clear()
    _tls.__dict__.clear()
    seam.stream_names.clear()


memory.bind_devices(sys.modules[__name__])   # pinned buffers and pointer lookups reach the devices through this
