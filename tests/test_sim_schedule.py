"""The simulated driver's strictness where a GPU is strict: RAWDEV_SIM_SCHEDULE (eager, lazy, random:SEED), and the
calls a stream capture forbids (module loads, event and stream queries and synchronizes during a global capture)."""
import threading

import pytest
from cuda.bindings import driver as drv
from rawdev import sim
from rawdev.runtime import kernels
from rawdev.sim import driver as simdrv

R = drv.CUresult
NB = drv.CUstream_flags.CU_STREAM_NON_BLOCKING.value


def ok(res):
    assert res[0] == R.CUDA_SUCCESS, (res[0], sim.last_error_detail())
    return None if len(res) == 1 else res[1] if len(res) == 2 else res[1:]


def power_on(monkeypatch, schedule):
    monkeypatch.setenv("RAWDEV_SIM_SCHEDULE", schedule)
    sim.reset()
    ok(sim.cuInit(0))
    ok(sim.cuCtxSetCurrent(ok(sim.cuDevicePrimaryCtxRetain(0))))


@pytest.fixture(autouse=True)
def _power_off(monkeypatch):
    yield
    monkeypatch.delenv("RAWDEV_SIM_SCHEDULE", raising=False)
    sim.reset()


def _pool():
    props = drv.CUmemPoolProps()
    props.allocType = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = 0
    return ok(sim.cuMemPoolCreate(props))


def _two_writers():
    """Two non-blocking streams each set the same byte, with nothing ordering them; returns the byte after a
    context synchronize (which of the two ran last)."""
    a, b = ok(sim.cuStreamCreate(NB)), ok(sim.cuStreamCreate(NB))
    ptr = ok(sim.cuMemAllocFromPoolAsync(1, _pool(), a))
    ok(sim.cuMemsetD8Async(ptr, 1, 1, a))
    ok(sim.cuMemsetD8Async(ptr, 2, 1, b))
    ok(sim.cuCtxSynchronize())
    return sim.peek(ptr, 1)[0]


def test_the_schedule_setting_is_checked(monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_SCHEDULE", "sometimes")
    with pytest.raises(ValueError, match="expected eager, lazy or random:SEED"):
        sim.reset()
    monkeypatch.setenv("RAWDEV_SIM_SCHEDULE", "random:x")
    with pytest.raises(ValueError, match="random:SEED"):
        sim.reset()


def test_random_schedules_run_independent_streams_in_both_orders(monkeypatch):
    seen = {}
    for seed in range(24):
        power_on(monkeypatch, f"random:{seed}")
        seen.setdefault(_two_writers(), seed)
    assert set(seen) == {1, 2}, seen
    for seed in seen.values():   # a seed replays its order
        power_on(monkeypatch, f"random:{seed}")
        first = _two_writers()
        power_on(monkeypatch, f"random:{seed}")
        assert _two_writers() == first


@pytest.mark.parametrize("schedule", ["lazy", "random:3"])
def test_queries_never_run_pending_work_outside_eager(monkeypatch, schedule):
    power_on(monkeypatch, schedule)
    s = ok(sim.cuStreamCreate(NB))
    ptr = ok(sim.cuMemAllocFromPoolAsync(4, _pool(), s))
    ok(sim.cuMemsetD8Async(ptr, 7, 4, s))
    ev = ok(sim.cuEventCreate(2))
    ok(sim.cuEventRecord(ev, s))
    for _ in range(3):   # however often it is asked, nothing ran
        assert sim.cuEventQuery(ev)[0] == R.CUDA_ERROR_NOT_READY
        assert sim.cuStreamQuery(s)[0] == R.CUDA_ERROR_NOT_READY
    assert sim.peek(ptr, 4) != b"\x07" * 4
    ok(sim.cuEventSynchronize(ev))            # waiting for it runs it
    assert sim.peek(ptr, 4) == b"\x07" * 4
    ok(sim.cuEventQuery(ev))
    ok(sim.cuStreamQuery(s))


def test_eager_queries_still_make_progress(monkeypatch):
    power_on(monkeypatch, "eager")
    s = ok(sim.cuStreamCreate(NB))
    ptr = ok(sim.cuMemAllocFromPoolAsync(4, _pool(), s))
    ok(sim.cuMemsetD8Async(ptr, 7, 4, s))
    assert sim.cuStreamQuery(s)[0] == R.CUDA_ERROR_NOT_READY
    ok(sim.cuStreamQuery(s))                  # the first query ran it
    assert sim.peek(ptr, 4) == b"\x07" * 4


def _ptx():
    return (kernels.ptx_files() / "testkernels.ptx").read_text().encode() + b"\0"


def _capturing_stream(mode):
    s = ok(sim.cuStreamCreate(NB))
    ok(sim.cuStreamBeginCapture(s, mode))
    return s


def _ended_invalidated(s):
    res = sim.cuStreamEndCapture(s)
    return res[0] == R.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED


@pytest.mark.parametrize("call", ["module load", "event query", "stream query", "event synchronize",
                                  "stream synchronize"])
def test_a_global_capture_refuses_unsafe_calls_and_is_invalidated(monkeypatch, call):
    power_on(monkeypatch, "eager")
    other = ok(sim.cuStreamCreate(NB))        # not capturing: still refused, as the driver does in global mode
    ev = ok(sim.cuEventCreate(2))
    ok(sim.cuEventRecord(ev, other))
    s = _capturing_stream(0)
    res = {"module load": lambda: sim.cuModuleLoadDataEx(_ptx(), 0, [], []),
           "event query": lambda: sim.cuEventQuery(ev),
           "stream query": lambda: sim.cuStreamQuery(other),
           "event synchronize": lambda: sim.cuEventSynchronize(ev),
           "stream synchronize": lambda: sim.cuStreamSynchronize(other)}[call]()
    assert res[0] == R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, res
    assert "global mode (the capture is invalidated)" in sim.last_error_detail()
    assert _ended_invalidated(s)
    ok(sim.cuModuleLoadDataEx(_ptx(), 0, [], []))   # after the capture: allowed again


def test_thread_local_capture_forbids_only_its_own_thread(monkeypatch):
    power_on(monkeypatch, "eager")
    s = _capturing_stream(1)
    ctx = ok(sim.cuCtxGetCurrent())
    out = []

    def other_thread():
        ok(sim.cuCtxSetCurrent(ctx))
        out.append(sim.cuModuleLoadDataEx(_ptx(), 0, [], [])[0])

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert out == [R.CUDA_SUCCESS]
    assert sim.cuModuleLoadDataEx(_ptx(), 0, [], [])[0] == R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    assert _ended_invalidated(s)


def test_relaxed_capture_allows_module_loads(monkeypatch):
    power_on(monkeypatch, "eager")
    s = _capturing_stream(2)
    ok(sim.cuModuleLoadDataEx(_ptx(), 0, [], []))
    g = ok(sim.cuStreamEndCapture(s))
    ok(sim.cuGraphDestroy(g))
    assert simdrv._S.cfg["schedule"] == ("eager", None)
