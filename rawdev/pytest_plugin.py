"""rawdev's pytest plugin: test GPU code on a real GPU when there is one, on rawdev's simulated GPU otherwise.

Installed with rawdev (the `pytest11` entry point `rawdev.pytest_plugin`); a project without the install can
add `pytest_plugins = ["rawdev.pytest_plugin"]` to its top conftest.py (both together are fine).

Option: `--rawdev-device=auto|sim|cuda` (default auto: the GPU when the CUDA driver sees one, else the
simulator; sim: the simulator even on a GPU machine; cuda: a real GPU, a usage error without one).

Ini option: `rawdev_workers = auto|N` shares a plain `pytest` (no test paths named, no `-n`) out to N pytest-xdist
workers (auto: the usable cores, at most 4) when pytest-xdist is installed.

Markers:
  * `gpu`: needs a real GPU; skipped with the reason otherwise (`RAWDEV_GPU_TESTS_ON=sim` runs them on the
    simulator instead: a dry run of a GPU job).
  * `cuda`: runs on the GPU when there is one, on the simulator otherwise (a fresh, power-on device either way).
  * `cc(">=8.0")`: the compute capability the test needs: the simulator pretends to be the oldest one that
    fits (8.0 here); on a GPU the test is skipped when the GPU's does not fit. Several specs: all must hold.
  * `devices(n)`: needs n devices: the simulator simulates n of them; on GPUs, skipped when fewer.

Fixtures: `device` (a `rawdev.device("cuda")` on the chosen driver), `sim` (the `rawdev.sim` module, always the
simulator: `sim.inject_fault("cuMemAllocFromPoolAsync", 2)`, `sim.stats()`, `sim.last_error_detail()`; armed
faults are cleared afterwards), `sanitize` (the simulator with every launch checked at once: a kernel
touching memory outside its allocations, a misaligned access, a divergent barrier, a failed device assert, a
read of never-written memory, a race between threads or a shuffle/vote naming inactive lanes raises from the
launch that did it, with kernel, block, thread and address; `sanitize.findings` lists them).

At the end, one summary line (when a device was used): kernels launched, sanitizer findings, simulator time.
"""
from __future__ import annotations

import functools
import os
import re
import sys
import time

import pytest

GPU_CCS = [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0)]   # what the simulator can pretend to be, oldest first
_SIM_ENV = ("RAWDEV_SIM_CC", "RAWDEV_SIM_DEVICES", "CUDA_LAUNCH_BLOCKING")
_state_key = pytest.StashKey[dict]()
_item_key = pytest.StashKey[dict]()


@functools.cache
def real_gpu():
    """None when a real GPU is usable here, else the reason it is not (a string)."""
    from rawdev.errors import CudaError
    from rawdev.runtime import seam
    try:
        seam._load_cuda()
        return None
    except CudaError as e:
        return str(e)


def _gpu_reason(config):
    if config.getoption("rawdev_device") == "sim":
        return "--rawdev-device=sim"
    why = real_gpu()
    return why.split(": install")[0] if why else None


def pytest_addoption(parser):
    group = parser.getgroup("rawdev", "rawdev: GPU code on a GPU or on the simulated GPU")
    group.addoption("--rawdev-device", dest="rawdev_device", choices=("auto", "sim", "cuda"),
                    default=os.environ.get("RAWDEV_TEST_DEVICE", "auto"),
                    help="where `cuda`-marked tests and the `device` fixture run: auto (the GPU if there is one, "
                         "else the simulator), sim, or cuda (default: auto, or $RAWDEV_TEST_DEVICE)")
    parser.addini("rawdev_workers", "a plain `pytest` (no test paths named) runs on this many pytest-xdist workers "
                  "when pytest-xdist is installed: `auto` (the usable cores, at most 4) or a number; empty: serial",
                  default="")


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return os.cpu_count() or 1


# A whole-suite run on a simulated GPU is CPU-bound in one process; pytest-xdist's workers share it out. Only for a
# plain `pytest` of the project's suite: a run that names tests, asks for a debugger or unbuffered output, collects
# only, already chose its workers, or runs inside a worker (a test that starts pytest) stays as it was asked.
_SERIAL_FLAGS = {"-n", "--numprocesses", "-d", "--dist", "--pdb", "--trace", "-s", "--capture=no", "--collect-only",
                 "--co", "--setup-plan", "--setup-only", "--fixtures", "--markers", "--help", "-h", "--version"}


