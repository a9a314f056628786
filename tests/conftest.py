"""Shared fixtures. rawdev's pytest plugin (rawdev/pytest_plugin.py) gives the markers (gpu, cuda, cc, devices),
the `device`/`sim`/`sanitize` fixtures and the session summary; it is loaded here too, for a checkout that runs
without installing rawdev. Device tests take the `driver` fixture: always on the simulator, and on a real GPU
too when one is present (those cases carry the `gpu` marker, which the plugin skips without a GPU, so
`pytest -m gpu` selects them)."""
import os

import pytest
from rawdev.runtime import reset_for_tests

pytest_plugins = ["rawdev.pytest_plugin"]


def real_gpu():
    """None when a real GPU is usable here, else the reason (the plugin's check; tests import it from here)."""
    from rawdev.pytest_plugin import real_gpu as check  # imported here: pytest imports the plugin module first
    return check()


@pytest.fixture(params=["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def driver(request):
    """The driver name ('sim' or 'cuda'), freshly selected: a power-on simulated GPU, or the real one."""
    name = request.param
    if name == "cuda" and os.environ.get("RAWDEV_GPU_TESTS_ON") == "sim":
        name = "sim"   # tools/gpu_check --driver sim: exercise the gpu-marked cases on the simulator
    reset_for_tests(name)
    yield name


@pytest.fixture
def dev(driver):
    from rawdev.runtime import get_device
    return get_device(0)
