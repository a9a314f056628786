#!/usr/bin/env python3
"""The 16-bit tensor-core GEMMs (gemm_{nt,nn,tn}_{bf16,f16}_128x128, sm_80+) timed with CUDA events on square
shapes, beside cuBLAS's bfloat16/float16 GEMM through PyTorch when it is importable. Each timed result is checked
against float64 numpy of the 16-bit inputs (one rounding to the dtype plus float32 accumulation), so a fast wrong
kernel cannot post a number. TFLOP/s counts 2·M·N·K.

    python tools/bench/gemm_bf16.py                                    # real GPU of compute capability 8.0+
    RAWDEV_DRIVER=sim RAWDEV_SIM_CC=8.0 python tools/bench/gemm_bf16.py --quick   # proves the script
    --json: one JSON line per measurement
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

UNIT = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}   # relative bound of one rounding to the dtype


def to_bits(kind, x):
    """float64 -> 16-bit patterns, to nearest even (bfloat16 by way of float32: the reference reads the rounded
    patterns back, so how the inputs were rounded does not matter)."""
    if kind == "f16":
        return np.asarray(x).astype(np.float16).view(np.uint16)
    u = np.asarray(x, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def to_f64(kind, h):
    if kind == "f16":
        return h.view(np.float16).astype(np.float64)
    return (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def rawdev_ms(dev, kind, layout, M, N, K, A, B, reps, warmup):
    from rawdev.runtime import Event, kernels, memory
    bufs = []

    def put(a):
        buf = memory.DeviceBuffer.alloc(dev, max(a.nbytes, 4), owner="gemm_bf16 bench")
        memory.copy_htod(buf.ptr, np.ascontiguousarray(a), a.nbytes)
        bufs.append(buf)
        return buf
    a, b, y = put(A), put(B), put(np.full((M, N), 0xFFFF, np.uint16))
    k = kernels.get_kernel(dev, f"gemm_{layout}_{kind}_128x128")
    args = [y.ptr, a.ptr, b.ptr, 0, M, N, K, A.shape[1], B.shape[1], N, 1.0, 0.0, 0]
    grid = ((N + 127) // 128, (M + 127) // 128)
    for _ in range(warmup):
        k.launch(grid, 256, args)
    s = dev.compute_stream
    marks = [Event(dev, timing=True) for _ in range(reps + 1)]
    marks[0].record(s)
    for i in range(reps):
        k.launch(grid, 256, args)
        marks[i + 1].record(s)
    marks[-1].synchronize()
    ms = statistics.median(marks[i].elapsed_time(marks[i + 1]) for i in range(reps))
    out = np.empty((M, N), np.uint16)
    memory.copy_dtoh(out, y.ptr, out.nbytes)
    for buf in bufs:
        buf.free()
    return ms, out


def torch_ms(kind, layout, A, B, reps, warmup):
    """cuBLAS through PyTorch (the same product and dtype), or None when torch with CUDA is not importable."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except Exception:
        return None
    dt = torch.bfloat16 if kind == "bf16" else torch.float16
    ta = torch.from_numpy(A.view(np.int16).copy()).cuda().view(dt)
    tb = torch.from_numpy(B.view(np.int16).copy()).cuda().view(dt)
    op_a = ta.t() if layout == "tn" else ta
    op_b = tb.t() if layout == "nt" else tb
    for _ in range(warmup):
        torch.mm(op_a, op_b)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    ev[0].record()
    for i in range(reps):
        torch.mm(op_a, op_b)
        ev[i + 1].record()
    torch.cuda.synchronize()
    return statistics.median(ev[i].elapsed_time(ev[i + 1]) for i in range(reps))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny shapes, a few launches: the simulator")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.quick:      # the simulator's default device is sm_75: --quick proves the script on a simulated sm_80
        import os
        os.environ.setdefault("RAWDEV_SIM_CC", "8.0")
    from rawdev.runtime import get_device, kernels
    dev = get_device(0)
    if not kernels.runs_on(dev, "gemm_nt_bf16_128x128"):
        print(f"the 16-bit tensor-core GEMMs need compute capability 8.0+; this device is {dev.capability}: "
              f"nothing to time")
        return
    sizes = (64, 130) if args.quick else (512, 1024, 2048, 4096)
    reps, warmup = (2, 1) if args.quick else (20, 3)
    rng = np.random.default_rng(0)
    for kind in ("bf16", "f16"):
        for n in sizes:
            for layout in ("nt", "nn", "tn"):
                M = N = K = n
                A = to_bits(kind, rng.standard_normal((K, M) if layout == "tn" else (M, K)))
                B = to_bits(kind, rng.standard_normal((N, K) if layout == "nt" else (K, N)))
                ms, out = rawdev_ms(dev, kind, layout, M, N, K, A, B, reps, warmup)
                rows = np.arange(0, M, max(1, M // 16))
                a, b = to_f64(kind, A), to_f64(kind, B)
                op_a = a.T if layout == "tn" else a
                op_b = b.T if layout == "nt" else b
                want = op_a[rows] @ op_b
                terms = np.abs(op_a[rows]) @ np.abs(op_b)
                bad = np.abs(to_f64(kind, out[rows]) - want) > UNIT[kind] * np.abs(want) + 1e-6 * K * terms
                if bad.any():
                    sys.exit(f"gemm_{layout}_{kind}_128x128 {n}^3: wrong result (e.g. {np.argwhere(bad)[0]})")
                ref = torch_ms(kind, layout, A, B, reps, warmup)
                tflops = 2.0 * M * N * K / (ms * 1e-3) / 1e12
                rec = {"bench": "gemm_bf16", "kind": kind, "layout": layout, "M": M, "N": N, "K": K, "ms": ms,
                       "tflops": tflops, "cublas_ms": ref}
                if args.json:
                    print(json.dumps(rec))
                else:
                    vs = f"  cuBLAS {ref:.3f} ms ({ms / ref:.2f}x)" if ref else ""
                    print(f"{kind} {layout} {n:>5}^3  {ms:9.3f} ms  {tflops:7.2f} TFLOP/s{vs}")


if __name__ == "__main__":
    main()