_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_load_initial_conftests(early_config, parser, args):
    """Prepend `-n N --dist worksteal` to a plain run when the project's ini asks for workers (`rawdev_workers`), and
    give the workers one BLAS thread each (OPENBLAS/OMP/MKL_NUM_THREADS, where the environment sets none)."""
    want = str(early_config.getini("rawdev_workers") or "").strip()
    if not want or want == "0" or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if not early_config.pluginmanager.hasplugin("xdist"):
        return
    if getattr(early_config.known_args_namespace, "file_or_dir", None):
        return
    for a in args:
        if a.split("=", 1)[0] in _SERIAL_FLAGS or (a.startswith("-n") and a[2:].isdigit()):
            return
    n = min(_usable_cores(), 4) if want == "auto" else int(want)
    if n > 1:
        args[:] = ["-n", str(n), "--dist", "worksteal"] + args
        # the workers fill the cores: a BLAS thread pool per worker would only compete with the other workers
        # (OpenBLAS's idle threads spin), so each worker, started after this with this environment, gets one
        # thread unless the user chose otherwise
        for var in _BLAS_THREADS:
            os.environ.setdefault(var, "1")


def pytest_configure(config):
    for line in ("gpu: needs a real NVIDIA GPU and driver (skipped with a reason otherwise)",
                 "cuda: runs on the GPU when there is one, on rawdev's simulated GPU otherwise",
                 "cc(spec, ...): the compute capability needed, e.g. cc('>=8.0'): simulated on the simulator, "
                 "skipped on a GPU that lacks it",
                 "devices(n): needs n CUDA devices: simulated on the simulator, skipped on fewer GPUs"):
        config.addinivalue_line("markers", line)
    if config.getoption("rawdev_device") == "cuda" and real_gpu():
        raise pytest.UsageError(f"--rawdev-device=cuda, but no GPU is usable: {real_gpu()}")
    config.stash[_state_key] = {"launches": 0, "failed": 0, "sim_seconds": 0.0, "findings": 0, "drivers": set(),
                                "counter": None}


def _count_launches(config):
    """Start counting launches once rawdev is imported (importing it here would cost every pytest session of a
    project that merely has rawdev installed a few seconds)."""
    state = config.stash[_state_key]
    if state["counter"] is None and "rawdev.runtime.seam" in sys.modules:
        from rawdev.runtime import seam
        state["counter"] = _LaunchCounter(state)
        seam._tracers.append(state["counter"])


def pytest_unconfigure(config):
    state = config.stash.get(_state_key, None)
    if state is not None and state["counter"] is not None:
        from rawdev.runtime import seam
        if state["counter"] in seam._tracers:
            seam._tracers.remove(state["counter"])


class _LaunchCounter:
    """A seam tracer that only counts kernel launches (rawdev.trace() would keep every call of the session)."""

    def __init__(self, state):
        self.state = state

    def _record(self, fn, nbytes, stream, owner, seconds, result):
        if fn == "cuLaunchKernel":
            self.state["launches" if not result else "failed"] += 1


# ------------------------------------------------------------------------------------------ markers
def _parse_cc(spec):
    m = re.fullmatch(r"\s*(>=|<=|==|>|<|=)?\s*(\d+)\.(\d+)\s*", str(spec))
    if not m:
        raise pytest.UsageError(f"cc({spec!r}): expected e.g. '>=8.0', '<9.0' or '8.6'")
    op = {"=": "==", None: "=="}.get(m[1], m[1])
    return op, (int(m[2]), int(m[3]))


def _cc_fits(cc, specs):
    ops = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
           ">": lambda a, b: a > b, "<": lambda a, b: a < b}
    return all(ops[op](cc, want) for op, want in specs)


def _uses(item, *names):
    return bool(set(getattr(item, "fixturenames", ())) & set(names))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") and os.environ.get("RAWDEV_GPU_TESTS_ON") != "sim":
        why = _gpu_reason(item.config)
        if why:
            pytest.skip(f"needs a real GPU: {why}")
    if any(item.get_closest_marker(m) for m in ("cuda", "cc", "devices")):
        _prepare(item)


