"""tools/gpu_check --driver sim --quick: the one script a lent GPU runs, proven here on the simulator."""
import json
import os
import subprocess
import sys
from pathlib import Path

from _refs import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_quick_on_the_simulator_passes_and_writes_its_files(tmp_path):
    out = tmp_path / "gc"
    # a budget far above what the steps need (their limits scale with it): the limits are hang guards here, so
    # the test does not depend on the machine's speed; the tiny-budget test below covers the cut-off path
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check"), str(out), "--driver", "sim", "--quick",
                        "--budget", "2400"], capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=tmp_path)
    log = (out / "log.txt").read_text()[-4000:] if (out / "log.txt").exists() else ""
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:] + "\nlog.txt (tail):\n" + log
    for name in ("log.txt", "results.md", "results.json"):
        assert (out / name).stat().st_size > 0, name
    res = json.loads((out / "results.json").read_text())
    assert res["environment"]["rawdev_driver"] == "sim"
    assert res["tests"]["rc"] == 0 and " passed" in res["tests"]["summary"]
    counts = res["tests"]["counts"]
    assert counts["passed"] > 0 and counts["failed"] == counts["errors"] == 0, counts
    assert res["passed"] is True and res["failures"] == []
    assert (out / "pytest.log").stat().st_size > 0 and (out / "jit-cache").is_dir()
    benches = {b["script"]: b for b in res["benchmarks"]}
    expected = {p.name for p in (ROOT / "tools" / "bench").glob("*.py")}
    assert set(benches) == expected
    for name, b in benches.items():
        assert b["rc"] == 0 and b["rows"], f"{name}: rc {b['rc']}, {len(b['rows'])} rows"
    gemm = benches["gemm.py"]["rows"]
    # every shipped GEMM variant ran and agreed with float64 numpy
    tiles = {(r["layout"], r["tile"]) for r in gemm if isinstance(r["tile"], int)}
    assert tiles == {(lay, t) for lay in ("nt", "nn", "tn") for t in (32, 64, 128)}
    # skinny shapes: one plain launch and the split-K path, per layout
    variants = {(r["layout"], r["tile"]) for r in gemm if r["tile"] in ("128grid", "128bk16")}
    assert variants == {(lay, v) for lay in ("nt", "nn", "tn") for v in ("128grid", "128bk16")}
    skinny = {(r["layout"], r["tile"].rstrip("0123456789")) for r in gemm
              if str(r["tile"]).startswith(("plain", "split"))}
    assert skinny == {(lay, v) for lay in ("nt", "nn", "tn") for v in ("plain", "splitK")}
    assert all(r["correct"] and r["relerr"] < 1e-4 for r in gemm)
    assert all(r["correct"] for r in benches["sim_speed.py"]["rows"])
    ar = benches["allreduce.py"]["rows"]
    assert {r["mode"] for r in ar} == {"allreduce", "ddp"} and all(r.get("wrong", 0) == 0 for r in ar), ar
    nccl = res["nccl"]           # the world-size-1 NCCL step, on the simulated communicator here
    assert nccl["rc"] == 0 and len(nccl["rows"]) >= 7, nccl
    assert all(r["result"] == "PASS" and r["communicator"] == "simulated" for r in nccl["rows"]), nccl
    md = (out / "results.md").read_text()
    assert "rawdev gpu_check" in md and "gemm.py" in md
    assert "| NCCL check | communicator | result |" in md and "| DDP step = plain step | simulated | PASS |" in md


