"""PyTorch programs run unchanged but for the import line (tests/programs/): each on the cpu, and on the
simulated GPU (marked slow: `pytest -m slow`, which CI runs), and on a real GPU when there is one. Each
program prints a RESULT line; the checks are on what it learned, not on its exact numbers."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _refs import HANG_GUARD_S
from conftest import real_gpu

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "programs"


def _lower(a, b):
    return lambda r: r[b] < r[a]


CHECKS = {
    "quickstart.py": lambda r: r["accuracy"] > 0.3,
    "mnist_cnn.py": lambda r: r["last_loss"] < r["first_loss"] and abs(r["lr"] - 0.49) < 1e-6,
    "makemore_mlp.py": _lower("first_loss", "val_loss"),
    "char_gpt.py": _lower("first_loss", "val_loss"),
    "vae.py": _lower("first_loss", "last_loss"),
    "lstm_classifier.py": _lower("first_loss", "last_loss"),
    "general_checkpoint.py": lambda r: r["same"] == 1 and r["epoch"] == 3,
    "spatial_transformer.py": lambda r: r["last_loss"] < r["first_loss"] and r["accuracy"] > 0.5,
    "gp_regression.py": lambda r: r["last_nll"] < r["first_nll"] and r["rmse"] < 0.2 and r["min_var"] > 0,
    "packed_gru_tagger.py": _lower("first_loss", "last_loss"),
    "pca.py": lambda r: r["top3"] > 0.99 and r["err"] < 0.1 and r["agree"] < 1e-3 and abs(r["overlap"] - 1) < 1e-3,
    "mixture_density.py": lambda r: r["last_loss"] < r["first_loss"] - 1.0 and r["eval_nll"] < 0
    and r["sample_ok"] == 1,
    "save_whole_model.py": lambda r: r["same"] == 1 and r["refused"] == 1 and r["stats_ok"] == 1
    and r["last_loss"] < r["first_loss"] and r["accuracy"] > 0.8,
    "gcn_sparse.py": lambda r: r["last_loss"] < r["first_loss"] - 0.3 and r["test_acc"] > 0.6,
    "seq2seq_export.py": lambda r: r["last_loss"] < r["first_loss"] - 0.5 and r["accuracy"] > 0.3
    and r["onnx_err"] < 1e-4,
    "amp_transformer.py": lambda r: r["last_loss"] < r["first_loss"] - 0.5 and r["gap_bf16"] < 0.05
    and r["gap_f16"] < 0.05 and r["f16_scale"] >= 1.0,
    "fsdp_transformer.py": lambda r: r["last_loss"] < r["first_loss"] - 1.0 and r["resume_err"] < 1e-6
    and r["state_keys"] == 30,
    "rpc_parameter_server.py": lambda r: r["last_loss"] < r["first_loss"] - 0.1 and r["grad_err"] < 1e-5
    and r["trainers_ok"] == 1,
    "tensor_parallel_mlp.py": lambda r: r["last_loss"] < 0.5 * r["first_loss"] and r["out_err"] < 1e-5
    and r["sharded"] == 1 and r["same"] == 1,
    "squashed_gaussian_policy.py": lambda r: abs(r["mode"] - 0.6) < 0.05 and r["last_loss"] < r["first_loss"]
    and r["inside"] == 1 and r["mean_reward"] > -0.02,
    "fx_rewrite_profile.py": lambda r: r["last_loss"] < r["first_loss"] - 0.5 and r["fuse_err"] < 1e-4
    and r["rewrite_err"] < 1e-4 and r["profile_err"] == 0 and r["bn_left"] == 0 and r["silus"] == 2
    and r["adds"] == 2 and r["profiled"] == r["nodes"],
}


def run_program(name, driver, tmp_path, timeout=HANG_GUARD_S):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAWDEV_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if driver == "cpu":
        env["RAWDEV_DRIVER"] = "none"
    else:
        env["RAWDEV_DRIVER"] = driver
    proc = subprocess.run([sys.executable, str(PROGRAMS / name)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{name} on {driver} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    m = re.search(r"^RESULT (.*)$", proc.stdout, re.M)
    assert m, proc.stdout[-2000:]
    result = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    return proc.stdout, result


def test_every_program_has_a_check():
    assert sorted(p.name for p in PROGRAMS.glob("*.py")) == sorted(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_program_on_cpu(name, tmp_path):
    out, result = run_program(name, "cpu", tmp_path)
    assert "cuda" not in re.findall(r"[Uu]sing (?:device: )?(\w+)", out)
    assert CHECKS[name](result), (result, out[-2000:])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_program_on_the_simulated_gpu(name, tmp_path):
    out, result = run_program(name, "sim", tmp_path)
    assert CHECKS[name](result), (result, out[-2000:])


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_program_on_the_gpu(name, tmp_path):
    if real_gpu():
        pytest.skip(f"needs a real GPU: {real_gpu().split(': install')[0]}")
    out, result = run_program(name, "cuda", tmp_path)
    assert CHECKS[name](result), (result, out[-2000:])
