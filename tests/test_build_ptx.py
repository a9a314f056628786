"""The committed PTX is what tools/build_ptx.py builds, and the manifest describes it."""
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _refs import HANG_GUARD_S

ROOT = Path(__file__).resolve().parent.parent
PTX = ROOT / "ptx"
MANIFEST = json.loads((PTX / "manifest.json").read_text())


def test_rebuild_matches_committed():
    if os.environ.get("RAWDEV_PTX_REBUILD_CHECKED") == "1":
        pytest.skip(".ci/run ran tools/build_ptx.py --check (this rebuild and the ptxas report) before the suite")
    try:
        found = importlib.util.find_spec("nvidia.cuda_nvrtc") is not None
    except ModuleNotFoundError:   # no `nvidia` namespace package at all
        found = False
    if not found:
        pytest.skip("NVRTC 12.0 not installed (pip install nvidia-cuda-nvrtc-cu12==12.0.140)")
    # the rebuild only: the ptxas resource report (and its spill check) is .ci/run's own `build_ptx.py --check` step
    res = subprocess.run([sys.executable, str(ROOT / "tools" / "build_ptx.py"), "--check", "--no-report"],
                         capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert res.returncode == 0, res.stdout + res.stderr


def _build_ptx_module():
    spec = importlib.util.spec_from_file_location("build_ptx", ROOT / "tools" / "build_ptx.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_resource_report_describes_the_committed_ptx():
    """REPORT.md names each section's PTX by its sha256: every committed file has its section, for every
    architecture it loads on, every entry has its row, and no GEMM spills — what `build_ptx.py --check` reuses
    instead of running ptxas again, so a PTX change without its report shows here."""
    bp = _build_ptx_module()
    ver = re.search(r"with ptxas (release [\d.]+, V[\d.]+);", (PTX / "REPORT.md").read_text()).group(1)
    rows = bp.committed_report(ver)
    for fname, info in MANIFEST["files"].items():
        sha = hashlib.sha256((PTX / fname).read_bytes()).hexdigest()
        assert (fname, sha) in rows, f"ptx/REPORT.md has no section for {fname} as committed (sha256 {sha})"
        archs = [a for a in bp.ARCHS if int(a[3:]) >= info.get("min_cc", 75)]
        assert sorted(rows[(fname, sha)]) == sorted(archs), fname
        for a in archs:
            assert sorted(rows[(fname, sha)][a]) == sorted(info["entries"]), (fname, a)
            if fname.startswith("gemm"):
                spills = {k: s for k, s in rows[(fname, sha)][a].items() if s["spill_st"] or s["spill_ld"]}
                assert not spills, (fname, a, spills)


def test_a_changed_report_line_is_not_reused(tmp_path, monkeypatch):
    """A section whose recorded hash is not the file's (or an older report without hashes) is not taken."""
    bp = _build_ptx_module()
    text = (PTX / "REPORT.md").read_text()
    ver = re.search(r"with ptxas (release [\d.]+, V[\d.]+);", text).group(1)
    (tmp_path / "REPORT.md").write_text(re.sub(r" \(sha256 [0-9a-f]{64}\)", "", text, count=1))
    monkeypatch.setattr(bp, "PTX_DIR", tmp_path)
    first = sorted(MANIFEST["files"])[0]
    got = bp.committed_report(ver)
    assert not any(name == first for name, _ in got) and len(got) == len(MANIFEST["files"]) - 1
    assert bp.committed_report("release 0.0, V0.0.0") == {}   # another ptxas: nothing reused


def test_manifest_lists_every_ptx_file():
    assert MANIFEST["nvrtc"] == "12.0"
    assert sorted(MANIFEST["files"]) == sorted(p.name for p in PTX.glob("*.ptx"))
    for info in MANIFEST["files"].values():
        assert (PTX / info["source"]).is_file(), info["source"]


@pytest.mark.parametrize("fname", sorted(MANIFEST["files"]))
def test_ptx_header_and_entries(fname):
    info = MANIFEST["files"][fname]
    text = (PTX / fname).read_text()
    assert hashlib.sha256(text.encode()).hexdigest() == info["sha256"]
    assert re.search(r"^\.version 8\.0$", text, re.M)
    # sm_75 for everything but the tensor-core files, which say their minimum in the name and the manifest
    # (gemm_f16_sm75.ptx names sm_75, the default, so its manifest entry has no min_cc)
    sm = info.get("min_cc", 75)
    assert fname.endswith(f"_sm{sm}.ptx") or (sm == 75 and "_sm" not in fname)
    assert re.search(rf"^\.target sm_{sm}$", text, re.M)
    assert re.search(r"^\.address_size 64$", text, re.M)
    assert "-lineinfo" not in text and not re.search(r"^\s*\.loc\s", text, re.M)   # (.local is fine)
    entries = dict(re.findall(r"\.visible\s+\.entry\s+(\w+)\s*\((.*?)\)", text, re.S))
    assert sorted(entries) == sorted(info["entries"])
    for name, e in info["entries"].items():
        param = r"\.param\s+(?:\.align\s+\d+\s+)?(?:\.\w+\s+)*?\.(\w+)\s+\w+_param_\d+(\[\d+\])?"
        types = [t + n for t, n in re.findall(param, entries[name])]   # a struct by value: b8[N]
        assert [p["type"] for p in e["params"]] == types, name
        assert e["doc"], f"{name} has no doc"
        assert len({p["name"] for p in e["params"]}) == len(e["params"]), name


def test_entry_names_unique_across_files():
    names = [n for info in MANIFEST["files"].values() for n in info["entries"]]
    assert len(names) == len(set(names))
