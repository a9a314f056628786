#!/usr/bin/env python3
"""Fused scaled_dot_product_attention (float32, ptx/attention.ptx) forward and forward+backward at T=1024, beside
PyTorch's F.scaled_dot_product_attention on the same float32 inputs when torch with CUDA is importable. Each
rawdev result is checked against float64 numpy on one (batch, head) first, so a fast wrong kernel posts nothing.

    python tools/bench/attention.py                          # real GPU: B=4, H=8, T=1024, E=64 (and causal)
    RAWDEV_DRIVER=sim python tools/bench/attention.py --quick   # tiny shapes on the simulator: proves the script
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


def _ref(q, k, v, causal):
    s = q @ k.T / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape, bool)), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


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


def bench_rawdev(shape, causal, reps, warmup):
    import rawdev
    import rawdev.nn.functional as F
    rng = np.random.default_rng(0)
    B, H, T, E = shape
    arrays = [rng.standard_normal((B, H, T, E)).astype(np.float32) for _ in range(3)]
    q, k, v = (rawdev.tensor(a, device="cuda", requires_grad=True) for a in arrays)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    ref = _ref(*(a[0, 0].astype(np.float64) for a in arrays), causal)
    err = float(np.abs(out.detach().cpu().numpy()[0, 0] - ref).max())
    if err > 1e-3:
        raise SystemExit(f"rawdev SDPA wrong: max error {err:.2e} against float64")
    g = rawdev.ones_like(out)
    sync = rawdev.cuda.synchronize

    def fwd():
        with rawdev.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fwd_bwd():
        F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)

    return _median_ms(fwd, sync, reps, warmup), _median_ms(fwd_bwd, sync, reps, warmup), err


def bench_torch(shape, causal, reps, warmup):
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except Exception:
        return None
    import torch.nn.functional as tF
    torch.backends.cuda.matmul.allow_tf32 = False
    q, k, v = (torch.randn(shape, device="cuda", requires_grad=True) for _ in range(3))
    g = torch.ones(shape, device="cuda")

    def fwd():
        with torch.no_grad():
            tF.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fwd_bwd():
        tF.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)

    sync = torch.cuda.synchronize
    return _median_ms(fwd, sync, reps, warmup), _median_ms(fwd_bwd, sync, reps, warmup)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    a = ap.parse_args()
    shapes = [(1, 2, 40, 16)] if a.quick else [(4, 8, 1024, 64)]
    reps, warmup = (1, 0) if a.quick else (20, 3)
    if not a.json:
        print(f"{'shape (B,H,T,E)':<20} {'causal':<7} {'rawdev fwd ms':>14} {'rawdev f+b ms':>14} "
              f"{'torch fwd ms':>13} {'torch f+b ms':>13}")
    for shape in shapes:
        for causal in (False, True):
            f, fb, err = bench_rawdev(shape, causal, reps, warmup)
            t = None if a.quick else bench_torch(shape, causal, reps, warmup)
            row = {"bench": "attention", "shape": list(shape), "causal": causal, "rawdev_fwd_ms": f,
                   "rawdev_fwd_bwd_ms": fb, "max_err": err, "torch_fwd_ms": t[0] if t else None,
                   "torch_fwd_bwd_ms": t[1] if t else None}
            if a.json:
                print(json.dumps(row))
            else:
                ts = (f"{t[0]:13.3f} {t[1]:13.3f}" if t else f"{'-':>13} {'-':>13}")
                print(f"{str(shape):<20} {str(causal):<7} {f:14.3f} {fb:14.3f} {ts}")


if __name__ == "__main__":
    main()
