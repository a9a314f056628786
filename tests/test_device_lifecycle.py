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
