"""Shared fixtures. rawdev's pytest plugin (rawdev/pytest_plugin.py) gives the markers (gpu, cuda, cc, devices),
the `device`/`sim`/`sanitize` fixtures and the session summary; it is loaded here too, for a checkout that runs
without installing rawdev. Device tests take the `driver` fixture: always on the simulator, and on a real GPU
too when one is present (those cases carry the `gpu` marker, which the plugin skips without a GPU, so
`pytest -m gpu` selects them)."""
import os
import sys
import zlib

import numpy as np
import pytest
from rawdev.random import manual_seed
from rawdev.runtime import reset_for_tests

pytest_plugins = ["rawdev.pytest_plugin"]


# ------------------------------------------------------------------------------ replayable random inputs
# Every unseeded np.random.default_rng() a test file makes (at import, or inside a test through _refs.rng())
# draws from the run's base seed: at import from (base, file, n-th call), inside a test from (base, test id,
# n-th call), and module-level generators are re-seeded from (base, test id) before each test, so one test's
# inputs do not depend on which tests ran before it. The base seed is new each run unless given.
_unseeded_rng = np.random.default_rng
_seed = {"base": 0, "key": 0, "calls": {}}


def _key(text):
    return zlib.crc32(text.encode())


def _seeded_default_rng(seed=None):
    if seed is not None:
        return _unseeded_rng(seed)
    key = _seed["key"]
    if key == 0:   # at import: key by the calling file
        key = _key(os.path.basename(sys._getframe(1).f_code.co_filename))
    n = _seed["calls"][key] = _seed["calls"].get(key, 0) + 1
    return _unseeded_rng([_seed["base"], key, n])


def pytest_addoption(parser):
    parser.addoption("--rawdev-seed", type=int, default=None,
                     help="base seed of the tests' random inputs (default: RAWDEV_TEST_SEED, else a new one)")


def pytest_configure(config):
    base = config.getoption("--rawdev-seed")
    if base is None and hasattr(config, "workerinput"):   # a pytest-xdist worker: the controller's seed
        base = config.workerinput.get("rawdev_seed")
    if base is None and os.environ.get("RAWDEV_TEST_SEED"):
        base = int(os.environ["RAWDEV_TEST_SEED"])
    if base is None:
        base = int(_unseeded_rng().integers(1 << 31))
    _seed["base"] = base
    np.random.default_rng = _seeded_default_rng


def pytest_unconfigure(config):
    np.random.default_rng = _unseeded_rng


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: every worker draws from the base seed the run printed, so its replay line holds for them all."""
    node.workerinput["rawdev_seed"] = _seed["base"]


def pytest_report_header(config):
    return f"random test inputs: --rawdev-seed={_seed['base']}"


@pytest.fixture(autouse=True)
def _replayable_inputs(request):
    key = _seed["key"] = _key(request.node.nodeid)
    _seed["calls"][key] = 0
    for v in list(vars(request.module).values()) if request.module is not None else ():
        if isinstance(v, np.random.Generator):
            v.bit_generator.state = type(v.bit_generator)([_seed["base"], key]).state
    # rawdev's own generators too (a parameter's init, dropout, spectral_norm's start vector): seeded from
    # (base, test id), so a test draws the same whichever tests ran before it in this process
    manual_seed(int(np.random.SeedSequence([_seed["base"], key]).generate_state(1, np.uint64)[0] >> 1))
    yield
    _seed["key"] = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        rep.sections.append(("random inputs", f"replay: pytest '{item.nodeid}' --rawdev-seed={_seed['base']}"))


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