def _prepare(item):
    """Choose the driver for a test (once): the simulator when forced (the sim or sanitize fixture) or when there
    is no GPU, configured as its cc/devices markers ask; then a fresh device."""
    if item.stash.get(_item_key, None) is not None:
        return
    config = item.config
    force_sim = _uses(item, "sim", "sanitize")
    on_sim = force_sim or _gpu_reason(config) is not None
    specs = [_parse_cc(s) for m in item.iter_markers("cc") for s in m.args]
    ndev = max([int(m.args[0]) for m in item.iter_markers("devices")] or [1])
    env = {}
    if on_sim:
        if specs:
            fit = [cc for cc in GPU_CCS if _cc_fits(cc, specs)]
            if not fit:
                pytest.skip(f"the simulator cannot be a GPU of compute capability {specs}")
            env["RAWDEV_SIM_CC"] = f"{fit[0][0]}.{fit[0][1]}"
        if ndev > int(os.environ.get("RAWDEV_SIM_DEVICES", "1")):
            env["RAWDEV_SIM_DEVICES"] = str(ndev)
        if _uses(item, "sanitize"):
            env["CUDA_LAUNCH_BLOCKING"] = "1"
    item.stash[_item_key] = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim" if on_sim else "cuda")
    _count_launches(config)
    config.stash[_state_key]["drivers"].add("sim" if on_sim else "cuda")
    if not on_sim:
        import rawdev
        n = rawdev.cuda.device_count()
        if n < ndev:
            pytest.skip(f"needs {ndev} CUDA devices, this machine has {n}")
        cc = rawdev.cuda.get_device_capability(0)
        if specs and not _cc_fits(cc, specs):
            pytest.skip(f"needs compute capability {' and '.join(f'{op}{v[0]}.{v[1]}' for op, v in specs)}; "
                        f"the GPU is {cc[0]}.{cc[1]}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if "rawdev" not in sys.modules:   # a test that does not use rawdev: nothing to measure
        yield
        return
    _count_launches(item.config)
    import rawdev.sim as sim
    before, t0 = sim.stats()["clock_ms"], time.perf_counter()
    yield
    after = sim.stats()["clock_ms"]
    from rawdev.runtime import seam
    if seam._name in ("sim", "cuda"):   # the driver the test used, whoever chose it
        item.config.stash[_state_key]["drivers"].add(seam._name)
    if after or before:   # the simulated clock moved (only the simulator runs work)
        spent = (after - before if after >= before else after) / 1e3
        item.config.stash[_state_key]["sim_seconds"] += min(max(spent, 0.0), time.perf_counter() - t0)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    saved = item.stash.get(_item_key, None)
    if not saved:   # not prepared, or nothing in the environment changed
        return
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    from rawdev.runtime import reset_for_tests, seam
    if seam._name == "sim":   # the next test must not inherit a simulated cc, device count or blocking launches
        reset_for_tests("sim")


# ----------------------------------------------------------------------------------------- fixtures
@pytest.fixture
def device(request):
    """`rawdev.device("cuda")` on the chosen driver: the GPU, or a power-on simulated GPU."""
    import rawdev
    _prepare(request.node)
    return rawdev.device("cuda", 0)


@pytest.fixture
def sim(request):
    """The `rawdev.sim` module (the simulated GPU the test runs on), for fault injection and its counters.

    Example:
        >>> def test_oom_is_reported(sim, device):
        ...     sim.inject_fault("cuMemAllocFromPoolAsync", 2)   # CUDA_ERROR_OUT_OF_MEMORY
        ...     with pytest.raises(rawdev.OutOfMemoryError):
        ...         rawdev.zeros(10, device=device)
    """
    import rawdev.sim as simulator
    _prepare(request.node)
    yield simulator
    simulator.clear_faults()


class Sanitizer:
    """What the `sanitize` fixture gives a test: the simulator's memory checker, reporting at the launch."""

    def __init__(self) -> None:
        self.findings: list[str] = []

    def check(self):
        """Run all queued work now; a kernel's fault raises here (with its detail) and is added to `findings`."""
        import rawdev
        from rawdev.errors import CudaError
        try:
            rawdev.cuda.synchronize()
        except CudaError as e:
            self.findings.append(str(e))
            raise

    def __repr__(self):
        return f"<rawdev sanitizer: {len(self.findings)} finding(s)>"


@pytest.fixture
def sanitize(request):
    """Checked launches on the simulator: every launch runs at once and a kernel that reads or writes outside its
    allocations, misaligns an access, diverges at a barrier or fails a device assert (memcheck), reads device
    memory nothing wrote (initcheck), races between threads (racecheck) or shuffles/votes with a membermask
    naming inactive lanes (synccheck) raises from that launch, naming kernel, block, thread and address (see
    rawdev.sim.sanitize). Findings (caught or not) count in the session's summary.

    Example:
        >>> def test_no_out_of_bounds(sanitize, device):
        ...     my_kernel((4,), (256,), (x, n))   # raises IllegalAddressError on an overrun
    """
    import rawdev.sim as simulator
    from rawdev.runtime import seam
    _prepare(request.node)
    checker = Sanitizer()
    with simulator.sanitize():   # every checker: initcheck, racecheck and synccheck besides memcheck
        yield checker
    if seam._name == "sim":
        code = simulator.sticky_error()
        if code is not None:
            detail = simulator.last_error_detail() or ""
            if detail not in checker.findings:
                checker.findings.append(f"{code.name}: {detail}")
    request.config.stash[_state_key]["findings"] += len(checker.findings)


# -------------------------------------------------------------------------------------------- summary
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(_state_key, None)
    if state is None or not (state["drivers"] or state["launches"] or state["failed"]):
        return   # a session that never touched a device (a project that merely has rawdev installed): no line
    where = " and ".join(sorted(state["drivers"])) or "-"
    n = state["launches"]
    line = (f"rawdev: {n} kernel launch{'' if n == 1 else 'es'}"
            + (f" ({state['failed']} failed)" if state["failed"] else "")
            + f", devices used: {where}, sanitizer findings: {state['findings']}, "
            f"simulator time: {state['sim_seconds']:.2f} s")
    terminalreporter.write_line(line)
