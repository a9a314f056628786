"""rawdev's pytest plugin shares a plain `pytest` of a project out to pytest-xdist workers when the project's ini
sets `rawdev_workers`; a run that names tests (or chose its workers, or runs inside a worker) stays as asked."""
import importlib.util
import os
import subprocess
import sys

import pytest

from _refs import HANG_GUARD_S

pytestmark = pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="needs pytest-xdist (rawdev[test])")


BLAS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _run(tmp_path, workers, *args, env_extra=None):
    """(the worker that ran the project's one test ("main" without xdist), the BLAS thread variables it saw)."""
    ini = "[pytest]\n" + (f"rawdev_workers = {workers}\n" if workers is not None else "")
    (tmp_path / "pytest.ini").write_text(ini)
    out = tmp_path / "ran_on.txt"
    (tmp_path / "test_one.py").write_text(
        "import os, pathlib\n"
        "def test_one():\n"
        f"    pathlib.Path({str(out)!r}).write_text(' '.join([os.environ.get('PYTEST_XDIST_WORKER', 'main')] + "
        f"[os.environ.get(v, '-') for v in {BLAS!r}]))\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_XDIST") and k != "PYTEST_ADDOPTS" and k not in BLAS}
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert r.returncode == 0, r.stdout + r.stderr
    where, *blas = out.read_text().split()
    return where, dict(zip(BLAS, blas))


def _where(tmp_path, workers, *args):
    return _run(tmp_path, workers, *args)[0]


def test_a_plain_run_goes_to_workers_when_the_ini_asks(tmp_path):
    # the workers fill the cores: one BLAS thread each, except where the user set a number
    where, blas = _run(tmp_path, "2", env_extra={"OPENBLAS_NUM_THREADS": "3"})
    assert where.startswith("gw")
    assert blas == {"OPENBLAS_NUM_THREADS": "3", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_without_the_ini_option_the_run_is_serial(tmp_path):
    assert _run(tmp_path, None) == ("main", dict.fromkeys(BLAS, "-"))   # and its environment is left as it is
    assert _where(tmp_path, "0") == "main"


def test_a_run_that_names_tests_or_chooses_stays_as_asked(tmp_path):
    assert _where(tmp_path, "2", "test_one.py") == "main"
    assert _where(tmp_path, "2", "-p", "no:xdist") == "main"
    assert _where(tmp_path, "2", "-n", "0") == "main"
