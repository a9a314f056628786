"""The `rawdev` command line: help, version, driver choice (RAWDEV_DRIVER honoured, auto falls back to the
simulator with a notice), and PyTorch's cpu-build answers for memory queries on a machine without CUDA."""
import argparse
import os
import subprocess
import sys
import textwrap

import pytest
import rawdev
from rawdev.cli import build_parser

from _refs import HANG_GUARD_S


def _rawdev(*args, env=None, cwd=None, timeout=HANG_GUARD_S):
    full = {k: v for k, v in os.environ.items() if k != "RAWDEV_DRIVER"}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "rawdev.cli", *args], capture_output=True, text=True, env=full,
                          cwd=cwd, timeout=timeout)


def _no_gpu_here():
    from conftest import real_gpu
    if real_gpu() is None:
        pytest.skip("a real GPU is present: auto uses it")


def test_bare_commands_print_help():
    for args, words in ([(), ("usage: rawdev", "demo", "kernels", "kernel-stats", "mem", "selfcheck", "--version")],
                        [("mem",), ("usage: rawdev mem", "info", "model", "run", "show")]):
        p = _rawdev(*args)
        assert p.returncode == 0, p.stderr
        assert "required" not in p.stderr
        for w in words:
            assert w in p.stdout, (args, w, p.stdout)


def test_version():
    p = _rawdev("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"rawdev {rawdev.__version__}"


def _walk(parser, path="rawdev"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", helps.get(name)
                yield from _walk(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield f"{path} {'/'.join(action.option_strings) or action.dest}", action.help


def test_every_subcommand_and_argument_has_help():
    items = list(_walk(build_parser()))
    assert len(items) > 20
    missing = [what for what, h in items if not h or h == argparse.SUPPRESS]
    assert not missing, missing


def test_bogus_driver_is_one_clear_line():
    p = _rawdev("mem", "info", env={"RAWDEV_DRIVER": "bogus"})
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "RAWDEV_DRIVER='bogus'" in lines[0] and "cuda, sim, auto" in lines[0]


def test_explicit_cuda_driver_is_not_overridden_by_the_fallback():
    _no_gpu_here()
    p = _rawdev("mem", "info", env={"RAWDEV_DRIVER": "cuda"})
    assert p.returncode != 0
    assert "driver: sim" not in p.stdout and "No CUDA GPU found" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "NoDriverError" in lines[0], p.stderr


def test_mem_info_auto_falls_back_to_the_simulator_with_a_notice():
    _no_gpu_here()
    p = _rawdev("mem", "info")
    assert p.returncode == 0, p.stderr
    assert "No CUDA GPU found: using rawdev's simulated GPU." in p.stderr and p.stdout.startswith("driver: sim")


def test_mem_run_auto_falls_back_to_the_simulator(tmp_path):
    _no_gpu_here()
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import rawdev
        x = rawdev.ones(1000, device="cuda")
        print("allocated", rawdev.cuda.memory_allocated())
    """))
    p = _rawdev("mem", "run", str(script), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "No CUDA GPU found: using rawdev's simulated GPU." in p.stderr
    assert "allocated 4000" in p.stdout
    assert (tmp_path / "train.mem.json").exists() and "snapshot written" in p.stderr
    assert "Traceback" not in p.stderr


def test_memory_queries_answer_zero_without_cuda():
    _no_gpu_here()
    code = ("import rawdev.cuda as C\n"
            "print(C.is_available(), C.memory_allocated(), C.max_memory_allocated(), C.memory_reserved(),\n"
            "      C.max_memory_reserved(), C.memory_stats(), C.memory.memory_stats_as_nested_dict())\n"
            "C.reset_peak_memory_stats(); C.empty_cache()\n"
            "print(C.memory_summary())\n")
    env = {k: v for k, v in os.environ.items() if k != "RAWDEV_DRIVER"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=HANG_GUARD_S)
    assert p.returncode == 0, p.stderr
    first, *rest = p.stdout.splitlines()
    assert first == "False 0 0 0 0 {} {}"
    assert "CUDA is not available" in "\n".join(rest)
