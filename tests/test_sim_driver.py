"""The simulated driver, called directly (no runtime): cuda-python's signatures and tuples, streams as
queues (stale reads before a sync), events across streams, pools, OOM, stream-ordered frees, fault
injection, sticky errors, module loading with JIT logs, and kernel-parameter marshalling."""
import ctypes
import threading

import numpy as np
import pytest
from cuda.bindings import driver as drv
from rawdev import sim
from rawdev.sim import driver as simdrv

R = drv.CUresult
MiB = 1 << 20
FRESH = b"\xff"   # what a new pool block holds before anything writes it (RAWDEV_SIM_FRESH)


def ok(res):
    """Assert success; return the value(s) like the runtime's checker does."""
    assert res[0] == R.CUDA_SUCCESS, (res[0], sim.last_error_detail())
    return None if len(res) == 1 else res[1] if len(res) == 2 else res[1:]


@pytest.fixture(autouse=True)
def gpu(monkeypatch):
    """A power-on simulated GPU with the primary context of device 0 current on this thread."""
    # the default (eager) schedule: these tests pin its query behaviour (tests/test_sim_schedule.py the others')
    for k in ("RAWDEV_SIM_MEMORY", "RAWDEV_SIM_DEVICES", "RAWDEV_SIM_DRIVER_VERSION", "RAWDEV_SIM_CC",
              "RAWDEV_SIM_FRESH", "RAWDEV_SIM_SCHEDULE"):
        monkeypatch.delenv(k, raising=False)
    sim.reset()
    ok(sim.cuInit(0))
    ctx = ok(sim.cuDevicePrimaryCtxRetain(0))
    ok(sim.cuCtxSetCurrent(ctx))
    yield ctx
    sim.reset()


def power_on(monkeypatch, **env):
    for k, v in env.items():
        monkeypatch.setenv(k, str(v))
    sim.reset()
    ok(sim.cuInit(0))
    ok(sim.cuCtxSetCurrent(ok(sim.cuDevicePrimaryCtxRetain(0))))


def make_pool(release_threshold=None):
    props = drv.CUmemPoolProps()
    props.allocType = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = 0
    pool = ok(sim.cuMemPoolCreate(props))
    if release_threshold is not None:
        ok(sim.cuMemPoolSetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                     drv.cuuint64_t(release_threshold)))
    return pool


def pool_attr(pool, name):
    v = ok(sim.cuMemPoolGetAttribute(pool, getattr(drv.CUmemPool_attribute, "CU_MEMPOOL_ATTR_" + name)))
    assert isinstance(v, drv.cuuint64_t)
    return int(v)


def pinned(n):
    """A pinned host buffer and a numpy view of it."""
    addr = ok(sim.cuMemHostAlloc(n, 0))
    return addr, np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(addr))


def stream(flags=0):
    return ok(sim.cuStreamCreate(flags))


# ------------------------------------------------------------------------------------------ basics
def test_init_devices_and_error_strings(monkeypatch):
    sim.reset()
    assert sim.cuDeviceGetCount() == (R.CUDA_ERROR_NOT_INITIALIZED, None)
    assert sim.cuDriverGetVersion() == (R.CUDA_SUCCESS, 12080)             # works before cuInit, like the driver
    assert sim.cuGetErrorName(R.CUDA_ERROR_OUT_OF_MEMORY) == (R.CUDA_SUCCESS, b"CUDA_ERROR_OUT_OF_MEMORY")
    assert ok(sim.cuGetErrorString(R.CUDA_ERROR_ILLEGAL_ADDRESS)) == b"an illegal memory access was encountered"
    assert ok(sim.cuGetErrorString(R.CUDA_ERROR_STREAM_CAPTURE_MERGE)).startswith(b"This error indicates")
    assert sim.cuInit(1)[0] == R.CUDA_ERROR_INVALID_VALUE
    ok(sim.cuInit(0))
    assert ok(sim.cuDeviceGetCount()) == 1
    dev = ok(sim.cuDeviceGet(0))
    assert isinstance(dev, drv.CUdevice) and sim.cuDeviceGet(1)[0] == R.CUDA_ERROR_INVALID_DEVICE
    name = ok(sim.cuDeviceGetName(64, dev))     # cuda-python hands back the whole buffer
    assert len(name) == 64 and name.split(b"\0")[0] == b"rawdev simulated GPU"
    A = drv.CUdevice_attribute
    got = {a: ok(sim.cuDeviceGetAttribute(getattr(A, "CU_DEVICE_ATTRIBUTE_" + a), dev)) for a in
           ("COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR", "MULTIPROCESSOR_COUNT", "WARP_SIZE",
            "MAX_THREADS_PER_BLOCK", "MAX_SHARED_MEMORY_PER_BLOCK")}
    assert list(got.values()) == [7, 5, 16, 32, 1024, 49152]
    assert ok(sim.cuDeviceTotalMem(0)) == 4 << 30
    power_on(monkeypatch, RAWDEV_SIM_DEVICES=2, RAWDEV_SIM_MEMORY="64M", RAWDEV_SIM_DRIVER_VERSION=12000,
             RAWDEV_SIM_CC="8.6")
    assert ok(sim.cuDeviceGetCount()) == 2 and ok(sim.cuDeviceTotalMem(1)) == 64 * MiB
    assert ok(sim.cuDriverGetVersion()) == 12000
    assert ok(sim.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 1)) == 8


