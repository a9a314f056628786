#!/usr/bin/env python3
"""Whole programs on the simulated GPU against rawdev's own cpu path: how much slower is the simulator?

    python tools/bench/sim_programs.py                     # every tests/programs/*.py and `rawdev demo` mlp/cnn/gpt
    python tools/bench/sim_programs.py --skip-demo         # the programs only
    python tools/bench/sim_programs.py --only pca --only demo-mlp
    python tools/bench/sim_programs.py --json              # one JSON line per program, then the summary
    python tools/bench/sim_programs.py --quick             # a tiny built-in program only (a smoke test)

Each program runs twice in a fresh process, exactly as a user runs it: once with ``RAWDEV_DRIVER=none``
(the cpu path) and once with ``RAWDEV_DRIVER=sim`` (the demo: ``--device cpu`` / ``--device sim``).
Printed for each: wall seconds of the whole process on each, their ratio, and the kernel launches per
second the simulator sustained (launches the simulated driver ran, over the simulator run's wall time,
counted by the driver's own ``stats()`` when the process exits); then the same for the processes' cpu
time (user + system), which is steadier on a machine shared with other jobs. The summary gives the
median and worst ratios. A program that fails or passes --timeout is reported as such (its ratio is
then a lower bound).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
DEMOS = ("mlp", "cnn", "gpt")

# --quick: a few elementwise ops and a reduction, so the script itself is proven in seconds (tools/gpu_check)
TINY = r"""
import rawdev as torch
dev = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.arange(64, dtype=torch.float32, device=dev)
y = (x * 1.5 + x).relu()
assert abs(float(y.sum().item()) - 2.5 * 63 * 64 / 2) < 1e-3
"""

# Run a program (a path, or "-m rawdev.cli ...") and, at exit, write the simulated driver's launch count to the
# file named by argv[1]: the count comes from the driver itself, not from parsing the program's output.
WRAPPER = r"""
import atexit, json, runpy, sys
out = sys.argv[1]
def _report():
    n = None
    if "rawdev.sim.driver" in sys.modules:
        n = sys.modules["rawdev.sim.driver"].stats()["kernels_run"]
    with open(out, "w") as f:
        json.dump({"launches": n}, f)
atexit.register(_report)
if sys.argv[2] == "-m":
    sys.argv = [sys.argv[3]] + sys.argv[4:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def targets(skip_demo, quick=False):
    if quick:
        return [("tiny", ["<tiny>"], ["<tiny>"])]
    out = [(p.stem, [str(p)], [str(p)]) for p in sorted(PROGRAMS.glob("*.py"))]
    if not skip_demo:
        for m in DEMOS:
            base = ["-m", "rawdev.cli", "demo", "--model", m, "--quiet-trace"]
            out.append((f"demo-{m}", base + ["--device", "cpu"], base + ["--device", "sim"]))
    return out


def run_one(argv, driver, timeout):
    """(wall seconds, cpu seconds, launches or None, error text or None) of one fresh process. The cpu seconds
    (user + system of the child) say more than the wall time on a machine shared with other jobs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAWDEV_") or k == "RAWDEV_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["RAWDEV_DRIVER"] = driver
    with tempfile.TemporaryDirectory(prefix="rawdev-simbench-") as tmp:
        stats = Path(tmp) / "stats.json"
        if argv == ["<tiny>"]:
            (Path(tmp) / "tiny.py").write_text(TINY)
            argv = [str(Path(tmp) / "tiny.py")]
        t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            p = subprocess.run([sys.executable, "-c", WRAPPER, str(stats)] + argv, cwd=tmp, env=env,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return time.perf_counter() - t0, None, None, f"timed out after {timeout} s"
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        if p.returncode:
            return wall, cpu, None, f"exit {p.returncode}: {(p.stderr or p.stdout)[-400:].strip()}"
        launches = json.loads(stats.read_text())["launches"] if stats.exists() else None
        return wall, cpu, launches, None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="run only this program (file stem, e.g. pca, or demo-mlp / demo-cnn / demo-gpt); repeatable")
    ap.add_argument("--skip-demo", action="store_true", help="leave out `rawdev demo` mlp/cnn/gpt")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per process before it counts as failed")
    ap.add_argument("--json", action="store_true", help="one JSON line per program and one for the summary")
    ap.add_argument("--quick", action="store_true", help="a tiny built-in program only (a smoke test of the script)")
    args = ap.parse_args(argv)
    todo = targets(args.skip_demo, args.quick)
    if args.only:
        known = {t[0] for t in targets(False)}
        unknown = sorted(set(args.only) - known)
        if unknown:
            ap.error(f"--only: unknown program(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        todo = [t for t in targets(False) if t[0] in args.only]
    if not args.json:
        print(f"{'program':28s} {'cpu s':>8s} {'sim s':>9s} {'ratio':>7s} {'launches':>9s} {'launch/s':>9s}   "
              f"{'cpu-time: cpu s':>15s} {'sim s':>9s} {'ratio':>7s}")
    ratios, cpu_ratios, worst_bound = [], [], False
    for name, cpu_argv, sim_argv in todo:
        cpu_s, cpu_c, _, cpu_err = run_one(cpu_argv, "none", args.timeout)
        sim_s, sim_c, launches, sim_err = run_one(sim_argv, "sim", args.timeout)
        ratio = sim_s / cpu_s if cpu_s else float("inf")
        cratio = sim_c / cpu_c if cpu_c and sim_c is not None else None
        if cpu_err is None:
            ratios.append(ratio)
            if cratio is not None:
                cpu_ratios.append(cratio)
            worst_bound |= sim_err is not None
        rate = launches / sim_s if launches and sim_s else None
        row = {"bench": "sim_programs", "program": name, "cpu_s": round(cpu_s, 2), "sim_s": round(sim_s, 2),
               "ratio": round(ratio, 1), "launches": launches, "launches_per_s": round(rate, 1) if rate else None,
               "cpu_cpu_s": round(cpu_c, 2) if cpu_c is not None else None,
               "sim_cpu_s": round(sim_c, 2) if sim_c is not None else None,
               "cpu_time_ratio": round(cratio, 1) if cratio is not None else None,
               "cpu_error": cpu_err, "sim_error": sim_err}
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            note = "".join(f"  [{w} FAILED: {e}]" for w, e in (("cpu", cpu_err), ("sim", sim_err)) if e)
            print(f"{name:28s} {cpu_s:8.2f} {sim_s:9.2f} {ratio:6.1f}x {launches if launches else '-':>9} "
                  f"{f'{rate:.0f}' if rate else '-':>9}   {cpu_c or 0:15.2f} {sim_c or 0:9.2f} "
                  f"{f'{cratio:.1f}x' if cratio is not None else '-':>7}{note}", flush=True)
    if ratios:
        summ = {"bench": "sim_programs", "program": "summary", "n": len(ratios),
                "median_ratio": round(statistics.median(ratios), 1), "worst_ratio": round(max(ratios), 1),
                "worst_is_lower_bound": worst_bound,
                "median_cpu_time_ratio": round(statistics.median(cpu_ratios), 1) if cpu_ratios else None,
                "worst_cpu_time_ratio": round(max(cpu_ratios), 1) if cpu_ratios else None}
        print(json.dumps(summ) if args.json else
              f"summary: {len(ratios)} programs, median ratio {summ['median_ratio']}x, worst {summ['worst_ratio']}x "
              f"(cpu time: median {summ['median_cpu_time_ratio']}x, worst {summ['worst_cpu_time_ratio']}x)"
              + (" (a simulator run failed or timed out: its ratio is a lower bound)" if worst_bound else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
