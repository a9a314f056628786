"""The `device` fixture of the autograd, hook and namespace tests: each test runs on the cpu, on the simulated GPU
with every op output poisoned (NaN) before its kernel writes it, and on a real GPU where there is one. A test module
takes it with `from _poisoned_device import device`."""
import pytest
import rawdev.ops.cuda as cuda_ops

__all__ = ["device"]


@pytest.fixture(params=["cpu", "sim", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    """'cpu', or 'cuda' on the simulator (outputs poisoned before kernels run), or on a real GPU when present."""
    if request.param == "cpu":
        yield "cpu"
        return
    import os

    from rawdev.runtime import reset_for_tests

    from conftest import real_gpu
    name = request.param
    if name == "gpu":
        if os.environ.get("RAWDEV_GPU_TESTS_ON") == "sim":
            name = "sim"
        elif real_gpu():
            pytest.skip(f"needs a real GPU: {real_gpu().split(': install')[0]}")
        else:
            name = "cuda"
    reset_for_tests(name)
    cuda_ops.set_poison(True)
    yield "cuda"
    cuda_ops.set_poison(False)