def test_contexts_are_per_thread_and_needed(gpu):
    ok(sim.cuCtxSetCurrent(None))
    assert sim.cuStreamCreate(0) == (R.CUDA_ERROR_INVALID_CONTEXT, None)
    assert ok(sim.cuCtxGetCurrent()) is not None and int(ok(sim.cuCtxGetCurrent())) == 0
    ok(sim.cuCtxSetCurrent(gpu))
    assert int(ok(sim.cuCtxGetCurrent())) == int(gpu)
    seen = []
    t = threading.Thread(target=lambda: seen.append(sim.cuMemGetInfo()[0]))
    t.start(), t.join()
    assert seen == [R.CUDA_ERROR_INVALID_CONTEXT]            # a new thread has no current context
    assert sim.cuCtxSetCurrent(drv.CUcontext(0x1234))[0] == R.CUDA_ERROR_INVALID_CONTEXT
    ok(sim.cuDevicePrimaryCtxRelease(0))                       # refcount 0: the context is gone
    assert sim.cuMemGetInfo() == (R.CUDA_ERROR_INVALID_CONTEXT, None, None)
    assert sim.cuDevicePrimaryCtxRelease(0)[0] == R.CUDA_ERROR_INVALID_CONTEXT


def test_argument_types_follow_cuda_python():
    pool = make_pool()
    with pytest.raises(AttributeError):          # cuda-python calls value.getPtr(): an int is not enough
        sim.cuMemPoolSetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 5)
    with pytest.raises(TypeError):
        sim.cuModuleGetFunction(drv.CUmodule(1), "saxpy")      # names are bytes
    with pytest.raises(TypeError):
        sim.cuPointerGetAttributes(1, [2], 0)                   # attribute lists take the enum
    s = stream()
    assert sim.cuStreamQuery(int(s)) == (R.CUDA_SUCCESS,)      # handles: object or int
    assert sim.cuStreamQuery(drv.CUstream(0x5)) == (R.CUDA_ERROR_INVALID_HANDLE,)
    assert sim.cuStreamSynchronize(0) == (R.CUDA_SUCCESS,) and sim.cuStreamSynchronize(None) == (R.CUDA_SUCCESS,)


# ------------------------------------------------------------------------------- streams and events
def test_async_results_are_stale_until_the_stream_is_synchronized():
    pool, s, n = make_pool(), stream(), 4096
    d = ok(sim.cuMemAllocFromPoolAsync(n, pool, s))
    src, src_np = pinned(n)
    dst, dst_np = pinned(n)
    src_np[:] = 7
    dst_np[:] = 0
    ok(sim.cuMemcpyHtoDAsync(d, src, n, s))
    ok(sim.cuMemcpyDtoHAsync(dst, d, n, s))
    src_np[:] = 9                                  # pinned source is read when the copy runs: a real race
    assert not dst_np.any() and sim.peek(d, 4) == FRESH * 4
    assert sim.stats()["pending_ops"] == 2
    ok(sim.cuStreamSynchronize(s))
    assert (dst_np == 9).all() and sim.stats()["pending_ops"] == 0


def test_pageable_copies_stage_like_the_driver():
    pool, s = make_pool(), stream()
    d = ok(sim.cuMemAllocFromPoolAsync(16, pool, s))
    host = np.arange(4, dtype=np.float32)
    ok(sim.cuMemcpyHtoDAsync(d, host.ctypes.data, 16, s))   # pageable source: staged before returning
    host[:] = -1                                             # so this does not change what is copied
    out = np.zeros(4, np.float32)
    ok(sim.cuMemcpyDtoHAsync(out.ctypes.data, d, 16, s))     # pageable destination: done on return
    assert out.tolist() == [0, 1, 2, 3]


def test_synchronous_copies_wait_for_blocking_streams_not_non_blocking_ones():
    pool, nb, blk = make_pool(), stream(1), stream(0)
    d = ok(sim.cuMemAllocFromPoolAsync(8, pool, nb))
    e = ok(sim.cuMemAllocFromPoolAsync(8, pool, blk))
    ok(sim.cuMemsetD32Async(d, 0xDEADBEEF, 2, nb))
    ok(sim.cuMemsetD32Async(e, 0xDEADBEEF, 2, blk))
    out = np.zeros(2, np.uint32)
    ok(sim.cuMemcpyDtoH(out.ctypes.data, e, 8))              # the legacy stream waits for a blocking stream
    assert (out == 0xDEADBEEF).all()
    ok(sim.cuMemcpyDtoH(out.ctypes.data, d, 8))              # ... not for a non-blocking one: its memset is queued
    assert (out == 0xFFFFFFFF).all()
    ok(sim.cuMemcpyHtoD(d, np.array([1, 2], np.uint32).ctypes.data, 8))
    ok(sim.cuMemsetD8Async(d, 0xAB, 3, nb))
    ok(sim.cuStreamSynchronize(nb))                           # the first memset ran after the copy had landed
    assert sim.peek(d, 8) == bytes([0xAB] * 3) + b"\xde" + bytes.fromhex("efbeadde")
    assert sim.cuMemsetD32Async(int(d) + 2, 0, 1, nb)[0] == R.CUDA_ERROR_INVALID_VALUE   # unaligned
    assert sim.cuMemcpyHtoD(int(d) + 4, out.ctypes.data, 8)[0] == R.CUDA_ERROR_INVALID_VALUE  # past the end


