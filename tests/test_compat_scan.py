"""The compatibility scanner (tools/compat_scan.py) on two tiny in-repo programs: which references it sees,
how aliases resolve, and how each is judged against rawdev."""
import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data" / "compat_scan"


@pytest.fixture(scope="module")
def scanner():
    spec = importlib.util.spec_from_file_location("compat_scan", ROOT / "tools" / "compat_scan.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_references_and_aliases(scanner):
    refs = scanner.scan_source((SAMPLES / "train_small.py").read_text())
    assert ("import", "torch.nn") in refs and ("import", "torch.nn.functional") in refs
    assert ("import", "torch.utils.data.DataLoader") in refs and ("import", "torch.optim") in refs
    assert ("attr", "torch.nn.Linear") in refs and ("attr", "torch.nn.functional.relu") in refs
    assert ("attr", "torch.optim.SGD") in refs and ("kwarg", "torch.optim.SGD(momentum=)") in refs
    assert ("kwarg", "torch.utils.data.DataLoader(no_such_option=)") in refs
    assert ("kwarg", "torch.nn.Linear(bias=)") in refs
    assert ("method", "Tensor.clamp") in refs and ("method", "Module.parameters") in refs
    assert ("method", "Optimizer.step") in refs and ("method", "Tensor.backward") in refs
    assert not any("frobnicate" in name for _, name in refs)          # not a torch method name
    assert ("attr", "torch.no_such_function") in refs
    assert ("attr", "torch.distributed.rpc.init_rpc") in refs
    assert {("index", "x[None]"), ("index", "x[...]"), ("index", "x[[list]]")} <= refs
    # `np.zeros(...)...` is rooted at another import: no Tensor method reference from it
    shadow = scanner.scan_source((SAMPLES / "shadowed.py").read_text())
    assert ("import", "torch.utils.data") in shadow and ("attr", "torch.backends") in shadow
    assert not any(name.startswith("torch.utils.data.sort") for _, name in shadow)   # a list's method
    assert ("method", "Tensor.sort") in shadow      # the receiver's type is not inferred (the stated heuristic)


def test_judgements_against_rawdev(scanner, monkeypatch):
    monkeypatch.setenv("RAWDEV_DRIVER", "none")
    assert scanner.check("attr", "torch.nn.functional.relu") == ("ok", "")
    assert scanner.check("import", "torch.utils.data.DataLoader") == ("ok", "")
    assert scanner.check("kwarg", "torch.optim.SGD(momentum=)") == ("ok", "")
    assert scanner.check("kwarg", "torch.utils.data.DataLoader(no_such_option=)")[0] == "missing"
    assert scanner.check("attr", "torch.no_such_function")[0] == "missing"
    assert scanner.check("method", "Tensor.clamp") == ("ok", "")
    assert scanner.check("method", "Tensor.no_such_method")[0] == "missing"
    assert scanner.check("index", "x[None]") == ("ok", "") and scanner.check("index", "x[...] = v") == ("ok", "")
    assert scanner.check("attr", "torch.distributed.rpc.init_rpc") == ("ok", "")
    assert scanner.check("attr", "torch.distributed.fsdp.FullyShardedDataParallel") == ("ok", "")
    state, why = scanner.check("attr", "torch.distributed.pipelining.pipeline")
    assert state == "refused" and "pipeline" in why and "data parallel" in why


def test_from_import_of_a_module_shadowed_by_a_function(scanner, monkeypatch):
    # `from torch.autograd.gradcheck import gradcheck`: the module, though torch.autograd.gradcheck is the function
    monkeypatch.setenv("RAWDEV_DRIVER", "none")
    assert scanner.check("import", "torch.autograd.gradcheck.gradcheck") == ("ok", "")
    assert scanner.check("kwarg", "torch.autograd.gradcheck.gradcheck(eps=)") == ("ok", "")
    assert scanner.check("import", "torch.autograd.gradcheck.no_such_name")[0] == "missing"


def test_the_report(scanner, tmp_path):
    programs, skipped = scanner.scan([str(SAMPLES)])
    assert sorted(programs) == ["shadowed.py", "train_small.py"] and skipped == []
    summary, rows = scanner.report(programs)
    assert summary["programs"] == 2 and summary["references"] == sum(len(r) for r in programs.values())
    assert summary["resolved"] + summary["refused"] + summary["missing"] == summary["references"]
    missing = {name for name, _, _, status, _ in rows if status == "missing"}
    assert {"torch.no_such_function", "torch.utils.data.DataLoader(no_such_option=)"} <= missing
    out = tmp_path / "scan.md"
    assert scanner.main([str(SAMPLES), "--out", str(out)]) == 0
    text = out.read_text()
    assert "references resolve" in text and "`torch.no_such_function`" in text
    assert os.path.getsize(out) > 0
