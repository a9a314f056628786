#!/usr/bin/env python3
"""Indexing throughput: gather (gather_b4), scatter_add (scatter_add_f32, atomics) and index_select
(index_select_b4) on float32, in GB/s of the bytes each op must move (index, values read, values written), beside
PyTorch's same op on the same inputs when torch with CUDA is importable. Each rawdev result is checked against
numpy first, so a fast wrong kernel posts nothing.

    python tools/bench/indexing.py                          # real GPU: 4096 x 4096 gathers, 65536 rows of 256
    RAWDEV_DRIVER=sim python tools/bench/indexing.py --quick   # tiny shapes on the simulator: proves the script
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


def cases(quick):
    """(op, input shape, index shape, dim): gathers and scatter-adds of a square along dim 1 (scatter-adds with
    many repeats: each row's index spans a quarter of the columns), index_select of rows."""
    n, rows, width = (64, 256, 32) if quick else (4096, 65536, 256)
    return [("gather", (n, n), (n, n), 1), ("scatter_add", (n, n), (n, n), 1),
            ("index_select", (rows, width), (rows,), 0)]


def inputs(op, shape, ishape, dim, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    hi = shape[dim] // 4 if op == "scatter_add" else shape[dim]
    idx = rng.integers(0, max(hi, 1), ishape)
    src = rng.standard_normal(ishape).astype(np.float32) if op == "scatter_add" else None
    return x, idx, src


def reference(op, x, idx, src, dim):
    if op == "gather":
        return np.take_along_axis(x, idx, dim)
    if op == "index_select":
        return x[idx]
    out = x.astype(np.float64)
    np.add.at(out, (np.arange(x.shape[0])[:, None], idx), src)
    return out


def moved_bytes(op, x, idx, src):
    n = idx.size
    if op == "gather":
        return n * (8 + 4 + 4)                  # index, a value read, a value written
    if op == "scatter_add":                     # out of place as PyTorch's: the copy of x counts too
        return n * (8 + 4 + 8) + 2 * x.size * 4    # index, a source read, a read-modify-write of the target
    return n * 8 + 2 * n * x.shape[1] * 4       # index, each selected row read and written


def run(lib, op, x, idx, src, dim, device):
    if op == "gather":
        return lambda: lib.gather(x, dim, idx)
    if op == "scatter_add":
        return lambda: x.scatter_add(dim, idx, src)
    return lambda: x.index_select(dim, idx)


def bench_rawdev(op, x, idx, src, dim, reps, warmup):
    import rawdev
    tx, ti = rawdev.tensor(x, device="cuda"), rawdev.tensor(idx, device="cuda")
    ts = rawdev.tensor(src, device="cuda") if src is not None else None
    fn = run(rawdev, op, tx, ti, ts, dim, "cuda")
    got = np.asarray(fn().cpu(), np.float64)
    ref = reference(op, x, idx, src, dim)
    err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
    ms = _median_ms(fn, rawdev.cuda.synchronize, reps, warmup)
    return ms, err


def bench_torch(op, x, idx, src, dim, reps, warmup):
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except Exception:
        return None
    tx, ti = torch.as_tensor(x, device="cuda"), torch.as_tensor(idx, device="cuda")
    ts = torch.as_tensor(src, device="cuda") if src is not None else None
    return _median_ms(run(torch, op, tx, ti, ts, dim, "cuda"), torch.cuda.synchronize, reps, warmup)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    a = ap.parse_args(argv)
    from rawdev.runtime import get_device, seam
    dev = get_device(0)
    reps, warmup = (3, 1) if a.quick else (20, 3)
    rng = np.random.default_rng(0)
    rows = []
    for op, shape, ishape, dim in cases(a.quick):
        x, idx, src = inputs(op, shape, ishape, dim, rng)
        ms, err = bench_rawdev(op, x, idx, src, dim, reps, warmup)
        nbytes = moved_bytes(op, x, idx, src)
        correct = err < 1e-5
        row = {"bench": "indexing", "op": op, "driver": seam.driver_name(), "device": dev.name,
               "input": list(shape), "index": list(ishape), "dim": dim, "bytes": nbytes, "relerr": err,
               "correct": correct, "rawdev_ms": round(ms, 4) if correct else None,
               "rawdev_GBps": round(nbytes / ms / 1e6, 2) if correct else None}
        tms = bench_torch(op, x, idx, src, dim, reps, warmup) if seam.driver_name() == "cuda" else None
        if tms is not None:
            row["torch_ms"] = round(tms, 4)
            row["torch_GBps"] = round(nbytes / tms / 1e6, 2)
        rows.append(row)
    for r in rows:
        if a.json:
            print(json.dumps(r))
        else:
            torch_part = f"   torch {r['torch_GBps']:8.2f} GB/s" if "torch_GBps" in r else ""
            got = f"{r['rawdev_GBps']:8.2f} GB/s ({r['rawdev_ms']:.3f} ms)" if r["correct"] else "WRONG RESULT"
            print(f"{r['op']:>13} {str(r['input']):>14} idx {str(r['index']):>14}: rawdev {got}{torch_part}")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
