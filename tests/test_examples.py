"""The example project examples/kernel_project (a CUDA C kernel file, its Python wrappers and their tests) passes
when run as users run it: `pytest examples/kernel_project`, in a process of its own, through rawdev's plugin."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rawdev.runtime import nvrtc

ROOT = Path(__file__).resolve().parent.parent


def test_the_example_project_passes_on_the_simulator(tmp_path):
    try:
        nvrtc.load()
    except nvrtc.NvrtcNotFoundError as e:
        pytest.skip(f"needs NVRTC (rawdev[kernels]): {str(e).splitlines()[0]}")
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAWDEV_CACHE_DIR=str(tmp_path / "cache"), RAWDEV_TEST_DEVICE="sim")
    env.pop("RAWDEV_DRIVER", None)
    # a hang guard, not a speed check: the run takes seconds
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "examples/kernel_project"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert " passed" in out and " failed" not in out and " error" not in out, out
    assert "rawdev: " in out and "devices used: sim" in out, out


def test_the_walk_through_runs_as_printed(tmp_path):
    """docs/KERNELS.md's first Python block (write a kernel, launch it on tensors, check it) runs on the simulator."""
    import re
    try:
        nvrtc.load()
    except nvrtc.NvrtcNotFoundError as e:
        pytest.skip(f"needs NVRTC (rawdev[kernels]): {str(e).splitlines()[0]}")
    code = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "KERNELS.md").read_text(), re.S)[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAWDEV_CACHE_DIR=str(tmp_path / "cache"), RAWDEV_DRIVER="sim")
    r = subprocess.run([sys.executable, "-c", code + "\nprint('ok')"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.split() == ["ok"], r.stdout + r.stderr
