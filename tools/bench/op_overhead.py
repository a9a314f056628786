#!/usr/bin/env python3
"""Host cost of one small op: what rawdev spends in Python around the arithmetic, per call.

cpu path: `a + b` on 1x128 float32, `Linear(128, 128)` forward on 32x128, and a small forward+backward
(Linear, relu, sum, backward), beside PyTorch's same calls when torch is importable (null otherwise) and
numpy's own `x + y` as the floor no host path goes under.

cuda path: the same `a + b` and Linear forward on the simulated GPU with its cuLaunchKernel replaced by a
no-op, as tools/bench/launch_overhead.py does; the time spent inside every other driver call (the pool's
allocations and frees) is measured and subtracted, so what is left is rawdev's own Python per op, launch
included (the kernel's argument packing and the checker are rawdev's).

BLAS runs one thread (both libraries). Each number is the median over blocks of the per-call time
(time.perf_counter around a block of calls; --clock cpu: time.process_time).

    python tools/bench/op_overhead.py            # 20 blocks of 25 ms of calls per case
    python tools/bench/op_overhead.py --quick    # 5 blocks of 5 ms (a smoke test of the script)
    --json: one JSON line per measurement
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
# One BLAS thread (for both libraries): a 32x128 GEMM is far below what a thread pool pays off for, and waking
# one on a loaded machine costs milliseconds, which would drown the host cost this measures.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

_clock = time.perf_counter   # --clock cpu: time.process_time (this process's CPU time, for a loaded machine)


def calls_per_block(fn, block_s):
    """How many calls of fn fill about block_s seconds (after a few warm-up calls, which also time it)."""
    fn()
    n, t0 = 0, _clock()
    while n < 5 or _clock() - t0 < block_s / 4:
        fn()
        n += 1
    return max(1, round(block_s * n / (_clock() - t0)))


def per_call_us(fn, blocks, block_s):
    """Median over `blocks` of the mean time of one fn() in a block of about block_s seconds, in microseconds."""
    per = calls_per_block(fn, block_s)
    times = []
    for _ in range(blocks):
        t0 = _clock()
        for _ in range(per):
            fn()
        times.append((_clock() - t0) / per)
    return statistics.median(times) * 1e6


def cases(m, device):
    """(name, fn) pairs for library m (rawdev or torch) on device; each fn is one call to time."""
    rng = np.random.default_rng(0)
    a = m.tensor(rng.standard_normal((1, 128)).astype(np.float32), device=device)
    b = m.tensor(rng.standard_normal((1, 128)).astype(np.float32), device=device)
    x = m.tensor(rng.standard_normal((32, 128)).astype(np.float32), device=device)
    lin = m.nn.Linear(128, 128).to(device)
    out = [("add_1x128", lambda: a + b), ("linear_fwd_32x128", lambda: lin(x))]
    if device == "cpu":
        def fwd_bwd():
            lin.zero_grad()
            m.relu(lin(x)).sum().backward()
        out.append(("linear_relu_sum_fwd_bwd_32x128", fwd_bwd))
    return out


def torch_or_none():
    try:
        import torch
        torch.set_num_threads(1)
        return torch
    except Exception:
        return None


class _TimedDriver:
    """The driver with cuLaunchKernel a no-op and every other function timed, so its own cost can be taken
    out of the op's."""

    def __init__(self, drv):
        from cuda.bindings.driver import CUresult
        self._drv, self._ok = drv, (CUresult.CUDA_SUCCESS,)
        self.driver_s, self.launches = 0.0, 0

    def __getattr__(self, name):
        if name == "cuLaunchKernel":
            def launch(*args):
                self.launches += 1
                return self._ok
            fn = launch
        else:
            real = getattr(self._drv, name)
            if not callable(real):
                return real

            def fn(*args, _real=real, **kwargs):
                t0 = _clock()
                try:
                    return _real(*args, **kwargs)
                finally:
                    self.driver_s += _clock() - t0
        setattr(self, name, fn)
        return fn


def cuda_rows(blocks, block_s, clock):
    """rawdev's Python per op on the cuda path (driver: the simulator, launches no-ops, driver time out)."""
    import rawdev
    from rawdev.runtime import seam
    rawdev.use_driver("sim")
    seam.driver()
    timed = _TimedDriver(seam._drv)
    rows = []
    for name, fn in cases(rawdev, "cuda"):
        per = calls_per_block(fn, block_s)
        times, launches = [], 0
        for _ in range(blocks):
            timed.driver_s, timed.launches = 0.0, 0
            seam._drv = timed
            try:
                t0 = _clock()
                for _ in range(per):
                    fn()
                dt = _clock() - t0
            finally:
                seam._drv = timed._drv
            times.append((dt - timed.driver_s) / per)
            launches = timed.launches / per
        rows.append({"bench": "op_overhead", "case": name, "device": "cuda (driver: no-op launches)", "clock": clock,
                     "rawdev_us": round(statistics.median(times) * 1e6, 3), "launches_per_op": launches,
                     "torch_us": None, "numpy_us": None})
    rawdev.cuda.synchronize()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--block-s", type=float, default=0.025, help="seconds of calls per timed block")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    ap.add_argument("--quick", action="store_true", help="5 blocks of 5 ms")
    ap.add_argument("--no-cuda", action="store_true", help="the cpu path only")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: time.process_time, which leaves out time other jobs on a loaded machine take")
    a = ap.parse_args()
    global _clock
    _clock = time.process_time if a.clock == "cpu" else time.perf_counter
    blocks, block_s = (5, 0.005) if a.quick else (a.blocks, a.block_s)
    import rawdev
    torch = torch_or_none()
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((1, 128)).astype(np.float32) for _ in range(2))
    numpy_add = per_call_us(lambda: x + y, blocks, block_s)
    theirs = dict(cases(torch, "cpu")) if torch is not None else {}
    rows = []
    for name, fn in cases(rawdev, "cpu"):
        rows.append({"bench": "op_overhead", "case": name, "device": "cpu", "clock": a.clock,
                     "rawdev_us": round(per_call_us(fn, blocks, block_s), 3),
                     "torch_us": round(per_call_us(theirs[name], blocks, block_s), 3) if theirs else None,
                     "numpy_us": round(numpy_add, 3) if name == "add_1x128" else None})
    if not a.no_cuda:
        rows += cuda_rows(blocks, block_s, a.clock)
    for r in rows:
        if a.json:
            print(json.dumps(r), flush=True)
        else:
            ref = "".join(f", {k[:-3]} {r[k]:.2f} us" for k in ("torch_us", "numpy_us") if r[k] is not None)
            print(f"{r['case']:32s} {r['device']:30s} rawdev {r['rawdev_us']:8.2f} us{ref}", flush=True)
    return rows


if __name__ == "__main__":
    main()
