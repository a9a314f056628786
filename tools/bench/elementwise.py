#!/usr/bin/env python3
"""Elementwise throughput on float32: a unary op (exp), a binary op (add, and mul with broadcasting of a row),
a fused activation (gelu) and a binary_math op (atan2), in GB/s of the bytes each must move (inputs read, output
written), beside PyTorch's same op when torch with CUDA is importable. Inputs are larger than the L2 cache on
a GPU run and each rawdev result is checked against numpy first, so a fast wrong kernel posts nothing.

    python tools/bench/elementwise.py                          # real GPU: 64 Mi elements
    RAWDEV_DRIVER=sim python tools/bench/elementwise.py --quick   # tiny shapes on the simulator: proves the script
    --json: one JSON line per measurement
"""
import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

OPS = {  # name: (number of tensor inputs, rawdev call, numpy reference, bytes per output element)
    "exp": (1, lambda m, a, b: m.exp(a), lambda a, b: np.exp(a), 8),
    "add": (2, lambda m, a, b: a + b, lambda a, b: a + b, 12),
    "mul_row": (2, lambda m, a, b: a * b[:1], lambda a, b: a * b[:1], 8),
    "gelu": (1, lambda m, a, b: m.nn.functional.gelu(a), None, 8),
    "atan2": (2, lambda m, a, b: m.atan2(a, b), lambda a, b: np.arctan2(a, b), 12),
}


def _median_ms(fn, sync, reps, warmup):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _gelu(a):
    return 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))


def bench(lib, name, shape, reps, warmup, check):
    n_in, call, ref, per = OPS[name]
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    if lib == "rawdev":
        import rawdev as m
        ta, tb = m.tensor(a, device="cuda"), m.tensor(b, device="cuda")
        sync = m.cuda.synchronize
    else:
        import torch as m
        ta, tb = m.tensor(a, device="cuda"), m.tensor(b, device="cuda")
        sync = m.cuda.synchronize
    if check:      # the first 64 rows, so the float64 reference stays cheap at the GPU size
        got = call(m, ta, tb).cpu().numpy()[:64]
        want = (ref or (lambda x, y: _gelu(x)))(a[:64].astype(np.float64), b.astype(np.float64))[:64]
        err = float(np.max(np.abs(got - want) / (1 + np.abs(want))))
        if err > 1e-4:
            raise SystemExit(f"rawdev {name} wrong: max relative error {err:.2e} against float64")

    def run():
        call(m, ta, tb)
    ms = _median_ms(run, sync, reps, warmup)
    return ms, per * float(np.prod(shape)) / (ms * 1e-3) / 1e9


def torch_ready():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    a = ap.parse_args()
    shape = (64, 129) if a.quick else (8192, 8192)
    reps, warmup = (1, 0) if a.quick else (20, 3)
    has_torch = not a.quick and torch_ready()
    if not a.json:
        print(f"{'op':<10} {'shape':<14} {'rawdev ms':>10} {'rawdev GB/s':>12} {'torch ms':>9} {'torch GB/s':>11}")
    for name in OPS:
        ms, gbs = bench("rawdev", name, shape, reps, warmup, check=True)
        t = bench("torch", name, shape, reps, warmup, check=False) if has_torch else None
        row = {"bench": "elementwise", "op": name, "shape": list(shape), "rawdev_ms": ms, "rawdev_gbs": gbs,
               "torch_ms": t[0] if t else None, "torch_gbs": t[1] if t else None}
        if a.json:
            print(json.dumps(row))
        else:
            ts = f"{t[0]:9.3f} {t[1]:11.1f}" if t else f"{'-':>9} {'-':>11}"
            print(f"{name:<10} {str(shape):<14} {ms:10.3f} {gbs:12.2f} {ts}")


if __name__ == "__main__":
    main()
