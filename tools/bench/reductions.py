#!/usr/bin/env python3
"""Reductions, scans and sorts on the device, in GB/s of input read (float32): sum, mean, amax, var, logsumexp,
norm over the last dim and over every element, cumsum (log-step scan), sort (host order + device gather). Each
result is checked against float64 numpy first, so a fast wrong op posts nothing.

    python tools/bench/reductions.py                            # real GPU: 4096 x 4096
    RAWDEV_DRIVER=sim python tools/bench/reductions.py --quick  # tiny shapes on the simulator: proves the script
    --json: one JSON line per measurement
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402


def _lse(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return (np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m).squeeze(axis)


OPS = {   # name -> (rawdev call (x, dim), float64 reference (a, axis))
    "sum": (lambda x, d: x.sum(d), lambda a, ax: a.sum(ax)),
    "mean": (lambda x, d: x.mean(d), lambda a, ax: a.mean(ax)),
    "amax": (lambda x, d: x.amax(d), lambda a, ax: a.max(ax)),
    "var": (lambda x, d: x.var(d), lambda a, ax: a.var(ax, ddof=1)),
    "logsumexp": (lambda x, d: x.logsumexp(() if d is None else d), _lse),
    "norm": (lambda x, d: x.norm(dim=d), lambda a, ax: np.sqrt((a * a).sum(ax))),
    "cumsum": (lambda x, d: x.cumsum(-1), lambda a, ax: np.cumsum(a, -1)),
    "sort": (lambda x, d: x.sort(-1).values, lambda a, ax: np.sort(a, -1)),
}
ROW_ONLY = {"cumsum", "sort"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    a = ap.parse_args()
    import rawdev
    shape = (33, 70) if a.quick else (4096, 4096)
    reps, warmup = (1, 0) if a.quick else (10, 2)
    rng = np.random.default_rng(0)
    host = rng.standard_normal(shape).astype(np.float32)
    x = rawdev.tensor(host, device="cuda")
    sync = rawdev.cuda.synchronize
    if not a.json:
        print(f"{'op':<10} {'dims':<6} {'shape':<14} {'ms':>9} {'GB/s':>8} {'relerr':>9}")
    for name, (fn, ref) in OPS.items():
        for dims in ((-1,) if name in ROW_ONLY else (-1, None)):
            want = ref(host.astype(np.float64), -1 if dims == -1 else None)
            got = np.asarray(fn(x, dims).cpu(), np.float64)
            err = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
            if err > 1e-4:
                raise SystemExit(f"rawdev {name} wrong: relative error {err:.2e} against float64")
            with rawdev.no_grad():
                for _ in range(warmup):
                    fn(x, dims)
                sync()
                times = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    fn(x, dims)
                    sync()
                    times.append(time.perf_counter() - t0)
            ms = statistics.median(times) * 1e3
            gbs = host.nbytes / (ms * 1e-3) / 1e9
            row = {"bench": "reductions", "op": name, "dim": dims, "shape": list(shape), "ms": ms, "gb_s": gbs,
                   "relerr": err}
            if a.json:
                print(json.dumps(row))
            else:
                print(f"{name:<10} {str(dims):<6} {str(shape):<14} {ms:9.3f} {gbs:8.2f} {err:9.1e}")


if __name__ == "__main__":
    main()
