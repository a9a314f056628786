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
DECLARED = {
    "normalization": {"layer_norm", "rms_norm", "group_norm", "instance_norm", "batch_norm"},
    "conv": {"conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold",
             "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
             "adaptive_max_pool1d", "adaptive_max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
             "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
             "conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"},
    "resample": {"interpolate", "upsample", "upsample_bilinear", "upsample_nearest", "pad", "pixel_shuffle",
                 "pixel_unshuffle", "channel_shuffle"},
    "embedding_bag": {"embedding_bag"},
    "rnn": {"lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"},
    "attention": {"scaled_dot_product_attention", "multi_head_attention_forward"},
    "gather_scatter": {"gather", "scatter", "scatter_add", "scatter_reduce", "take", "take_along_dim", "index_fill",
                       "masked_scatter", "masked_select", "select_scatter", "slice_scatter", "diagonal_scatter",
                       "put", "put_", "one_hot"},
    "select": {"where", "masked_fill", "clamp", "clamp_min", "clamp_max", "clip", "maximum", "minimum", "nonzero",
               "argwhere", "unravel_index"},
    "reduce": {"sum", "mean", "max", "min", "argmax", "argmin"},
    "dropout": {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"},
    "index_along_dim": {"index_select", "index_add", "index_copy", "index_add_", "index_copy_"},
}


# Families that declare no ops: their device-free side lives outside rawdev/ops, so the folder is its two backends.
DEVICE_FREE_ELSEWHERE = {"optim_steps": "rawdev/optim"}


def _declaring_files(family):
    """The family's files other than its __init__ and its two backends: functions.py and any it splits into."""
    return sorted(p for p in (OPS / family).glob("*.py") if p.name not in ("__init__.py", "cpu.py", "cuda.py"))


def test_the_families_are_folders():
    moved = ("normalization", "conv", "resample", "embedding_bag", "gather_scatter", "select", "rnn", "attention",
             "reduce", "dropout", "index_along_dim")
    assert set(moved) <= set(FAMILIES)
    for family in moved:
        assert not (OPS / f"{family}.py").exists(), f"rawdev/ops/{family}.py beside the folder"


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
    """functions.py (and any declaring file beside it) reaches the arithmetic through the dispatcher only: it imports
    neither backend and never branches on a device type."""
    files = _declaring_files(family)
    if family in DEVICE_FREE_ELSEWHERE:
        assert not files, f"{family}: {DEVICE_FREE_ELSEWHERE[family]} is its device-free side, not files here"
        return
    assert OPS / family / "functions.py" in files
    for path in files:
        src = path.read_text()
        tree = ast.parse(src)
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imported & {"cpu", "cuda", "cuda_launch", "cuda_cast"}, (path.name, imported)
        for attr in ("is_cuda", "is_cpu"):
            assert not any(isinstance(n, ast.Attribute) and n.attr == attr for n in ast.walk(tree)), (path.name, attr)
        assert '"cuda"' not in src and '"cpu"' not in src, path.name


@pytest.mark.parametrize("family", sorted(DECLARED))
def test_the_family_declares_its_ops(family):
    decls = {d.name for d in registry._DECLS.values() if d.family == family}
    assert decls == DECLARED[family]
    modules = {f"rawdev.ops.{family}.{p.stem}" for p in _declaring_files(family)}
    for name in DECLARED[family]:
        assert registry._DECLS[name].fn.__module__ in modules, name


@pytest.mark.parametrize("family", FAMILIES)
def test_no_file_in_the_family_is_over_600_lines(family):
    long = {p.name: n for p in (OPS / family).glob("*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert not long, long
