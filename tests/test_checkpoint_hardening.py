"""Hostile or damaged checkpoints end in a CheckpointError that names the file, the tensor and the problem,
checked before anything is allocated; saving is deterministic. A hypothesis fuzzer runs a few hundred
mutated checkpoints through rawdev.load and load_state_dict (tools/fuzz_checkpoints.py runs thousands)."""
import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import rawdev
from rawdev import serialization
from rawdev.serialization import CheckpointError, load, save

ROOT = Path(__file__).resolve().parents[1]


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_checkpoints", ROOT / "tools" / "fuzz_checkpoints.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fz = _fuzz_module()


def write(path, header, body=b"", length=None):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text) if length is None else length) + text + body)
    return path


def f32(name="w", shape=(2,), begin=0):
    n = int(np.prod(shape)) * 4
    return {name: {"dtype": "F32", "shape": list(shape), "data_offsets": [begin, begin + n]}}


@pytest.mark.parametrize("dtype", ["F8_E4M3", "F8_E5M2", "F4", "U16", "U64", "C64"])
def test_foreign_safetensors_dtypes_name_the_tensor_and_dtype(tmp_path, dtype):
    p = write(tmp_path / "x", {"layer.w": {"dtype": dtype, "shape": [4], "data_offsets": [0, 4]}}, b"\0" * 4)
    with pytest.raises(CheckpointError, match=f"'layer.w' .* has dtype {dtype}"):
        load(p)


@pytest.mark.parametrize("dtype", ["F128", "", "float32"])
def test_unknown_dtype_names_are_refused_by_name(tmp_path, dtype):
    p = write(tmp_path / "x", {"layer.w": {"dtype": dtype, "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4)
    with pytest.raises(CheckpointError, match="'layer.w' .* not a safetensors dtype"):
        load(p)


def test_huge_sparse_tensor_fails_the_budget_check_naming_it(tmp_path, monkeypatch):
    """A valid header claiming a 64 GiB tensor, the file extended sparsely to that size: it fits the
    file, so only the memory budget stands between it and a 64 GiB allocation."""
    n = 2 ** 34
    p = write(tmp_path / "huge", {"big.weight": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}})
    os.truncate(p, p.stat().st_size + 4 * n)
    monkeypatch.setattr(serialization, "host_memory_available", lambda: 8 << 30)
    with pytest.raises(CheckpointError, match=r"tensor 'big.weight' \(F32 \[17179869184\], 64.0 GiB\).*8.0 GiB"):
        load(p)


def test_header_checks(tmp_path):
    body = b"\0" * 8
    cases = {
        "header claims": (f32(), body, 1 << 40),
        "not valid JSON": (None, b"", None),
        "overlap": ({**f32("a", (2,)), **f32("b", (1,), begin=4), **f32("c", (1,), begin=4)}, b"\0" * 12, None),
        "needs 8 bytes": ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4, None),
        "end past the file": (f32("w", (4,)), body, None),
        "belong to no tensor": (f32("w", (1,)), body, None),
        "begin <= end": ({"w": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}}, body, None),
        "sizes >= 0": ({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, body, None),
        "not an object": ([1, 2], b"", None),
        "exactly dtype, shape": ({"w": {"dtype": "F32", "shape": [2]}}, body, None),
        "__metadata__": ({"__metadata__": {"a": 1}, **f32()}, body, None),
    }
    for why, (header, data, length) in cases.items():
        p = tmp_path / why.replace(" ", "_")
        if header is None:
            p.write_bytes(struct.pack("<Q", 3) + b"{x}")
        else:
            write(p, header, data, length)
        with pytest.raises(CheckpointError, match=why.replace("(", r"\(").replace("[", r"\[")):
            load(p)
    dup = tmp_path / "dup"
    text = b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, ' \
           b'"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    dup.write_bytes(struct.pack("<Q", len(text)) + text + b"\0" * 4)
    with pytest.raises(CheckpointError, match="'w' appears twice"):
        load(dup)


def test_tiny_and_empty_files(tmp_path):
    for data in (b"", b"\1\0\0", struct.pack("<Q", 0)):
        (tmp_path / "t").write_bytes(data)
        with pytest.raises(CheckpointError):
            load(tmp_path / "t")


def test_a_panic_from_the_reader_becomes_a_checkpoint_error(tmp_path, monkeypatch):
    class PanicException(BaseException):
        pass

    save({"w": rawdev.tensor(np.ones(3, np.float32))}, tmp_path / "ok")

    def panicking(*a, **k):
        raise PanicException("called `Result::unwrap()` on an `Err` value")

    monkeypatch.setattr(serialization, "safe_open", panicking)
    with pytest.raises(CheckpointError, match="PanicException"):
        load(tmp_path / "ok")


def _model_bytes(tmp_path, name):
    sd = fz.base_models()["all_dtypes"]().state_dict()
    save(sd, tmp_path / name, metadata={"z": "1", "a": "2", "m": "3"})
    return (tmp_path / name).read_bytes()


def test_saving_the_same_model_twice_gives_the_same_bytes(tmp_path):
    first = _model_bytes(tmp_path, "a")
    assert all(_model_bytes(tmp_path, f"b{i}") == first for i in range(8))
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); import test_checkpoint_hardening as t; "
            f"import pathlib; sys.stdout.buffer.write(t._model_bytes(pathlib.Path({str(tmp_path)!r}), 'c'))")
    for seed in ("0", "1"):   # another process, another hash seed
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                             env=dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))).stdout
        assert out == first


def test_saved_file_reads_back_with_safetensors(tmp_path):
    from safetensors.numpy import load_file
    sd = fz.base_models()["mlp"]().state_dict()
    save(sd, tmp_path / "m")
    arrays = load_file(str(tmp_path / "m"))
    assert set(arrays) == set(sd) and all(np.array_equal(arrays[k], sd[k].numpy()) for k in sd)


@pytest.mark.parametrize("kind", sorted(fz.MUTATIONS))
def test_each_mutation_kind_ends_in_a_rawdev_outcome(tmp_path, kind):
    import random
    bases = fz.base_bytes(str(tmp_path))
    for i in range(12):
        r = random.Random(i)
        name = sorted(bases)[i % 2]
        data, sparse, _ = fz.mutate(bases[name], r, [kind])
        p = tmp_path / f"{kind}_{i}"
        fz.write_case(p, data, sparse)
        outcome, detail = fz.run_case(str(p), name)
        assert outcome in ("loaded", "rawdev error"), f"{kind} #{i}: {outcome}: {detail}"
        p.unlink()


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    return fz.base_bytes(str(tmp_path_factory.mktemp("fuzz_bases")))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(["mlp", "all_dtypes"]),
       kinds=st.lists(st.sampled_from(sorted(fz.MUTATIONS)), min_size=1, max_size=3), rnd=st.randoms())
def test_fuzzed_checkpoints_end_in_rawdev_errors_and_leave_the_model_unchanged(tmp_path, bases, base, kinds, rnd):
    data, sparse, _ = fz.mutate(bases[base], rnd, kinds)
    p = tmp_path / "case.safetensors"
    fz.write_case(p, data, sparse)
    try:
        outcome, detail = fz.run_case(str(p), base)
    finally:
        p.unlink()
    assert outcome in ("loaded", "rawdev error"), f"{kinds}: {outcome}: {detail}"
