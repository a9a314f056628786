#!/usr/bin/env python3
"""LayerNorm and GroupNorm (float32, ptx/normalization.ptx) forward and forward+backward, in GB/s,
beside PyTorch's F.layer_norm / F.group_norm on the same inputs when torch with CUDA is importable. Each rawdev
result is first checked against float64 numpy, so a fast wrong kernel posts nothing.

Bytes counted: forward reads x and writes y (8 bytes per element); forward+backward adds reading dy and x and
writing dx (20 bytes per element in all). The weight/bias and the statistics are not counted.

    python tools/bench/norms.py                          # real GPU: [32, 1024, 1024] LayerNorm(1024),
                                                         # [32, 256, 64, 64] GroupNorm(32, 256)
    RAWDEV_DRIVER=sim python tools/bench/norms.py --quick   # tiny shapes on the simulator: proves the script
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


def _ref(x, kind, arg):
    x = x.astype(np.float64)
    if kind == "layer_norm":
        axes = (-1,)
        xr = x
    else:
        xr = x.reshape(x.shape[0], arg, -1)
        axes = (-1,)
    mu = xr.mean(axis=axes, keepdims=True)
    y = (xr - mu) / np.sqrt(((xr - mu) ** 2).mean(axis=axes, keepdims=True) + 1e-5)
    return y.reshape(x.shape)


def _call(F, kind, x, arg):
    return F.layer_norm(x, (arg,)) if kind == "layer_norm" else F.group_norm(x, arg)


def bench_rawdev(kind, shape, arg, reps, warmup):
    import rawdev
    import rawdev.nn.functional as F
    x_np = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = rawdev.tensor(x_np, device="cuda", requires_grad=True)
    y = _call(F, kind, x, arg)
    err = float(np.abs(y.detach().cpu().numpy() - _ref(x_np, kind, arg)).max())
    if err > 1e-3:
        raise SystemExit(f"rawdev {kind} wrong: max error {err:.2e} against float64")
    g = rawdev.ones_like(y)
    sync = rawdev.cuda.synchronize

    def fwd():
        with rawdev.no_grad():
            _call(F, kind, x, arg)

    def fwd_bwd():
        _call(F, kind, x, arg).backward(g)

    return _median_ms(fwd, sync, reps, warmup), _median_ms(fwd_bwd, sync, reps, warmup), err


def bench_torch(kind, shape, arg, reps, warmup):
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except Exception:
        return None
    import torch.nn.functional as tF
    x = torch.randn(shape, device="cuda", requires_grad=True)
    g = torch.ones(shape, device="cuda")

    def fwd():
        with torch.no_grad():
            _call(tF, kind, x, arg)

    def fwd_bwd():
        _call(tF, kind, x, arg).backward(g)

    sync = torch.cuda.synchronize
    return _median_ms(fwd, sync, reps, warmup), _median_ms(fwd_bwd, sync, reps, warmup)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    a = ap.parse_args()
    if a.quick:
        cases = [("layer_norm", (4, 3, 40), 40), ("group_norm", (2, 8, 5, 7), 4)]
        reps, warmup = 1, 0
    else:
        cases = [("layer_norm", (32, 1024, 1024), 1024), ("group_norm", (32, 256, 64, 64), 32)]
        reps, warmup = 20, 3
    if not a.json:
        print(f"{'op':<11} {'shape':<20} {'rawdev fwd GB/s':>16} {'rawdev f+b GB/s':>16} {'torch fwd GB/s':>15} "
              f"{'torch f+b GB/s':>15}")
    for kind, shape, arg in cases:
        n = int(np.prod(shape))
        f, fb, err = bench_rawdev(kind, shape, arg, reps, warmup)
        t = None if a.quick else bench_torch(kind, shape, arg, reps, warmup)

        def gbs(ms, nbytes):
            return nbytes / (ms * 1e-3) / 1e9 if ms else None

        row = {"bench": "norms", "op": kind, "shape": list(shape), "arg": arg, "rawdev_fwd_ms": f,
               "rawdev_fwd_bwd_ms": fb, "rawdev_fwd_gbs": gbs(f, 8 * n), "rawdev_fwd_bwd_gbs": gbs(fb, 20 * n),
               "max_err": err, "torch_fwd_gbs": gbs(t[0], 8 * n) if t else None,
               "torch_fwd_bwd_gbs": gbs(t[1], 20 * n) if t else None}
        if a.json:
            print(json.dumps(row))
        else:
            ts = (f"{row['torch_fwd_gbs']:15.1f} {row['torch_fwd_bwd_gbs']:15.1f}" if t else f"{'-':>15} {'-':>15}")
            print(f"{kind:<11} {str(shape):<20} {row['rawdev_fwd_gbs']:16.3f} {row['rawdev_fwd_bwd_gbs']:16.3f} {ts}")


if __name__ == "__main__":
    main()