def test_events_order_two_streams():
    pool, s1, s2, n = make_pool(), stream(1), stream(1), 64
    a, b = ok(sim.cuMemAllocFromPoolAsync(n, pool, s1)), ok(sim.cuMemAllocFromPoolAsync(n, pool, s1))
    src, src_np = pinned(n)
    dst, dst_np = pinned(n)
    src_np[:] = 5
    e = ok(sim.cuEventCreate(0))
    ok(sim.cuMemcpyHtoDAsync(a, src, n, s1))
    ok(sim.cuEventRecord(e, s1))
    ok(sim.cuMemsetD8Async(a, 1, n, s1))                     # after the event: must not be seen by s2
    ok(sim.cuStreamWaitEvent(s2, e, 0))
    ok(sim.cuMemcpyDtoDAsync(b, a, n, s2))
    ok(sim.cuMemcpyDtoHAsync(dst, b, n, s2))
    ok(sim.cuStreamSynchronize(s2))                          # runs s1 up to the event, not beyond
    assert (dst_np == 5).all()
    assert sim.peek(a, 1) == b"\5" and sim.cuStreamQuery(s1)[0] == R.CUDA_ERROR_NOT_READY
    assert sim.peek(a, 1) == b"\1"                           # the query ran it
    # without the wait, s2 does not see s1's work
    ok(sim.cuMemsetD8Async(a, 3, n, s1))
    ok(sim.cuMemcpyDtoHAsync(dst, a, n, s2))
    ok(sim.cuStreamSynchronize(s2))
    assert (dst_np == 1).all()


def test_legacy_default_stream_orders_blocking_streams():
    pool, blocking, nonblocking = make_pool(), stream(0), stream(1)
    d = ok(sim.cuMemAllocFromPoolAsync(4, pool, 0))
    ok(sim.cuMemsetD8Async(d, 1, 4, blocking))
    ok(sim.cuMemsetD8Async(d, 2, 4, nonblocking))
    ok(sim.cuMemsetD8Async(d, 3, 1, 0))                      # waits for `blocking`, not for `nonblocking`
    ok(sim.cuStreamSynchronize(0))
    assert sim.peek(d, 4) == b"\3\1\1\1"
    ok(sim.cuCtxSynchronize())
    assert sim.peek(d, 4) == b"\2" * 4


