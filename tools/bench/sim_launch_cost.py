#!/usr/bin/env python3
"""The simulated GPU's fixed cost per launch, and one small op on it, rawdev's op path included.

    python tools/bench/sim_launch_cost.py            # 5 rounds of 300
    python tools/bench/sim_launch_cost.py --json
    python tools/bench/sim_launch_cost.py --quick  # 2 rounds of 20 (a smoke test of the script)

Three figures, each the median over rounds of the per-call cost (process CPU time by default, so that other jobs
on the machine inflate it less; --clock wall for wall time):

- interpreter: `PtxModule.launch` of elementwise.ptx's `scale` on 16 float32 in one 256-thread block (240 threads
  exit at once), straight into the interpreter: the simulator's own cost of a launch that does almost nothing;
- op: `y = x * 1.5` on a 16-element float32 cuda tensor under `RAWDEV_DRIVER=sim`, synchronized at the end of
  each round: rawdev's op path, the simulated driver's queue and pool, and the interpreter;
- two ops: `y = x * 1.5 + x`, per op (the figure the simulator's issue quotes).

The result of each is checked against numpy once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAWDEV_DRIVER", "sim")


def _clock(kind):
    return time.process_time if kind == "cpu" else time.perf_counter


def _rounds(fn, n, rounds, clock, finish=lambda: None):
    per = []
    for _ in range(rounds):
        t = clock()
        for _ in range(n):
            fn()
        finish()
        per.append((clock() - t) / n * 1e6)
    return statistics.median(per), per


def interpreter(n, rounds, clock):
    from rawdev.sim.memory import DeviceMemory
    from rawdev.sim.ptx import PtxModule
    from sim_speed import pack  # this folder is the script's own: sys.path[0]
    m = PtxModule((ROOT / "ptx" / "elementwise.ptx").read_text())
    e = m.entries["scale"]
    mem = DeviceMemory(1 << 26)
    x = np.arange(16, dtype=np.float32)
    dx, dy = mem.alloc(64), mem.alloc(64)
    mem.write(dx, x.tobytes())
    params = pack(e, dy, dx, 1.5, 16)

    def go():
        m.launch("scale", (1, 1, 1), (256, 1, 1), params=params, memory=mem)

    go()
    ok = np.array_equal(np.frombuffer(mem.read(dy, 64), np.float32), x * np.float32(1.5))
    med, per = _rounds(go, n, rounds, clock)
    return med, per, ok


def ops(n, rounds, clock, two):
    import rawdev
    x = rawdev.arange(16.0, device="cuda")

    def one():
        return x * 1.5

    def both():
        return x * 1.5 + x

    fn = both if two else one
    for _ in range(20):
        fn()
    y = fn().cpu().numpy()
    ref = np.arange(16, dtype=np.float32) * np.float32(1.5) + (np.arange(16, dtype=np.float32) if two else 0)
    med, per = _rounds(fn, n, rounds, clock, rawdev.cuda.synchronize)
    k = 2 if two else 1
    return med / k, [p / k for p in per], bool(np.array_equal(y, ref))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=300, help="calls per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 rounds of 20 calls")
    a = ap.parse_args(argv)
    if a.quick:
        a.n, a.rounds = 20, 2
    clock = _clock(a.clock)
    rows = [("interpreter: PtxModule.launch(scale), 16 floats, 1x256 threads", interpreter(a.n, a.rounds, clock)),
            ("op: x * 1.5 on cuda (sim), 16 floats", ops(a.n, a.rounds, clock, False)),
            ("two ops: x * 1.5 + x on cuda (sim), per op", ops(a.n, a.rounds, clock, True))]
    ok = all(r[2] for _, r in rows)
    for label, (med, per, good) in rows:
        if a.json:
            print(json.dumps({"bench": "sim_launch_cost", "case": label, "clock": a.clock, "us_median": round(med, 1),
                              "us_rounds": [round(p, 1) for p in per], "correct": good}))
        else:
            print(f"{label:66s} {med:8.1f} us ({a.clock}; rounds {', '.join(f'{p:.0f}' for p in per)})"
                  f"{'' if good else '  WRONG RESULT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
