"""tools/gpu_check --driver sim --quick: the one script a lent GPU runs, proven here on the simulator."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_quick_on_the_simulator_passes_and_writes_its_files(tmp_path):
    out = tmp_path / "gc"
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check"), str(out), "--driver", "sim", "--quick"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for name in ("log.txt", "results.md", "results.json"):
        assert (out / name).stat().st_size > 0, name
    res = json.loads((out / "results.json").read_text())
    assert res["environment"]["rawdev_driver"] == "sim"
    assert res["tests"]["rc"] == 0 and " passed" in res["tests"]["summary"]
    benches = {b["script"]: b for b in res["benchmarks"]}
    expected = {p.name for p in (ROOT / "tools" / "bench").glob("*.py")}
    assert set(benches) == expected
    for name, b in benches.items():
        assert b["rc"] == 0 and b["rows"], f"{name}: rc {b['rc']}, {len(b['rows'])} rows"
    gemm = benches["gemm.py"]["rows"]
    # every shipped GEMM variant ran and agreed with float64 numpy
    assert {(r["layout"], r["tile"]) for r in gemm} == {(lay, t) for lay in ("nt", "nn", "tn") for t in (32, 64, 128)}
    assert all(r["correct"] and r["relerr"] < 1e-4 for r in gemm)
    assert all(r["correct"] for r in benches["sim_speed.py"]["rows"])
    md = (out / "results.md").read_text()
    assert "rawdev gpu_check" in md and "gemm.py" in md