def test_event_query_sync_and_elapsed_time():
    s = stream()
    e0, e1, e2 = (ok(sim.cuEventCreate(0)) for _ in range(3))
    nt = ok(sim.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    assert sim.cuEventQuery(e0) == (R.CUDA_SUCCESS,)          # never recorded: complete
    assert sim.cuEventElapsedTime(e0, e1) == (R.CUDA_ERROR_INVALID_HANDLE, None)
    pool = make_pool()
    d = ok(sim.cuMemAllocFromPoolAsync(1 << 20, pool, s))
    for e in (e0, e1, nt):
        ok(sim.cuEventRecord(e, s))
        ok(sim.cuMemsetD32Async(d, 1, 1 << 18, s))
    ok(sim.cuEventRecord(e2, s))
    assert sim.cuEventQuery(e1) == (R.CUDA_ERROR_NOT_READY,)  # NOT_READY, then it runs: polling ends
    assert sim.cuEventQuery(e1) == (R.CUDA_SUCCESS,)
    assert sim.cuEventElapsedTime(e0, e2) == (R.CUDA_ERROR_NOT_READY, None)
    ok(sim.cuEventSynchronize(e2))
    t01, t02 = ok(sim.cuEventElapsedTime(e0, e1)), ok(sim.cuEventElapsedTime(e0, e2))
    assert isinstance(t01, float) and 0 <= t01 <= t02
    assert sim.cuEventElapsedTime(e0, nt) == (R.CUDA_ERROR_INVALID_HANDLE, None)
    ok(sim.cuEventDestroy(e0))
    assert sim.cuEventQuery(e0) == (R.CUDA_ERROR_INVALID_HANDLE,)
    ok(sim.cuStreamDestroy(s))
    assert sim.cuStreamSynchronize(s) == (R.CUDA_ERROR_INVALID_HANDLE,)


# ------------------------------------------------------------------------------------- memory pools
def test_pool_attributes_granules_and_release():
    pool, s = make_pool(), stream()
    assert [pool_attr(pool, a) for a in ("RESERVED_MEM_CURRENT", "USED_MEM_CURRENT", "RELEASE_THRESHOLD")] == [0, 0, 0]
    a = ok(sim.cuMemAllocFromPoolAsync(1000, pool, s))
    assert isinstance(a, drv.CUdeviceptr) and int(a) >= 1 << 48
    assert pool_attr(pool, "USED_MEM_CURRENT") == 1000 and pool_attr(pool, "RESERVED_MEM_CURRENT") == 2 * MiB
    b = ok(sim.cuMemAllocFromPoolAsync(3 * MiB, pool, s))
    assert pool_attr(pool, "RESERVED_MEM_CURRENT") == 4 * MiB
    assert ok(sim.cuMemGetInfo()) == ((4 << 30) - 4 * MiB, 4 << 30)
    ok(sim.cuMemFreeAsync(b, s))
    ok(sim.cuStreamSynchronize(s))                            # threshold 0: unused reserve goes back
    assert pool_attr(pool, "USED_MEM_CURRENT") == 1000 and pool_attr(pool, "RESERVED_MEM_CURRENT") == 2 * MiB
    assert pool_attr(pool, "USED_MEM_HIGH") == 1000 + 3 * MiB and pool_attr(pool, "RESERVED_MEM_HIGH") == 4 * MiB
    ok(sim.cuMemPoolSetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_HIGH, drv.cuuint64_t(0)))
    assert pool_attr(pool, "USED_MEM_HIGH") == 1000
    assert sim.cuMemPoolSetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                                     drv.cuuint64_t(0))[0] == R.CUDA_ERROR_INVALID_VALUE
    # a high release threshold keeps the reserve across syncs until trimmed
    ok(sim.cuMemPoolSetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                 drv.cuuint64_t(2**64 - 1)))
    c = ok(sim.cuMemAllocFromPoolAsync(5 * MiB, pool, s))
    ok(sim.cuMemFreeAsync(c, s))
    ok(sim.cuCtxSynchronize())
    assert pool_attr(pool, "RESERVED_MEM_CURRENT") == 6 * MiB and pool_attr(pool, "USED_MEM_CURRENT") == 1000
    # c straddled a's segment and a 4 MiB segment mapped right after it: dropping that one would leave
    # 2 MiB, and the driver guarantees at least minBytesToKeep stay reserved
    ok(sim.cuMemPoolTrimTo(pool, 3 * MiB))
    assert pool_attr(pool, "RESERVED_MEM_CURRENT") == 6 * MiB
    ok(sim.cuMemPoolTrimTo(pool, 2 * MiB))
    assert pool_attr(pool, "RESERVED_MEM_CURRENT") == 2 * MiB
    ok(sim.cuMemPoolTrimTo(pool, 0))
    assert pool_attr(pool, "RESERVED_MEM_CURRENT") == 2 * MiB   # never below what is in use
    ok(sim.cuMemPoolDestroy(pool))                              # with `a` outstanding: deferred
    assert sim.cuMemPoolGetAttribute(pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)[0] \
        == R.CUDA_ERROR_INVALID_VALUE
    ok(sim.cuMemFreeAsync(a, s))
    ok(sim.cuStreamSynchronize(s))
    assert ok(sim.cuMemGetInfo())[0] == 4 << 30


def test_out_of_memory(monkeypatch):
    power_on(monkeypatch, RAWDEV_SIM_MEMORY="8M")
    pool, s = make_pool(), stream()
    ok(sim.cuMemAllocFromPoolAsync(5 * MiB, pool, s))
    assert sim.cuMemAllocFromPoolAsync(4 * MiB, pool, s) == (R.CUDA_ERROR_OUT_OF_MEMORY, None)
    assert "8388608" in sim.last_error_detail()                # capacity in the detail
    ok(sim.cuMemAllocFromPoolAsync(2 * MiB, pool, s))           # 5 MiB + 2 MiB fit in 4 granules
    assert ok(sim.cuMemGetInfo()) == (0, 8 * MiB)
    assert sim.cuMemAllocFromPoolAsync(0, pool, s)[0] == R.CUDA_ERROR_INVALID_VALUE


def test_frees_run_in_stream_order():
    pool, s = make_pool(), stream()
    d = ok(sim.cuMemAllocFromPoolAsync(256, pool, s))
    ok(sim.cuMemsetD8Async(d, 4, 256, s))
    ok(sim.cuMemFreeAsync(d, s))
    assert sim.cuMemFreeAsync(d, s)[0] == R.CUDA_ERROR_INVALID_VALUE        # double free
    assert pool_attr(pool, "USED_MEM_CURRENT") == 256 and sim.peek(d, 1) == FRESH  # nothing ran yet
    ok(sim.cuStreamSynchronize(s))
    assert pool_attr(pool, "USED_MEM_CURRENT") == 0
    assert sim.cuMemsetD8Async(d, 0, 1, s)[0] == R.CUDA_ERROR_INVALID_VALUE    # gone now
    assert sim.cuMemFreeAsync(0x1234, s)[0] == R.CUDA_ERROR_INVALID_VALUE
    # a copy queued before the free but run after a *different* stream freed it is a fault
    e = ok(sim.cuMemAllocFromPoolAsync(64, pool, s))
    s2 = stream(1)
    ok(sim.cuMemsetD8Async(e, 1, 64, s))
    ok(sim.cuMemFreeAsync(e, s2))
    ok(sim.cuStreamSynchronize(s2))
    assert sim.cuStreamSynchronize(s) == (R.CUDA_ERROR_ILLEGAL_ADDRESS,)
    assert "use after free" in sim.last_error_detail()


