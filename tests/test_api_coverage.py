"""tools/api_coverage.py: rows resolve and run, failures are reported with their reason, the table is well formed."""
import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

from _refs import HANG_GUARD_S

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "api_coverage.py")


@pytest.fixture(scope="module")
def cov():
    spec = importlib.util.spec_from_file_location("api_coverage_under_test", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(cov, *names):
    return [cov.Row(r.name, r.category, r.fn, r.note, r.devices) for r in cov.ROWS if r.name in names and not r.note]


def _tables(md):
    """Each Markdown table as a list of rows of cells."""
    tables, cur = [], None
    for line in md.splitlines():
        if line.startswith("|"):
            assert line.endswith("|"), line
            cells = [c.strip() for c in line.replace("\\|", "\x00").strip("|").split("|")]
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append(cells)
        else:
            cur = None
    return tables


def test_rows_are_unique_and_categorised(cov):
    keys = [r.key for r in cov.ROWS]
    assert len(keys) == len(set(keys))
    assert len(cov.ROWS) >= 200
    assert all(r.name.startswith("torch.") and r.category in cov.CATEGORIES for r in cov.ROWS)


def test_missing_existing_failing_and_slow_rows(cov):
    def missing(torch, device):
        return torch.definitely_not_an_api(3)

    def unsupported(torch, device):
        raise NotImplementedError("this op is not here yet\nsecond line")

    def slow(torch, device):
        time.sleep(600)   # far past any timeout: only the per-row timeout ends it

    rows = _rows(cov, "torch.zeros", "torch.Tensor.view") + [
        cov.Row("torch.definitely_not_an_api", "math", missing),
        cov.Row("torch.add", "math", unsupported, note="raises"),
        cov.Row("torch.sub", "math", slow, note="sleeps", timeout=2.0),   # the others keep the default hang guard
    ]
    t0 = time.time()
    cov.run_rows(rows, devices=("cpu",), timeout=20.0)
    assert time.time() - t0 < 590   # the sleeping row was cut off, not waited for
    res = {r.key: r.result for r in rows}

    for name in ("torch.zeros", "torch.Tensor.view"):
        assert res[name]["exists"] and res[name]["cpu"]["ok"], res[name]
        assert res[name]["cuda"] is None            # not asked for
    gone = res["torch.definitely_not_an_api"]
    assert not gone["exists"] and not gone["cpu"]["ok"]
    assert "definitely_not_an_api" in gone["cpu"]["error"]
    assert res["torch.add [raises]"]["cpu"]["error"] == "NotImplementedError: this op is not here yet"
    assert res["torch.sub [sleeps]"]["cpu"]["error"].startswith("slow")

    md = cov.markdown(rows, ["- header"])
    tables = _tables(md)
    summary, reasons, *per_category = tables
    assert summary[0] == ["category", "rows", "exists", "cpu", "cuda"]
    assert summary[-1] == ["**total**", "5", "4", "2/5", "0/0"]
    assert any("the API is missing" in r[1] for r in reasons[2:])
    for t in per_category:
        assert t[0] == ["API", "exists", "cpu", "cuda"]
        assert all(len(r) == 4 for r in t)
    lines = {r[0]: r for t in per_category for r in t[2:]}
    assert lines["`torch.definitely_not_an_api`"][1] == "✗"
    assert lines["`torch.zeros`"][1:3] == ["✓", "✓"]
    assert lines["`torch.add` — raises"][2] == "✗ NotImplementedError: this op is not here yet"


def test_cli_cpu_and_simulated_cuda(tmp_path):
    out, js = tmp_path / "cov.md", tmp_path / "cov.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, TOOL, "--only", "torch.zeros,torch.Tensor.view", "--out", str(out),
                        "--json", str(js), "--quiet"], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert p.returncode == 0, p.stderr
    data = json.loads(js.read_text())
    assert data["counts"]["total"]["rows"] == 2
    for r in data["rows"]:
        assert r["exists"] and r["cpu"]["ok"] and r["cuda"]["ok"], r
    md = out.read_text()
    assert md.startswith("# PyTorch everyday API")
    assert "- command: `python tools/api_coverage.py --only" in md
    assert _tables(md)[0][-1] == ["**total**", "2", "2", "2/2", "2/2"]
