"""The runtime over the driver seam: copies on streams, events, kernels, errors."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cuda.bindings.driver import CUresult
from rawdev.errors import CudaError, IllegalAddressError, OutOfMemoryError
from rawdev.runtime import Stream, kernels, memory, seam, trace

from _refs import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[1]
rng = np.random.default_rng()


def relerr(out, ref):
    return np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref)


def to_device(dev, host, owner="test"):
    buf = memory.DeviceBuffer.alloc(dev, host.nbytes, owner=owner)
    memory.copy_htod(buf.ptr, host, host.nbytes)
    return buf


def from_device(buf, like):
    out = np.empty_like(like)
    memory.copy_dtoh(out, buf.ptr, out.nbytes)
    return out


def poisoned(dev, shape, dtype=np.float32):
    """A device buffer filled with NaN (or 0xFF bytes), so unwritten elements show."""
    host = np.full(shape, np.nan, dtype) if np.dtype(dtype).kind == "f" else np.full(shape, -1, dtype)
    return to_device(dev, host, "output")


def test_copies_on_two_streams_ordered_by_an_event(dev):
    n = 1 << 20
    src = rng.integers(0, 256, n, dtype=np.uint8)
    s1, s2 = Stream(dev, "s1"), Stream(dev, "s2")
    a = memory.DeviceBuffer.alloc(dev, n, stream=s1, owner="a")
    b = memory.DeviceBuffer.alloc(dev, n, stream=s1, owner="b")
    pin = memory.PinnedBuffer(n)
    pin.array[:] = 7                                  # the "old" bytes
    memory.copy_htod(a.ptr, src, n, stream=s1)
    s2.wait_event(s1.record_event())                  # DtoD on s2 must see the HtoD on s1
    memory.copy_dtod(b.ptr, a.ptr, n, stream=s2)
    memory.copy_dtoh(pin.ptr, b.ptr, n, stream=s2)
    if seam.driver_name() == "sim":                   # the simulator runs queued work only at sync points
        assert (pin.array == 7).all(), "a read before synchronizing must see the old bytes"
    s2.synchronize()
    assert np.array_equal(pin.array, src)


def test_event_timing_and_query(dev):
    s = dev.compute_stream
    e0, e1 = s.record_event(timing=True), None
    buf = to_device(dev, rng.standard_normal(4096).astype(np.float32))
    e1 = s.record_event(timing=True)
    e1.synchronize()
    assert e1.query() and s.query()
    assert e0.elapsed_time(e1) >= 0.0
    buf.free()


@pytest.mark.parametrize("n", [1, 255, 257, 1000, 4099])
def test_saxpy(dev, n):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    bx, by = to_device(dev, x), to_device(dev, y)
    a = np.float32(rng.uniform(0.5, 2.0))
    kernels.get_kernel(dev, "saxpy").launch(max(1, (n + 127) // 256), 128, [by.ptr, bx.ptr, a, n])
    dev.synchronize()
    ref = a * x.astype(np.float64) + y
    assert relerr(from_device(by, y), ref) < 1e-6


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 31), (7, 33), (37, 100)])
def test_row_sum_warp(dev, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    bx, out = to_device(dev, x), poisoned(dev, rows)
    warps = 4
    kernels.get_kernel(dev, "row_sum_warp").launch((rows + warps - 1) // warps, 32 * warps,
                                                   [out.ptr, bx.ptr, rows, cols])
    dev.synchronize()
    got = from_device(out, np.empty(rows, np.float32))
    assert not np.isnan(got).any()
    assert relerr(got, x.astype(np.float64).sum(1)) < 1e-5


@pytest.mark.parametrize("rows,cols", [(1, 1), (31, 33), (64, 17), (45, 70)])
def test_tiled_transpose(dev, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    bx, out = to_device(dev, x), poisoned(dev, (cols, rows))
    kernels.get_kernel(dev, "tiled_transpose").launch(((cols + 31) // 32, (rows + 31) // 32), (32, 8),
                                                      [out.ptr, bx.ptr, rows, cols])
    dev.synchronize()
    assert np.array_equal(from_device(out, np.empty((cols, rows), np.float32)), x.T)


@pytest.mark.parametrize("n", [1, 300, 5001])
def test_atomic_hist_and_sum(dev, n):
    x = rng.uniform(-1.2, 1.2, n).astype(np.float32)
    bx = to_device(dev, x)
    nbins = 13
    hist = to_device(dev, np.zeros(nbins, np.uint32))
    kernels.get_kernel(dev, "atomic_hist").launch(max(1, (n + 255) // 256 // 2), 256,
                                                  [hist.ptr, bx.ptr, n, -1.0, 1.0, nbins])
    total = to_device(dev, np.zeros(1, np.float32))
    kernels.get_kernel(dev, "atomic_sum").launch((n + 255) // 256, 256, [total.ptr, bx.ptr, n])
    dev.synchronize()
    # The bin is computed in float32 exactly as the kernel does, so a value within an ulp of a
    # bin edge lands where the kernel puts it (a float64 reference disagrees there about once in 50 runs).
    inside = x[(x >= np.float32(-1.0)) & (x < np.float32(1.0))]
    scale = np.float32(nbins) / (np.float32(1.0) - np.float32(-1.0))
    bins = ((inside - np.float32(-1.0)) * scale).astype(np.float32).astype(int).clip(0, nbins - 1)
    ref_hist = np.bincount(bins, minlength=nbins)
    assert np.array_equal(from_device(hist, np.empty(nbins, np.uint32)), ref_hist)
    ref = x.astype(np.float64).sum()
    assert abs(from_device(total, np.empty(1, np.float32))[0] - ref) <= 1e-4 * np.abs(x).sum()


def test_out_of_bounds_read_is_an_illegal_address(driver, dev):
    if driver != "sim":
        pytest.skip("an illegal address poisons a real context for the rest of the process")
    n = 1000
    x = to_device(dev, rng.standard_normal(n).astype(np.float32))
    y = to_device(dev, rng.standard_normal(n).astype(np.float32))
    kernels.get_kernel(dev, "saxpy").launch(4, 256, [y.ptr, x.ptr, 1.0, n + 64])   # 64 past the end
    with pytest.raises(IllegalAddressError) as e:
        dev.synchronize()
    msg = str(e.value)
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in msg and "saxpy" in msg
    assert "thread" in msg.lower() and "0x" in msg


def test_divergent_barrier_is_an_error(driver, dev):
    if driver != "sim":
        pytest.skip("a divergent barrier is undefined behaviour on a GPU (it may hang)")
    n = 256
    x = to_device(dev, rng.standard_normal(n).astype(np.float32))
    out = poisoned(dev, n)
    kernels.get_kernel(dev, "bad_barrier").launch(1, 256, [out.ptr, x.ptr, n, 100])
    with pytest.raises(CudaError) as e:
        dev.synchronize()
    assert "bad_barrier" in str(e.value) and "bar" in str(e.value).lower()


def test_injected_oom_reports_and_leaks_nothing(driver, dev):
    if driver != "sim":
        pytest.skip("fault injection is a simulator feature")
    from rawdev import sim
    keep = memory.DeviceBuffer.alloc(dev, 1 << 20, owner="0.weight")
    used = memory.pool_used(dev)
    sim.inject_fault("cuMemAllocFromPoolAsync", CUresult.CUDA_ERROR_OUT_OF_MEMORY)
    with pytest.raises(OutOfMemoryError) as e:
        memory.DeviceBuffer.alloc(dev, 3 << 20, owner="activations")
    msg = str(e.value)
    assert "CUDA_ERROR_OUT_OF_MEMORY" in msg and "3.0 MiB" in msg and "activations" in msg
    assert "device free" in msg and " of " in msg and "0.weight" in msg
    assert memory.pool_used(dev) == used
    del keep


def test_real_oom_when_capacity_is_exceeded(driver, dev):
    if driver != "sim":
        pytest.skip("exhausting a real GPU's memory is not a unit test")
    free, total = seam.call("cuMemGetInfo")
    with pytest.raises(OutOfMemoryError):
        memory.DeviceBuffer.alloc(dev, total + (1 << 20), owner="too big")
    assert memory.pool_used(dev) == 0


def test_launch_argument_checks_come_before_the_driver(dev):
    k = kernels.get_kernel(dev, "saxpy")
    with trace() as t, pytest.raises(TypeError) as e:
        k.launch(1, 32, [0, 0, 1.0])
    assert "saxpy(u64 y, u64 x, f32 a, u64 n)" in str(e.value)
    with trace() as t2, pytest.raises(TypeError) as e2:
        k.launch(1, 32, [0, 0, "two", 5])
    assert "argument 2 (a)" in str(e2.value) and "f32" in str(e2.value)
    with pytest.raises(TypeError):
        k.launch(1, 32, [0, 0, 1.0, 2.5])       # float for an integer parameter
    assert t.count("cuLaunchKernel") == 0 and t2.count("cuLaunchKernel") == 0


def test_ptx_newer_than_the_driver_is_refused(dev):
    text = (kernels.ptx_files() / "testkernels.ptx").read_text().replace(".version 8.0", ".version 9.9")
    with pytest.raises(CudaError) as e:
        kernels.KernelModule(dev, text, "future.ptx")
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in str(e.value) and "9.9" in str(e.value)


def test_bad_ptx_shows_the_jit_log(driver, dev):
    with pytest.raises(CudaError) as e:
        kernels.KernelModule(dev, ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry f() { frobnicate; }",
                             "broken.ptx")
    assert "broken.ptx" in str(e.value)


def run_py(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=HANG_GUARD_S)


def test_no_driver_is_one_line_naming_the_simulator():
    p = run_py("import rawdev; rawdev.cuda.device_count()", RAWDEV_DRIVER="cuda")
    if p.returncode == 0:
        pytest.skip("this machine has a CUDA driver")
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "NoDriverError" in lines[0] and "RAWDEV_DRIVER=sim" in lines[0], p.stderr
    p = run_py("import rawdev; print(rawdev.cuda.is_available(), rawdev.cuda.device_count())", RAWDEV_DRIVER="auto")
    assert p.returncode == 0 and p.stdout.strip() == "False 0" and p.stderr == "", p.stderr


def test_import_touches_no_driver():
    p = run_py("import sys, rawdev, rawdev.cuda; from rawdev.runtime import seam; print(seam._name)",
               RAWDEV_DRIVER="cuda")
    assert p.returncode == 0 and p.stdout.strip() == "None", p.stderr


@pytest.mark.slow
def test_wheel_installs_and_launches_on_the_simulator(tmp_path):
    """The wheel carries the PTX and declares every dependency: build it, install it with its dependencies into
    a fresh venv that sees no other site-packages (the base interpreter's included), launch from elsewhere."""
    wheel_dir = tmp_path / "wheel"
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                        str(wheel_dir), str(ROOT)], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert p.returncode == 0, p.stderr
    wheel = next(wheel_dir.glob("rawdev-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=HANG_GUARD_S)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    py = venv / "bin" / "python"
    env = {**os.environ, "RAWDEV_DRIVER": "sim", "PYTHONPATH": "", "PYTHONNOUSERSITE": "1"}
    env.pop("VIRTUAL_ENV", None)
    p = subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True,
                       timeout=HANG_GUARD_S, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    code = ("import sys, rawdev, numpy as np; from rawdev.runtime import get_device, kernels, memory\n"
            "assert rawdev.__file__.startswith(sys.prefix), (rawdev.__file__, sys.prefix)\n"
            "assert 'site-packages' in str(kernels.ptx_files()), kernels.ptx_files()\n"
            "d = get_device(0); x = np.arange(5, dtype=np.float32)\n"
            "b = memory.DeviceBuffer.alloc(d, 20); memory.copy_htod(b.ptr, x, 20)\n"
            "kernels.get_kernel(d, 'saxpy').launch(1, 32, [b.ptr, b.ptr, 1.0, 5]); d.synchronize()\n"
            "o = np.empty_like(x); memory.copy_dtoh(o, b.ptr, 20); print(o.tolist())\n"
            "from rawdev.data import load_digits; X, y = load_digits(); assert X.shape == (1797, 64), X.shape\n"
            "import importlib.util; print('cuda.core' if importlib.util.find_spec('cuda.core') else 'no cuda.core')")
    p = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=HANG_GUARD_S,
                       env=env)
    assert p.returncode == 0, p.stderr
    # cuda-bindings is the dependency, not the cuda-python meta-package (which would bring cuda-core)
    assert p.stdout.splitlines() == ["[0.0, 2.0, 4.0, 6.0, 8.0]", "no cuda.core"], p.stdout
    p = subprocess.run([str(venv / "bin" / "rawdev"), "selfcheck", "--device", "sim"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=HANG_GUARD_S, env=env)
    assert p.returncode == 0, p.stderr
    assert "driver: sim" in p.stdout and p.stdout.rstrip().endswith("OK")


def test_ptx_found_in_a_source_checkout_without_install():
    """tools/gpu_check runs from a checkout with PYTHONPATH and no install (the lent GPU machine):
    with no rawdev._ptx package importable, the kernels come from the source tree's ptx/."""
    code = ("import sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
            "sys.path[:] = [p for p in sys.path if not p.endswith('.egg-link')]\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            "import importlib.util\n"
            "assert importlib.util.find_spec('rawdev._ptx') is None, 'an installed rawdev._ptx is visible'\n"
            "from rawdev.runtime import kernels\n"
            "print(kernels.ptx_files()); print(len(kernels.manifest()))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S,
                       env={**os.environ, "PYTHONPATH": ""})
    assert p.returncode == 0, p.stderr
    folder, n = p.stdout.split()
    assert Path(folder) == ROOT / "ptx" and int(n) > 40


def test_selfcheck_command_on_the_simulator():
    p = subprocess.run([sys.executable, "-m", "rawdev.cli", "selfcheck", "--device", "sim"], capture_output=True,
                       text=True, timeout=HANG_GUARD_S, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "driver: sim" in p.stdout and "cuLaunchKernel" in p.stdout and p.stdout.rstrip().endswith("OK")


def test_use_driver_sim_after_auto_found_no_gpu():
    """auto with no GPU settles on 'none' without opening anything; switching to the simulator is then
    allowed (the demo's fallback), while switching away from a driver in use is not."""
    code = ("import rawdev\nfrom rawdev.runtime import seam\n"
            "assert not rawdev.cuda.is_available() and seam.driver_name() == 'none'\n"
            "rawdev.use_driver('sim'); assert rawdev.cuda.is_available() and seam.driver_name() == 'sim'\n"
            "try:\n    rawdev.use_driver('cuda')\nexcept RuntimeError as e:\n    print(e)\n")
    from conftest import real_gpu
    if real_gpu() is None:
        pytest.skip("a real GPU is present: auto picks it")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S,
                       env={**os.environ, "RAWDEV_DRIVER": "auto"})
    assert p.returncode == 0, p.stderr
    assert "rawdev already uses the 'sim' driver" in p.stdout
