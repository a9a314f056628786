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
