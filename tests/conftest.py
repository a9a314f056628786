"""Shared fixtures. Device tests take the `driver` fixture: always on the simulator, and on a real GPU
too when one is present (those cases carry the `gpu` marker, so `pytest -m gpu` selects them)."""
import functools
import os

import pytest
from rawdev.runtime import reset_for_tests


@functools.cache
def real_gpu():
    """None when a real GPU is usable here, else the reason it is not."""
    from rawdev.errors import CudaError
    from rawdev.runtime import seam
    try:
        seam._load_cuda()
        return None
    except CudaError as e:
        return str(e)


@pytest.fixture(params=["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def driver(request):
    """The driver name ('sim' or 'cuda'), freshly selected: a power-on simulated GPU, or the real one."""
    name = request.param
    if name == "cuda" and os.environ.get("RAWDEV_GPU_TESTS_ON") == "sim":
        name = "sim"   # tools/gpu_check --driver sim: exercise the gpu-marked cases on the simulator
    elif name == "cuda" and real_gpu():
        pytest.skip(f"needs a real GPU: {real_gpu().split(': install')[0]}")
    reset_for_tests(name)
    yield name


@pytest.fixture
def dev(driver):
    from rawdev.runtime import get_device
    return get_device(0)
