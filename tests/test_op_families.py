"""The family folders of rawdev/ops (rawdev/ops/<family>/, docs/INTERNALS.md "Ops: declared once"): each holds an
`__init__.py` that imports nothing, a device-free `functions.py` that declares the ops, and a `cpu.py` and a
`cuda.py` exporting the same backend functions with the same signatures, which the cpu and cuda backends (ops/cpu.py,
ops/cuda.py, where the dispatcher looks names up) hold as the very same objects."""
import ast
import importlib
import inspect
from pathlib import Path

import pytest
import rawdev
from rawdev.ops import cpu as cpu_backend
from rawdev.ops import cuda as cuda_backend
from rawdev.ops import registry

OPS = Path(rawdev.__file__).parent / "ops"
FAMILIES = sorted(p.name for p in OPS.iterdir() if (p / "__init__.py").is_file())
DECLARED = {"normalization": {"layer_norm", "rms_norm", "group_norm", "instance_norm", "batch_norm"}}


def test_the_normalization_family_is_a_folder():
    assert "normalization" in FAMILIES


@pytest.mark.parametrize("family", FAMILIES)
def test_the_family_init_imports_nothing(family):
    # ops/cpu.py imports <family>/cpu.py while ops/dispatch.py is half-imported; the package __init__ runs first
    tree = ast.parse((OPS / family / "__init__.py").read_text())
    found = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not found, f"rawdev/ops/{family}/__init__.py imports at lines {found}"


@pytest.mark.parametrize("family", FAMILIES)
def test_the_cpu_and_cuda_files_export_the_same_functions_and_the_backends_hold_them(family):
    cpu = importlib.import_module(f"rawdev.ops.{family}.cpu")
    cuda = importlib.import_module(f"rawdev.ops.{family}.cuda")
    assert sorted(cpu.__all__) == sorted(cuda.__all__)
    for name in cpu.__all__:
        assert inspect.signature(getattr(cpu, name)) == inspect.signature(getattr(cuda, name)), name
        assert getattr(cpu_backend, name) is getattr(cpu, name), f"ops/cpu.py does not hold {family}.cpu.{name}"
        assert getattr(cuda_backend, name) is getattr(cuda, name), f"ops/cuda.py does not hold {family}.cuda.{name}"


@pytest.mark.parametrize("family", FAMILIES)
def test_the_declarations_name_no_device(family):
    """functions.py reaches the arithmetic through the dispatcher only: it imports neither backend and never
    branches on a device type."""
    src = (OPS / family / "functions.py").read_text()
    tree = ast.parse(src)
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"cpu", "cuda", "cuda_launch", "cuda_cast"}, imported
    for attr in ("is_cuda", "is_cpu"):
        assert not any(isinstance(n, ast.Attribute) and n.attr == attr for n in ast.walk(tree)), attr
    assert '"cuda"' not in src and '"cpu"' not in src


@pytest.mark.parametrize("family", sorted(DECLARED))
def test_the_family_declares_its_ops(family):
    decls = {d.name for d in registry._DECLS.values() if d.family == family}
    assert decls == DECLARED[family]
    for name in DECLARED[family]:
        assert getattr(rawdev.nn.functional, name).__module__ == f"rawdev.ops.{family}.functions"


@pytest.mark.parametrize("family", FAMILIES)
def test_no_file_in_the_family_is_over_600_lines(family):
    long = {p.name: n for p in (OPS / family).glob("*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert not long, long