def _gpu_check_module():
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("gpu_check", str(ROOT / "tools" / "gpu_check"))
    spec = importlib.util.spec_from_loader("gpu_check", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_step_limits_add_up_to_the_eight_minute_budget():
    gc = _gpu_check_module()
    assert gc.TOTAL_BUDGET == 480
    assert sum(gc.LIMITS.values()) == gc.TOTAL_BUDGET
    scripts = {p.name for p in (ROOT / "tools" / "bench").glob("*.py")}
    assert {k.split(":", 1)[1] for k in gc.LIMITS if k.startswith("bench:")} == scripts


def test_the_verdict_fails_when_nothing_ran_everything_skipped_or_no_gpu():
    gc = _gpu_check_module()
    gpu = {"gpu_seen": True}
    ran = {"rc": 0, "counts": {"tests": 10, "passed": 7, "failed": 0, "errors": 0, "skipped": 3}}
    assert gc.verdict("cuda", gpu, ran, [{"script": "gemm.py", "rc": 0}]) == []
    assert gc.verdict("cuda", {"gpu_seen": False, "gpu": "unavailable"}, ran, [])[0].startswith("no GPU seen")
    none = {"rc": 5, "counts": {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}}
    assert gc.verdict("cuda", gpu, none, []) == ["no test ran (pytest exit 5)"]
    assert gc.verdict("cuda", gpu, {"rc": 2, "counts": None}, []) == ["no test ran (pytest exit 2)"]
    skipped = {"rc": 0, "counts": {"tests": 4, "passed": 0, "failed": 0, "errors": 0, "skipped": 4}}
    assert gc.verdict("cuda", gpu, skipped, []) == ["every test skipped (4)"]
    nccl_failed = {"rc": 1, "rows": [{"check": "broadcast", "result": "PASS", "communicator": "nccl"},
                                      {"check": "barrier", "result": "FAIL: NcclError", "communicator": "nccl"}]}
    assert gc.verdict("cuda", gpu, ran, [], nccl_failed) == ["NCCL check(s) failed: barrier"]
    assert gc.verdict("cuda", gpu, ran, [], {"rc": 124, "rows": []}) == ["the NCCL step: exit 124, 0 row(s)"]
    failed = {"rc": 1, "counts": {"tests": 4, "passed": 3, "failed": 1, "errors": 0, "skipped": 0}}
    assert gc.verdict("sim", {}, failed, [{"script": "move.py", "rc": 124}]) == [
        "1 test(s) failed, 0 error(s)", "benchmark move.py: exit 124"]


def test_gpu_check_fails_when_no_test_ran_on_the_simulator(tmp_path):
    out = tmp_path / "gc"
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check"), str(out), "--driver", "sim", "--quick",
                        "--no-bench", "--no-jit", "--budget", "2400",
                        "--tests", "tests/test_sim_memory.py"],   # no gpu-marked test in it
                       capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=tmp_path)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["passed"] is False and any(w.startswith("no test ran") for w in res["failures"]), res["failures"]
    assert (out / "pytest.log").exists() and "FAIL" in (out / "results.md").read_text()
    assert p.stdout.index("numpy:") < p.stdout.index("tests:")       # versions come first


def test_gpu_check_fails_at_once_with_a_driver_that_sees_no_gpu(tmp_path):
    # a fake driver: cuda-python's real binding whose cuInit answers CUDA_ERROR_NO_DEVICE (as on a machine with
    # the driver installed and no GPU), loaded into every Python process gpu_check starts
    fake = tmp_path / "fake-driver"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(
        "from cuda.bindings import driver as _d\n"
        "_d.cuInit = lambda flags: (_d.CUresult.CUDA_ERROR_NO_DEVICE,)\n"
        "_d.cuDeviceGetCount = lambda: (_d.CUresult.CUDA_SUCCESS, 0)\n")
    out = tmp_path / "gc"
    env = {**os.environ, "PYTHONPATH": str(fake)}
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check"), str(out), "--driver", "cuda"],
                       capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=tmp_path, env=env)
    assert p.returncode == 2, p.stdout[-3000:] + p.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["environment"]["gpu_seen"] is False and "sees no GPU" in res["environment"]["gpu"]
    assert res["tests"] is None and res["benchmarks"] == []          # nothing else was attempted
    assert res["failures"][0].startswith("no GPU seen")


def test_gpu_check_keeps_the_jit_cache_in_its_output_folder(tmp_path):
    gc = _gpu_check_module()
    assert gc.JIT_CACHE_BYTES >= 1 << 30
    text = (ROOT / "tools" / "gpu_check").read_text()
    assert '"CUDA_CACHE_PATH": str(cache)' in text and "CUDA_CACHE_MAXSIZE" in text