def test_pinned_memory_and_pointer_attributes():
    pool, s = make_pool(), stream()
    h, h_np = pinned(10000)
    assert isinstance(h, int) and h % 4096 == 0
    h_np[:] = 1                                                 # real, writable host memory
    d = ok(sim.cuMemAllocFromPoolAsync(1000, pool, s))
    P = drv.CUpointer_attribute
    attrs = [P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, P.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
             P.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, P.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
             P.CU_POINTER_ATTRIBUTE_IS_MANAGED, P.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, P.CU_POINTER_ATTRIBUTE_BUFFER_ID]
    mt, ordinal, start, size, managed, mp, bid = ok(sim.cuPointerGetAttributes(len(attrs), attrs, int(d) + 10))
    # a pool block's range is the pool's mapping (a 2 MiB segment) holding it, not the 1000-byte block
    assert (mt, ordinal, int(start), size, managed) == (int(drv.CUmemorytype.CU_MEMORYTYPE_DEVICE), 0, int(d),
                                                        2 << 20, False)
    assert int(mp) == int(pool) and bid > 0
    mt, ordinal, start, size = ok(sim.cuPointerGetAttributes(4, attrs[:4], h + 5))
    assert (mt, int(start), size) == (int(drv.CUmemorytype.CU_MEMORYTYPE_HOST), h, 10000)
    # like the real cuPointerGetAttributes: an unknown pointer is not an error, just NULL attributes
    mt, ordinal, start, size = ok(sim.cuPointerGetAttributes(4, attrs[:4], 0x1000))
    assert (mt, int(start), size) == (0, 0, 0)
    ok(sim.cuMemFreeHost(h))
    assert sim.cuMemFreeHost(h) == (R.CUDA_ERROR_INVALID_VALUE,)
    assert sim.cuMemHostAlloc(0, 0) == (R.CUDA_ERROR_INVALID_VALUE, None)


# ------------------------------------------------------------------------------- fault injection
def test_fault_injection():
    pool, s = make_pool(), stream()
    sim.inject_fault("cuMemAllocFromPoolAsync", R.CUDA_ERROR_OUT_OF_MEMORY, nth=2)
    sim.inject_fault("cuStreamCreate", 999)
    ok(sim.cuMemAllocFromPoolAsync(16, pool, s))
    assert sim.cuMemAllocFromPoolAsync(16, pool, s) == (R.CUDA_ERROR_OUT_OF_MEMORY, None)
    assert pool_attr(pool, "USED_MEM_CURRENT") == 16                        # it did nothing
    ok(sim.cuMemAllocFromPoolAsync(16, pool, s))                            # one-shot
    assert sim.cuStreamCreate(0) == (R.CUDA_ERROR_UNKNOWN, None)
    sim.inject_fault("cuMemGetInfo", R.CUDA_ERROR_INVALID_CONTEXT)
    sim.clear_faults()
    ok(sim.cuMemGetInfo())
    with pytest.raises(ValueError):
        sim.inject_fault("cuNoSuchThing", 1)
    assert sim.stats()["calls"]["cuMemAllocFromPoolAsync"] == 3


# ------------------------------------------------------------------ modules and launches (fake ISA)
FAKE_PTX = """//
.version 8.0
.target sm_75
.address_size 64
.visible .entry fill(.param .u64 fill_p0, .param .u32 fill_p1, .param .f32 fill_p2) { ret; }
.visible .entry touch(.param .u64 touch_p0, .param .u8 touch_p1, .param .u64 touch_p2)
.maxntid 128, 1, 1
{
\t.reg .b32 %r<10>;
\t.shared .align 4 .b8 tile[1024];
\tret;
}
.visible .entry bar() { ret; }
"""


class BarrierError(Exception):
    pass


class FakePtx:
    """Stands in for rawdev.sim.ptx.PtxModule: records launches, runs tiny Python 'kernels'."""
    launches = []

    def __init__(self, text, key=None):
        if "frobnicate" in text:
            raise SyntaxError("line 5: unknown instruction 'frobnicate'")
        P = type("Param", (), {})
        self.entries = {}
        for name, info in simdrv._scan_entries(text).items():
            params = []
            for size, off in info["params"]:
                p = P()
                p.size, p.offset = size, off
                params.append(p)
            self.entries[name] = type("Entry", (), dict(params=params, param_size=info["param_size"]))()

    def launch(self, name, grid, block, params, dynamic_shared, memory):
        FakePtx.launches.append((name, grid, block, params, dynamic_shared))
        if name == "fill":
            out, n = int.from_bytes(params[:8], "little"), int.from_bytes(params[8:12], "little")
            v = np.frombuffer(params[12:16], np.float32)[0]
            memory.store(out + 4 * np.arange(n, dtype=np.uint64), np.full(n, v, np.float32), np.float32)
        elif name == "touch":
            memory.load(np.array([int.from_bytes(params[:8], "little")], np.uint64), np.float32)
        elif name == "bar":
            raise BarrierError("bar.sync 0 reached by 3 of 4 warps of block (0, 0, 0)")


