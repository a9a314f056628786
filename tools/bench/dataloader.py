#!/usr/bin/env python3
"""DataLoader throughput: batches/s of rawdev.utils.data.DataLoader with 0 and 4 worker processes on a
CPU-heavy map-style dataset (each __getitem__ sorts a fresh random vector: a few ms of single-threaded numpy
work), and with 4 workers plus pin_memory=True when a CUDA device (or the simulator) is usable. The time
to the first batch (worker start-up included) is reported apart from the steady rate. --quick: a smaller
dataset and cheaper samples. Prints a table, or one JSON object per row with --json.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
from rawdev.runtime import is_available, seam  # noqa: E402
from rawdev.utils.data import DataLoader, Dataset  # noqa: E402


class Heavy(Dataset):
    """Sample i: a sorted random vector of `work` floats, summarized to a (64,) float32 row, and a label."""

    def __init__(self, n, work):
        self.n, self.work = n, work

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        v = np.sort(rng.standard_normal(self.work))
        return np.add.reduceat(v, np.arange(0, self.work, self.work // 64)[:64]).astype(np.float32), i % 10


def run(ds, batch_size, workers, pin):
    t0 = time.perf_counter()
    loader = DataLoader(ds, batch_size=batch_size, num_workers=workers, pin_memory=pin)
    it = iter(loader)
    first = next(it)
    t1 = time.perf_counter()
    seen = [first[1]]
    for b in it:
        seen.append(b[1])
    t2 = time.perf_counter()
    labels = np.concatenate([np.asarray(s) for s in seen])
    assert labels.tolist() == [i % 10 for i in range(len(ds))], "batches out of order"
    rest = len(seen) - 1
    return {"first_batch_ms": round((t1 - t0) * 1e3, 2),
            "batches_per_s": round(rest / (t2 - t1), 2) if rest and t2 > t1 else None,
            "total_s": round(t2 - t0, 3), "batches": len(seen)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a small dataset (CI, the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON object per row")
    a = ap.parse_args()
    n, bs, work = (48, 4, 40_000) if a.quick else (256, 16, 200_000)
    ds = Heavy(n, work)
    t0 = time.perf_counter()
    ds[0]
    sample_ms = (time.perf_counter() - t0) * 1e3
    configs = [(0, False), (4, False)]
    if is_available():
        configs.append((4, True))
    rows, base = [], None
    for workers, pin in configs:
        r = run(ds, bs, workers, pin)
        if workers == 0:
            base = r["batches_per_s"]
        rows.append({"bench": "dataloader", "workers": workers, "pin_memory": pin, "batch_size": bs, "samples": n,
                     "sample_ms": round(sample_ms, 2), "cpus": os.cpu_count(), **r,
                     "speedup": round(r["batches_per_s"] / base, 2) if base and r["batches_per_s"] else None,
                     "driver": seam.driver_name() if pin else None})
    if a.json:
        for r in rows:
            print(json.dumps(r))
        return rows
    cols = ["workers", "pin_memory", "batch_size", "batches", "sample_ms", "first_batch_ms", "batches_per_s",
            "speedup", "total_s"]
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    print(f"DataLoader on a CPU-heavy dataset ({os.cpu_count()} cpus)")
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(str(r[c] if r[c] is not None else "-").ljust(w) for c, w in zip(cols, widths)))
    return rows


if __name__ == "__main__":
    main()
