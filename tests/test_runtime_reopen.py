"""Reopening a device whose context survives keeps the modules loaded into it (no second JIT of the PTX);
a power-cycled simulated GPU loads them again."""
from rawdev import sim
from rawdev.runtime import device, get_device, kernels, reset_for_tests


def _loads():
    return sim.stats()["calls"].get("cuModuleLoadDataEx", 0)


def test_modules_survive_a_device_reopen_in_the_same_context():
    reset_for_tests("sim")
    d = get_device(0)
    kernels.get_kernel(d, "saxpy")
    assert _loads() == 1
    device._forget_devices()                               # what each test's fixture does on the real driver
    kernels._forget_modules(contexts_survive=True)
    d2 = get_device(0)
    assert d2 is not d and int(d2.context) == int(d.context)
    k = kernels.get_kernel(d2, "saxpy")
    assert _loads() == 1 and k.module.device is d2        # the loaded module, bound to the reopened device
    k.launch(1, 32, [0, 0, 1.0, 0])
    d2.synchronize()
    reset_for_tests("sim")                                 # a power-cycled GPU: its contexts are new
    kernels.get_kernel(get_device(0), "saxpy")
    assert _loads() == 1 and sim.stats()["calls"]["cuModuleLoadDataEx"] == 1   # counters restart with the GPU