@pytest.fixture
def fake_isa(monkeypatch):
    FakePtx.launches = []
    monkeypatch.setattr(simdrv, "_ptx_module_class", lambda: FakePtx)
    return FakePtx


def load(text, log_size=1024):
    """cuModuleLoadDataEx the way the runtime calls it: ctypes log buffers passed by address."""
    err_log, info_log = ctypes.create_string_buffer(log_size), ctypes.create_string_buffer(log_size)
    J = drv.CUjit_option
    opts = [J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            J.CU_JIT_INFO_LOG_BUFFER, J.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
    vals = [ctypes.addressof(err_log), log_size, ctypes.addressof(info_log), log_size]
    res = sim.cuModuleLoadDataEx(text.encode() + b"\0", len(opts), opts, vals)
    return res, err_log.value.decode(), info_log.value.decode()


def argv(*args):
    """A void*[n] array of pointers to ctypes arguments, as the runtime builds it; keep the result alive."""
    arr = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
    return arr, args


def launch(f, grid, block, args, s=0, shared=0):
    arr, keep = argv(*args)
    return sim.cuLaunchKernel(f, *grid, *block, shared, s, ctypes.addressof(arr), 0)


def test_module_load_errors_write_the_jit_log(fake_isa):
    res, err, _ = load(FAKE_PTX.replace(".version 8.0", ".version 8.8"))
    assert res == (R.CUDA_ERROR_UNSUPPORTED_PTX_VERSION, None)
    assert "Unsupported .version 8.8; current version is '8.7'" in err and "line 2" in err
    assert err in sim.last_error_detail()
    res, err, _ = load(FAKE_PTX.replace("ret;", "frobnicate;"))
    assert res[0] == R.CUDA_ERROR_INVALID_PTX and "frobnicate" in err
    res, err, _ = load(FAKE_PTX.replace("frobnicate", "x").replace("ret;", "frobnicate;"), log_size=16)
    assert len(err) == 15                                     # truncated to the buffer, NUL-terminated
    res, err, _ = load(FAKE_PTX.replace("sm_75", "sm_80"))
    assert res[0] == R.CUDA_ERROR_INVALID_PTX and "sm_80" in err
    log, J = bytearray(256), drv.CUjit_option                  # the runtime passes bytearrays
    res = sim.cuModuleLoadDataEx(b".version 8.0\n.target sm_75\nfrobnicate;", 2,
                                 [J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES], [log, 256])
    assert res[0] == R.CUDA_ERROR_INVALID_PTX and b"frobnicate" in log.split(b"\0")[0]
    res, err, info = load(FAKE_PTX)
    mod = ok(res)
    assert err == "" and "Compiling entry function 'fill' for 'sm_75'" in info
    assert sim.cuModuleGetFunction(mod, b"nope") == (R.CUDA_ERROR_NOT_FOUND, None)
    f = ok(sim.cuModuleGetFunction(mod, b"touch"))
    FA = drv.CUfunction_attribute
    assert ok(sim.cuFuncGetAttribute(FA.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f)) == 128
    assert ok(sim.cuFuncGetAttribute(FA.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f)) == 1024
    assert 0 < ok(sim.cuFuncGetAttribute(FA.CU_FUNC_ATTRIBUTE_NUM_REGS, f)) <= 255
    ok(sim.cuModuleUnload(mod))
    assert sim.cuFuncGetAttribute(FA.CU_FUNC_ATTRIBUTE_NUM_REGS, f)[0] == R.CUDA_ERROR_INVALID_HANDLE
    assert sim.cuModuleUnload(mod) == (R.CUDA_ERROR_INVALID_HANDLE,)


def test_launch_marshals_parameters_at_the_entry_offsets(fake_isa):
    mod = ok(load(FAKE_PTX)[0])
    fill, touch = ok(sim.cuModuleGetFunction(mod, b"fill")), ok(sim.cuModuleGetFunction(mod, b"touch"))
    pool, s = make_pool(), stream()
    d = ok(sim.cuMemAllocFromPoolAsync(40, pool, s))
    ok(launch(fill, (2, 1, 1), (64, 1, 1), [ctypes.c_uint64(int(d)), ctypes.c_uint32(10), ctypes.c_float(2.5)], s, 16))
    assert fake_isa.launches == [] and sim.peek(d, 4) == FRESH * 4         # queued, not run
    ok(sim.cuStreamSynchronize(s))
    name, grid, block, params, shmem = fake_isa.launches[0]
    assert (name, grid, block, shmem) == ("fill", (2, 1, 1), (64, 1, 1), 16)
    assert params == int(d).to_bytes(8, "little") + (10).to_bytes(4, "little") + np.float32(2.5).tobytes()
    assert np.frombuffer(sim.peek(d, 40), np.float32).tolist() == [2.5] * 10
    ok(launch(touch, (1, 1, 1), (1, 1, 1), [ctypes.c_uint64(int(d)), ctypes.c_uint8(7), ctypes.c_uint64(3)], s))
    ok(sim.cuStreamSynchronize(s))                              # .u8 then .u64: padded to offset 16
    assert fake_isa.launches[1][3] == int(d).to_bytes(8, "little") + b"\7" + b"\0" * 7 + (3).to_bytes(8, "little")
    # cuda-python's own (values, types) form works too
    ok(sim.cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, s, ((int(d), 1, 4.0), (ctypes.c_void_p, ctypes.c_uint32,
                                                                            ctypes.c_float)), 0))
    ok(sim.cuStreamSynchronize(s))
    assert np.frombuffer(sim.peek(d, 8), np.float32).tolist() == [4.0, 2.5]
    bad = [((1, 1, 1), (1025, 1, 1), 0), ((1, 1, 1), (32, 32, 2), 0), ((0, 1, 1), (1, 1, 1), 0),
           ((1, 1, 1), (1, 1, 65), 0), ((1, 65536, 1), (1, 1, 1), 0), ((1, 1, 1), (1, 1, 1), 49153)]
    for grid, block, shmem in bad:
        assert launch(fill, grid, block, [ctypes.c_uint64(0), ctypes.c_uint32(0), ctypes.c_float(0)], s,
                      shmem) == (R.CUDA_ERROR_INVALID_VALUE,), (grid, block, shmem)
    # .maxntid
    assert launch(touch, (1, 1, 1), (129, 1, 1), [ctypes.c_uint64(0)] * 3, s) == (R.CUDA_ERROR_INVALID_VALUE,)
    assert sim.cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, 0, 0) == (R.CUDA_ERROR_INVALID_VALUE,)  # NULL params
    assert sim.cuLaunchKernel(drv.CUfunction(77), 1, 1, 1, 1, 1, 1, 0, s, 0, 0) == (R.CUDA_ERROR_INVALID_HANDLE,)


