"""Stream ordering and current contexts as a GPU has them, on the simulator and a GPU: a copy without a stream
is ordered with rawdev's (non-blocking) streams, never on the legacy stream beside them; every thread gets the
device's context before its first call."""
import threading

import numpy as np
import pytest
import rawdev
from cuda.bindings import driver as drv
from rawdev import nn, sim
from rawdev.runtime import get_device, kernels, memory

from test_sim_driver import ok

R = drv.CUresult
rng = np.random.default_rng()


def relerr(out, ref):
    return np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref)


def upload(dev, host):
    buf = memory.DeviceBuffer.alloc(dev, host.nbytes, owner="test")
    memory.copy_htod(buf.ptr, host, host.nbytes)
    return buf


def download(buf, like):
    out = np.empty_like(like)
    memory.copy_dtoh(out, buf.ptr, out.nbytes)
    return out


# ------------------------------------------------------------------------- copies without a stream
def test_uploading_the_next_input_waits_for_the_kernel_reading_the_last(dev):
    n = 3001
    x, x_next, y = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    bx, by = upload(dev, x), upload(dev, y)
    a = np.float32(1.5)
    kernels.get_kernel(dev, "saxpy").launch((n + 255) // 256, 256, [by.ptr, bx.ptr, a, n])   # y += a*x, queued
    memory.copy_htod(bx.ptr, x_next, x_next.nbytes)         # the next input, while the kernel may still read x
    got = download(by, y)                                   # no synchronize: the copy itself is ordered after it
    assert relerr(got, a * x.astype(np.float64) + y) < 1e-6
    assert np.array_equal(download(bx, x_next), x_next)


def test_a_copy_without_a_stream_has_landed_for_every_stream(dev):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    bx, by = upload(dev, x), upload(dev, y)
    other = rawdev.runtime.Stream(dev, "other")               # a stream that never waited for anything
    kernels.get_kernel(dev, "saxpy").launch((n + 255) // 256, 256, [by.ptr, bx.ptr, np.float32(2), n], stream=other)
    other.synchronize()
    assert relerr(download(by, y), 2 * x.astype(np.float64) + y) < 1e-6


def test_copy_dtod_without_a_stream_follows_the_compute_stream(dev):
    n = 4096
    a = upload(dev, np.ones(n, np.uint8))
    b = upload(dev, np.zeros(n, np.uint8))
    memory.memset_d8(a.ptr, 9, n, dev.compute_stream)      # queued on the compute stream
    memory.copy_dtod(b.ptr, a.ptr, n)
    assert (download(b, np.empty(n, np.uint8)) == 9).all()


# ------------------------------------------------------------------- the simulator's legacy stream
@pytest.fixture
def raw(monkeypatch):
    # the eager schedule: these tests assert which queued work is still pending, which random:SEED may run early
    for k in ("RAWDEV_SIM_MEMORY", "RAWDEV_SIM_DEVICES", "RAWDEV_SIM_FRESH", "RAWDEV_SIM_SCHEDULE"):
        monkeypatch.delenv(k, raising=False)
    sim.reset()
    ok(sim.cuInit(0))
    ok(sim.cuCtxSetCurrent(ok(sim.cuDevicePrimaryCtxRetain(0))))
    yield
    sim.reset()


def _pool_block(n, s):
    props = drv.CUmemPoolProps()
    props.allocType = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    return int(ok(sim.cuMemAllocFromPoolAsync(n, ok(sim.cuMemPoolCreate(props)), s)))


@pytest.mark.parametrize("flags, waits", [(drv.CUstream_flags.CU_STREAM_NON_BLOCKING, False),
                                          (drv.CUstream_flags.CU_STREAM_DEFAULT, True)])
def test_a_synchronous_copy_waits_for_blocking_streams_only(raw, flags, waits):
    s = ok(sim.cuStreamCreate(int(flags)))
    d = _pool_block(64, s)
    ok(sim.cuMemsetD8Async(d, 5, 64, s))
    out = np.zeros(64, np.uint8)
    ok(sim.cuMemcpyDtoH(out.ctypes.data, d, 64))            # on the legacy stream
    assert (out == 5).all() == waits
    assert (sim.stats()["pending_ops"] > 0) != waits         # a non-blocking stream's work is still queued
    ok(sim.cuMemcpyHtoD(d, np.full(64, 7, np.uint8).ctypes.data, 64))
    ok(sim.cuStreamSynchronize(s))
    ok(sim.cuMemcpyDtoH(out.ctypes.data, d, 64))
    assert (out == (7 if waits else 5)).all()               # non-blocking: the memset ran after the copy landed


def test_an_async_copy_to_pageable_memory_completes_in_its_stream_order(raw):
    s1 = ok(sim.cuStreamCreate(1))
    s2 = ok(sim.cuStreamCreate(1))
    d = _pool_block(64, s1)
    ok(sim.cuMemsetD8Async(d, 3, 64, s1))
    ok(sim.cuMemsetD8Async(d, 4, 32, s2))                   # another stream's work is not run by it
    out = np.zeros(64, np.uint8)
    ok(sim.cuMemcpyDtoHAsync(out.ctypes.data, d, 64, s1))   # pageable destination: returns once done
    assert (out == 3).all()
    assert sim.stats()["pending_ops"] == 1


# ------------------------------------------------------------------------------ contexts per thread
def _in_new_thread(fn):
    box = {}

    def body():
        try:
            box["value"] = fn()
        except BaseException as e:   # noqa: BLE001 -- handed back to the test's thread
            box["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_zero_as_a_new_threads_first_call(driver):
    x = rawdev.ones(100).cuda()
    _in_new_thread(x.zero_)
    assert x.cpu().numpy().tolist() == [0.0] * 100


def test_a_kernel_launch_as_a_new_threads_first_call(dev):
    n = 300
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    bx, by = upload(dev, x), upload(dev, y)
    k = kernels.get_kernel(dev, "saxpy")
    _in_new_thread(lambda: k.launch((n + 255) // 256, 256, [by.ptr, bx.ptr, np.float32(3), n]))
    assert relerr(download(by, y), 3 * x.astype(np.float64) + y) < 1e-6


def test_model_cuda_and_training_in_a_new_thread(driver):
    get_device(0)   # the device is opened on this thread; the other thread has no current context
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    ref = model(rawdev.ones(2, 8)).detach().numpy()

    def work():
        model.cuda()
        out = model(rawdev.ones(2, 8).cuda())
        out.sum().backward()
        return out.detach().cpu().numpy(), model[0].weight.grad.cpu().numpy()

    out, grad = _in_new_thread(work)
    assert np.allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert np.isfinite(grad).all() and grad.any()


def test_stream_and_event_calls_from_a_new_thread(dev):
    ev = dev.compute_stream.record_event()

    def work():
        dev.copy_stream.wait_event(ev)
        e2 = dev.copy_stream.record_event()
        e2.synchronize()
        return ev.query() and dev.compute_stream.query()

    assert _in_new_thread(work)


def test_the_simulator_needs_a_current_context_in_each_thread(raw):
    got = _in_new_thread(lambda: (sim.cuStreamCreate(0)[0], sim.cuMemsetD8Async(0, 0, 0, 0)[0]))
    assert got == (R.CUDA_ERROR_INVALID_CONTEXT, R.CUDA_ERROR_INVALID_CONTEXT)
