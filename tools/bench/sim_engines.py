#!/usr/bin/env python3
"""The simulated GPU's two engines on the same ops: the interpreter and the native engine (PTX compiled by LLVM).

    python tools/bench/sim_engines.py            # 5 calls per op after a first (compiling) call
    python tools/bench/sim_engines.py --json
    python tools/bench/sim_engines.py --quick    # two small ops, 2 calls (a smoke test of the script)

Each engine runs in its own process (``RAWDEV_SIM_ENGINE=interp`` or ``auto``) on ``RAWDEV_DRIVER=sim``: per op,
the wall time of its first call (for the native engine: lowering and compiling its kernels, or loading them from
the disk cache) and the mean of the next calls, synchronized. Every result is checked against rawdev's cpu path
(float64 reference tolerances), so a fast wrong engine cannot report a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import rawdev
from rawdev.sim.ptx import native
quick, reps = sys.argv[2] == "1", int(sys.argv[3])
n, rows, cols = (64, 8, 100) if quick else (256, 64, 1000)
g = np.random.default_rng(0)
a = rawdev.tensor(g.standard_normal((n, n)).astype(np.float32))
x = rawdev.tensor(g.standard_normal((rows, cols)).astype(np.float32))
w, b = rawdev.ones(cols), rawdev.zeros(cols)
t = rawdev.tensor(g.integers(0, cols, rows))
F = rawdev.nn.functional
ops = {
    f"matmul {n}x{n}x{n}": lambda d: d(a) @ d(a),
    f"softmax {rows}x{cols}": lambda d: rawdev.softmax(d(x), 1),
    f"layer_norm {rows}x{cols}": lambda d: F.layer_norm(d(x), (cols,), d(w), d(b)),
    f"sum(dim=1) {rows}x{cols}": lambda d: d(x).sum(1),
    f"cross_entropy {rows}x{cols}": lambda d: F.cross_entropy(d(x), d(t)),
    f"x * 1.5 + x {rows}x{cols}": lambda d: d(x) * 1.5 + d(x),
}
on_device = {id(v): v.cuda() for v in (a, x, w, b, t)}   # the inputs on the device first, outside the timing
rawdev.cuda.synchronize()
if quick:   # a smoke test of the script: two small kernels that compile in milliseconds
    ops = {k: v for k, v in ops.items() if k.startswith(("sum", "x * 1.5"))}
for name, f in ops.items():
    want = f(lambda v: v).numpy().astype(np.float64)
    dev = lambda v: on_device[id(v)]
    before = set(native.reasons())
    s = time.perf_counter()
    y = f(dev)
    rawdev.cuda.synchronize()
    first = time.perf_counter() - s
    s = time.perf_counter()
    for _ in range(reps):
        y = f(dev)
    rawdev.cuda.synchronize()
    per = (time.perf_counter() - s) / reps
    got = y.cpu().numpy().astype(np.float64)
    err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
    assert err < 1e-4, (name, err)
    print(json.dumps({"op": name, "first_s": round(first, 3), "per_call_ms": round(per * 1e3, 2),
                      "rel_err": err, "not_native": sorted(set(native.reasons()) - before)}))
"""


def run_engine(engine, quick, reps):
    env = {**os.environ, "RAWDEV_DRIVER": "sim", "RAWDEV_SIM_ENGINE": engine}
    r = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), "1" if quick else "0", str(reps)], env=env,
                       capture_output=True, text=True, timeout=3600)
    if r.returncode:
        raise SystemExit(f"{engine}: the child failed:\n{r.stdout[-2000:]}{r.stderr[-3000:]}")
    return [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="two small ops, 2 calls")
    a = ap.parse_args()
    reps = 2 if a.quick else 5
    res = {e: run_engine(e, a.quick, reps) for e in ("interp", "auto")}
    for ri, rn in zip(res["interp"], res["auto"]):
        row = {"bench": "sim_engines", "op": ri["op"], "interp_first_s": ri["first_s"],
               "interp_ms": ri["per_call_ms"], "native_first_s": rn["first_s"], "native_ms": rn["per_call_ms"],
               "speedup": round(ri["per_call_ms"] / max(rn["per_call_ms"], 1e-9), 1),
               "interpreted_kernels": rn["not_native"]}
        if a.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"{row['op']:<28} interpreter {row['interp_ms']:>9.2f} ms (first {row['interp_first_s']:.2f} s)"
                  f"   native {row['native_ms']:>9.2f} ms (first {row['native_first_s']:.2f} s)"
                  f"   {row['speedup']}x" + (f"   interpreted: {', '.join(row['interpreted_kernels'])}"
                                             if row["interpreted_kernels"] else ""), flush=True)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"# {time.perf_counter() - t0:.1f} s", file=sys.stderr)