def test_kernel_fault_is_sticky_until_reset(fake_isa):
    mod = ok(load(FAKE_PTX)[0])
    touch = ok(sim.cuModuleGetFunction(mod, b"touch"))
    pool, s = make_pool(), stream()
    d = ok(sim.cuMemAllocFromPoolAsync(64, pool, s))
    ok(launch(touch, (1, 1, 1), (1, 1, 1), [ctypes.c_uint64(int(d) + 64), ctypes.c_uint8(0), ctypes.c_uint64(0)], s))
    ok(sim.cuMemsetD8Async(d, 9, 64, s))                        # queued behind the fault: never runs
    assert sim.cuStreamSynchronize(s) == (R.CUDA_ERROR_ILLEGAL_ADDRESS,)
    detail = sim.last_error_detail()
    assert "touch" in detail and f"0x{int(d) + 64:x}" in detail and "past the end of the 64-byte allocation" in detail
    assert sim.cuMemGetInfo() == (R.CUDA_ERROR_ILLEGAL_ADDRESS, None, None)   # sticky
    assert sim.cuStreamCreate(0) == (R.CUDA_ERROR_ILLEGAL_ADDRESS, None)
    assert sim.last_error_detail() == detail and sim.sticky_error() == R.CUDA_ERROR_ILLEGAL_ADDRESS
    assert ok(sim.cuGetErrorName(R.CUDA_ERROR_ILLEGAL_ADDRESS)) == b"CUDA_ERROR_ILLEGAL_ADDRESS"  # still answers
    ok(sim.cuDevicePrimaryCtxRelease(0))                        # teardown still works
    assert sim.peek(d, 1) == FRESH
    sim.reset()
    assert sim.sticky_error() is None and sim.cuMemGetInfo()[0] == R.CUDA_ERROR_NOT_INITIALIZED


@pytest.mark.parametrize("kernel,code", [("bar", R.CUDA_ERROR_LAUNCH_FAILED),
                                         ("touch", R.CUDA_ERROR_MISALIGNED_ADDRESS)])
def test_barrier_and_misaligned_faults(fake_isa, kernel, code):
    mod = ok(load(FAKE_PTX)[0])
    f = ok(sim.cuModuleGetFunction(mod, kernel.encode()))
    pool = make_pool()
    d = ok(sim.cuMemAllocFromPoolAsync(64, pool, 0))
    args = [ctypes.c_uint64(int(d) + 2), ctypes.c_uint8(0), ctypes.c_uint64(0)]   # +2: a misaligned f32 load
    ok(launch(f, (1, 1, 1), (1, 1, 1), args if kernel == "touch" else []))
    assert sim.cuCtxSynchronize() == (code,)
    assert kernel in sim.last_error_detail()


