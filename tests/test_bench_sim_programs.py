"""tools/bench/sim_programs.py: the cpu-path vs simulator benchmark, proven on its tiny built-in program."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "bench" / "sim_programs.py"


def test_quick_run_times_both_paths_and_counts_the_simulators_launches(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    row, summary = rows
    assert row["program"] == "tiny" and row["cpu_error"] is None and row["sim_error"] is None, row
    assert row["cpu_s"] > 0 and row["sim_s"] > 0 and row["sim_cpu_s"] > 0
    # three elementwise ops and a sum, each at least one kernel launch, counted by the simulated driver itself
    assert row["launches"] >= 4 and row["launches_per_s"] > 0
    assert summary["program"] == "summary" and summary["n"] == 1 and summary["median_ratio"] == row["ratio"]


def test_unknown_program_is_refused_with_the_known_names():
    p = subprocess.run([sys.executable, str(SCRIPT), "--only", "no_such_program"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2
    assert "unknown program(s) no_such_program" in p.stderr and "demo-gpt" in p.stderr and "pca" in p.stderr