def test_gpu_check_with_a_tiny_budget_still_reports_everything(tmp_path):
    """--budget 20 on the simulator: the steps are cut off (the benchmarks; the JIT and tests too on a slower
    machine), yet results.json, results.md and the streamed test outcomes are written, with counts that add up."""
    out = tmp_path / "gc"
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check"), str(out), "--driver", "sim", "--quick",
                        "--budget", "20"], capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=tmp_path)
    res = json.loads((out / "results.json").read_text())
    assert p.returncode == (0 if res["passed"] else 1), p.stdout[-3000:] + p.stderr[-3000:]
    jit = res["jit"]
    assert jit is not None and set(jit) >= {"files", "not_reached", "seconds", "rc"}
    assert len(jit["files"]) + len(jit["not_reached"]) > 0
    c = res["tests"]["counts"]
    assert c is not None
    assert c["passed"] + c["failed"] + c["errors"] + c["skipped"] + c["timeouts"] + c["not_reached"] == c["tests"], c
    lines = (out / "tests.txt").read_text().splitlines()
    assert lines and lines[0].startswith("COLLECTED ")
    assert sum(ln.startswith(("PASSED ", "FAILED ", "SKIPPED ", "ERROR ", "TIMEOUT ")) for ln in lines) == \
        c["tests"] - c["not_reached"]
    md = (out / "results.md").read_text()
    assert "counts: tests" in md and "JIT:" in md and "verdict:" in md
    assert {b["script"] for b in res["benchmarks"]} == {q.name for q in (ROOT / "tools" / "bench").glob("*.py")}


SLOW_TESTS = '''
import signal, time

def test_quick():
    assert True

def test_hangs_in_python():
    time.sleep(600)

def test_after():
    assert 1 + 1 == 2
'''

STUCK_TESTS = '''
import signal, time

def test_first():
    assert True

def test_stuck_where_no_signal_reaches():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])   # as a C call that never returns would be
    time.sleep(600)

def test_never_reached():
    assert True
'''


def _plugin_run(tmp_path, source, timeout, grace="30"):
    (tmp_path / "test_cases.py").write_text(source)
    outcomes = tmp_path / "tests.txt"
    env = {**os.environ, "RAWDEV_GPU_CHECK_OUTCOMES": str(outcomes), "RAWDEV_GPU_CHECK_TEST_TIMEOUT": timeout,
           "RAWDEV_GPU_CHECK_GRACE": grace, "PYTHONPATH": str(ROOT / "tools")}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "gpu_check_plugin",
                        "test_cases.py"], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=HANG_GUARD_S)
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from gpu_check_plugin import read_outcomes
    finally:
        sys.path.pop(0)
    return p, outcomes.read_text(), read_outcomes(outcomes)


def test_a_test_past_its_timeout_fails_and_the_run_goes_on(tmp_path):
    p, text, c = _plugin_run(tmp_path, SLOW_TESTS, "2")
    assert p.returncode == 1, p.stdout[-2000:]
    assert "TIMEOUT test_cases.py::test_hangs_in_python" in text, text
    assert "PASSED test_cases.py::test_after" in text, text
    assert (c["tests"], c["passed"], c["timeouts"], c["not_reached"]) == (3, 2, 1, 0), c
    assert c["failures"] == ["test_cases.py::test_hangs_in_python"]


def test_a_test_stuck_outside_python_ends_the_run_with_its_name_on_disk(tmp_path):
    p, text, c = _plugin_run(tmp_path, STUCK_TESTS, "1", grace="2")
    assert p.returncode == 124, p.stdout[-2000:]
    assert "TIMEOUT test_cases.py::test_stuck_where_no_signal_reaches" in text, text
    assert "test_stuck_where_no_signal_reaches" in text.split("TIMEOUT", 1)[1]   # the stacks dumped after it
    assert (c["tests"], c["passed"], c["timeouts"], c["not_reached"]) == (3, 1, 1, 1), c