def test_stats_count_calls_kernels_and_bytes(fake_isa):
    mod = ok(load(FAKE_PTX)[0])
    fill = ok(sim.cuModuleGetFunction(mod, b"fill"))
    pool = make_pool()
    d = ok(sim.cuMemAllocFromPoolAsync(16, pool, 0))
    ok(launch(fill, (1, 1, 1), (4, 1, 1), [ctypes.c_uint64(int(d)), ctypes.c_uint32(4), ctypes.c_float(1)]))
    out = np.zeros(4, np.float32)
    ok(sim.cuMemcpyDtoH(out.ctypes.data, d, 16))
    st = sim.stats()
    assert st["kernels"] == {"fill": 1} and st["kernels_run"] == 1 and st["bytes"]["DtoH"] == 16
    assert st["calls"]["cuLaunchKernel"] == 1 and out.tolist() == [1.0] * 4


# ----------------------------------------------------------------- the real interpreter, when present
def _interpreter():
    try:
        from rawdev.sim.ptx import PtxModule  # noqa: F401
    except ImportError as e:
        pytest.skip(f"PTX interpreter not available yet: {e}")


def _testkernels():
    from pathlib import Path
    return (Path(__file__).resolve().parents[1] / "ptx" / "testkernels.ptx").read_text()


def test_saxpy_through_the_interpreter():
    _interpreter()
    mod = ok(load(_testkernels(), 8192)[0])
    saxpy = ok(sim.cuModuleGetFunction(mod, b"saxpy"))
    pool, s, n = make_pool(), stream(), 1000
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy = ok(sim.cuMemAllocFromPoolAsync(4 * n, pool, s)), ok(sim.cuMemAllocFromPoolAsync(4 * n, pool, s))
    ok(sim.cuMemcpyHtoDAsync(dx, x.ctypes.data, 4 * n, s)), ok(sim.cuMemcpyHtoDAsync(dy, y.ctypes.data, 4 * n, s))
    ok(launch(saxpy, (4, 1, 1), (128, 1, 1),
              [ctypes.c_uint64(int(dy)), ctypes.c_uint64(int(dx)), ctypes.c_float(2.0), ctypes.c_int64(n)], s))
    out = np.full(n, np.nan, np.float32)
    ok(sim.cuMemcpyDtoHAsync(out.ctypes.data, dy, 4 * n, s))
    ref = 2.0 * x.astype(np.float64) + y
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-6
    # 64 elements past the end: an illegal address with the thread and the allocation in the detail
    ok(launch(saxpy, (4, 1, 1), (128, 1, 1),
              [ctypes.c_uint64(int(dy)), ctypes.c_uint64(int(dx)), ctypes.c_float(2.0), ctypes.c_int64(n + 64)], s))
    assert sim.cuStreamSynchronize(s) == (R.CUDA_ERROR_ILLEGAL_ADDRESS,)
    assert "saxpy" in sim.last_error_detail() and "thread" in sim.last_error_detail().lower()


def test_divergent_barrier_through_the_interpreter():
    _interpreter()
    mod = ok(load(_testkernels(), 8192)[0])
    f = ok(sim.cuModuleGetFunction(mod, b"bad_barrier"))
    pool, n = make_pool(), 256
    out, x = ok(sim.cuMemAllocFromPoolAsync(4 * n, pool, 0)), ok(sim.cuMemAllocFromPoolAsync(4 * n, pool, 0))
    ok(launch(f, (1, 1, 1), (256, 1, 1), [ctypes.c_uint64(int(out)), ctypes.c_uint64(int(x)), ctypes.c_int32(n),
                                          ctypes.c_int32(100)]))
    assert sim.cuCtxSynchronize() == (R.CUDA_ERROR_LAUNCH_FAILED,)
    assert "bad_barrier" in sim.last_error_detail()


def test_new_pool_blocks_are_poisoned_unless_asked_for_zeros(monkeypatch):
    """A GPU pool hands back whatever a block held before; the simulator fills new blocks with 0xff
    (NaN as float32) so reading never-written memory shows up, or with zeros under RAWDEV_SIM_FRESH=zero."""
    pool = make_pool()
    d = int(ok(sim.cuMemAllocFromPoolAsync(64, pool, 0)))
    assert sim.peek(d, 64) == b"\xff" * 64
    assert np.isnan(np.frombuffer(sim.peek(d, 16), np.float32)).all()
    ok(sim.cuMemFreeAsync(d, 0))
    ok(sim.cuCtxSynchronize())
    power_on(monkeypatch, RAWDEV_SIM_FRESH="zero")
    d = int(ok(sim.cuMemAllocFromPoolAsync(64, make_pool(), 0)))
    assert sim.peek(d, 64) == b"\0" * 64
    monkeypatch.setenv("RAWDEV_SIM_FRESH", "0x1ff")
    with pytest.raises(ValueError, match="RAWDEV_SIM_FRESH"):
        sim.reset()
    monkeypatch.delenv("RAWDEV_SIM_FRESH")
    sim.reset()
