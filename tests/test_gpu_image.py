"""The GPU machine's image has only numpy, cuda-python, pytest and safetensors: `pytest -m gpu` must collect
there (a test that needs hypothesis skips instead of breaking collection)."""
import subprocess
import sys
from pathlib import Path

from _refs import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[1]


def _without_hypothesis(tmp_path):
    """A PYTHONPATH entry under which `import hypothesis` fails as it does where it is not installed (and
    its pytest plugin, loaded through an entry point, is an empty module)."""
    stub = tmp_path / "no-hypothesis"
    (stub / "hypothesis").mkdir(parents=True)
    (stub / "hypothesis" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'hypothesis'\", name='hypothesis')\n")
    (stub / "_hypothesis_pytestplugin.py").write_text("")
    return {"PYTHONPATH": f"{stub}:{ROOT}", "PATH": "/usr/bin:/bin", "RAWDEV_DRIVER": "sim"}


def test_gpu_tests_collect_without_hypothesis(tmp_path):
    env = _without_hypothesis(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import hypothesis"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'hypothesis'" in probe.stderr
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                        "-rs", "tests"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "error" not in out.splitlines()[-1].lower(), out[-3000:]
    assert "[cuda" in out                                   # the gpu-marked cases were collected
    assert "test_properties.py" in out and "hypothesis" in out   # ... and the hypothesis module skipped, saying why
