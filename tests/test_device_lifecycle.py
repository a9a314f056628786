"""Opening, reopening and resetting the device: the device count is asked once, a failed first open gives
back everything it took, and rawdev.sim.reset() alone leaves rawdev usable while tensors from before the
reset are refused by name instead of running on addresses that are gone."""
import numpy as np
import pytest
import rawdev
from rawdev import nn, optim, sim
from rawdev.errors import CudaError
from rawdev.runtime import get_device, reset_for_tests
from rawdev.sim import driver as simdrv


@pytest.fixture
def fresh():
    reset_for_tests("sim")
    yield
    sim.clear_faults()
    reset_for_tests("sim")


def _calls(name):
    return sim.stats()["calls"].get(name, 0)


def test_device_count_is_asked_once_not_per_op(fresh):
    rawdev.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = rawdev.tensor(np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)).to("cuda")
    y = rawdev.tensor(np.array([0, 1, 2, 3, 0])).to("cuda")

    def step():
        opt.zero_grad()
        loss = nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    step()
    before = _calls("cuDeviceGetCount")
    for _ in range(3):
        step()
    assert _calls("cuDeviceGetCount") == before
    assert rawdev.cuda.device_count() == 1 and rawdev.cuda.is_available()


OPEN_CALLS = [("cuCtxSetCurrent", 1), ("cuDeviceGetName", 1), ("cuDeviceGetAttribute", 2), ("cuDeviceTotalMem", 1),
              ("cuMemPoolCreate", 1), ("cuMemPoolSetAttribute", 1), ("cuStreamCreate", 1), ("cuStreamCreate", 2)]


@pytest.mark.parametrize("fn,nth", OPEN_CALLS)
def test_failed_first_open_leaks_nothing_on_reopen(fresh, fn, nth):
    rawdev.runtime.device_count()
    sim.inject_fault(fn, 1, nth=nth)   # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as e:
        get_device(0)
    assert e.value.call == fn
    dev = get_device(0)
    S = simdrv._S
    assert S.devices[0].refcount == 1                                   # one retain, the open that worked
    assert [p for p in S.pools.values() if not p.destroyed] == [S.pools[int(dev.pool)]]
    assert sorted(h for h, s in S.streams.items() if not s.destroyed) == \
        sorted([int(dev.compute_stream.handle), int(dev.copy_stream.handle)])
    t = rawdev.tensor(np.arange(6, dtype=np.float32)).to("cuda")
    assert (t * 2).cpu().tolist() == [0, 2, 4, 6, 8, 10]


def test_sim_reset_alone_leaves_rawdev_usable_and_refuses_stale_tensors(fresh):
    old = rawdev.tensor(np.arange(4, dtype=np.float32)).to("cuda")
    model = nn.Linear(3, 2).to("cuda")
    sim.reset()                          # what a test or a notebook might do, without reset_for_tests
    new = rawdev.tensor(np.arange(4, dtype=np.float32)).to("cuda")
    assert (new + new).cpu().tolist() == [0, 2, 4, 6]
    with pytest.raises(CudaError, match=r"before rawdev.sim.reset\(\)"):
        (old + new).cpu()
    with pytest.raises(CudaError, match=r"before rawdev.sim.reset\(\)"):
        model(rawdev.tensor(np.ones((1, 3), np.float32)).to("cuda")).cpu()
    with pytest.raises(CudaError, match=r"before rawdev.sim.reset\(\)"):
        old.cpu()
    assert sim.sticky_error() is None    # refused up front, nothing ran: the device stays usable
    assert (new * 3).cpu().tolist() == [0, 3, 6, 9]
    assert "rawdev CUDA memory summary" in rawdev.cuda.memory_summary()


def _open_and_use():
    dev = get_device(0)
    x = rawdev.arange(1000, dtype=rawdev.float32).to("cuda")
    y = (x * 2).sum()
    assert float(y) == 999000.0
    keep = rawdev.ones(10).to("cuda")   # still held when the device is dropped: its free is queued afterwards
    return dev, keep


def test_resetting_for_the_next_gpu_test_destroys_pools_and_streams(driver):
    """reset_for_tests("cuda") between GPU tests gives back each device's pool and streams and issues its queued
    frees, so ~1,800 tests do not leave ~1,800 pools behind. On the simulator the same step (close, forget) runs
    against the simulated driver, whose live pools and streams are counted."""
    from rawdev.runtime import device, kernels, seam

    def cycle():
        if seam.driver_name() == "cuda":
            reset_for_tests("cuda")
        else:
            device._close_devices()
            device._forget_devices()
            kernels._forget_modules(contexts_survive=True)

    def live():
        """(pools not destroyed, streams not destroyed) in the simulated driver."""
        S = simdrv._S
        return len(S.pools), sum(1 for d in S.devices for s in d.streams if not s.destroyed)

    held = [_open_and_use()]
    cycle()
    held.append(_open_and_use())
    cycle()
    sim_driver = seam.driver_name() == "sim"
    after_one = live() if sim_driver else None
    if not sim_driver:
        from rawdev.runtime import memory
        free_one = memory.mem_get_info(get_device(0))[0]
    for _ in range(20):
        held.append(_open_and_use())
        cycle()
    held.clear()
    if sim_driver:
        assert live() == after_one == (0, 0), (after_one, live())
    else:
        free_many = memory.mem_get_info(get_device(0))[0]
        assert free_many >= free_one - (64 << 20), (free_one, free_many)   # no pool (and its reserve) per reset
