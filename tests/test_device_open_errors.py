"""A driver call that fails while rawdev opens the device says what rawdev was doing (which step of opening which
device), not only which call failed."""
import pytest
import rawdev
from rawdev import sim
from rawdev.errors import CudaError
from rawdev.runtime import get_device, reset_for_tests


@pytest.fixture
def fresh():
    reset_for_tests("sim")
    yield
    sim.clear_faults()
    reset_for_tests("sim")


@pytest.mark.parametrize("fn,nth,doing", [
    ("cuDeviceGetName", 1, "opening cuda:0: reading the device's name"),
    ("cuDeviceGetAttribute", 1, "opening cuda:0: reading its compute capability"),
    ("cuDeviceGetAttribute", 2, "opening cuda:0: reading its compute capability"),
    ("cuDeviceGetAttribute", 3, "opening cuda:0: reading its multiprocessor count"),
    ("cuDeviceTotalMem", 1, "opening cuda:0: reading its total memory"),
    ("cuCtxSetCurrent", 1, "making cuda:0 current"),
    ("cuMemPoolCreate", 1, "creating rawdev's memory pool on cuda:0"),
])
def test_a_failed_call_while_opening_the_device_says_what_rawdev_was_doing(fresh, fn, nth, doing):
    rawdev.runtime.device_count()
    sim.inject_fault(fn, 1, nth=nth)   # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as e:
        get_device(0)
    assert e.value.call == fn and e.value.context == doing
    assert f"{fn} failed: CUDA_ERROR_INVALID_VALUE (1)" in str(e.value) and f"while {doing}" in str(e.value)
    assert get_device(0).name   # the next open works


def test_reading_a_pool_attribute_names_it(fresh):
    dev = get_device(0)
    sim.inject_fault("cuMemPoolGetAttribute", 1)
    with pytest.raises(CudaError, match="while reading the reserved bytes of cuda:0's memory pool"):
        dev.pool_attribute("reserved")
