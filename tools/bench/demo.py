#!/usr/bin/env python3
"""`rawdev demo` — the README's main command — timed end to end, with its test accuracy.

Runs the demo in a fresh process exactly as a user would (`python -m rawdev.cli demo`), on whatever
RAWDEV_DRIVER selects (tools/gpu_check sets it), and reports wall time, the demo's own total time and
the test accuracy. Targets: on the simulator on a 2-core machine ≤ 60 s and ≥ 95 %.
--quick: one epoch (a smoke test). --json: one JSON line.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one epoch")
    ap.add_argument("--json", action="store_true", help="one JSON line")
    a = ap.parse_args(argv)
    epochs = 1 if a.quick else 8
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "rawdev.cli", "demo", "--epochs", str(epochs), "--quiet-trace"],
                       capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - t0
    if p.returncode:
        print(p.stdout[-2000:] + p.stderr[-4000:], file=sys.stderr)
        return p.returncode
    acc = re.search(r"test accuracy: ([\d.]+)%", p.stdout)
    own = re.search(r"total time: ([\d.]+) s", p.stdout)
    drv = re.search(r"driver: (\S+)", p.stdout)
    res = {"bench": "demo", "epochs": epochs, "driver": drv.group(1) if drv else None,
           "wall_s": round(wall, 2), "demo_total_s": float(own.group(1)) if own else None,
           "test_accuracy_pct": float(acc.group(1)) if acc else None}
    print(json.dumps(res) if a.json else
          f"rawdev demo ({epochs} epochs, driver {res['driver']}): {res['test_accuracy_pct']}% test accuracy, "
          f"{res['wall_s']} s wall ({res['demo_total_s']} s by the demo's own clock)")
    return 0 if acc else 1


if __name__ == "__main__":
    sys.exit(main())
