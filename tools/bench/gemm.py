#!/usr/bin/env python3
"""Every shipped GEMM variant (gemm_{nt,nn,tn}_f32_{32x32,64x64,128x128}), timed with CUDA events; on square
shapes also the 128x128 tile's bench-only variants ('128grid': the thread-grid output map the warp tiles replaced,
'128bk16': warp tiles with BK = 16, more registers) so that a GPU run shows which one the ops should pick; then
skinny shapes (few output tiles, long K) through rawdev's launcher twice: one plain launch and the split-K
path (gemm_*_32x32_splitk + gemm_splitk_reduce_f32, slice count from rawdev.ops.cuda._splitk).

Shapes: square 256…4096, and the three products of each MLP linear layer (batch 256 / 4096 × 784 /
1024 / 10): forward Y = X·Wᵀ (nt), dX = dY·W (nn), dW = dYᵀ·X (tn). Beside each, cuBLAS SGEMM of
the same product through CuPy or PyTorch when one is importable, TF32 off (FP32 compute). Each
timed result is checked against float64 numpy on a sample of rows, so a fast wrong kernel cannot
post a number. `*` marks the tile rawdev's ops pick for that shape on this GPU (the largest whose
grid gives every SM a block).

    python tools/bench/gemm.py                  # real GPU
    RAWDEV_DRIVER=sim python tools/bench/gemm.py --quick   # tiny shapes on the simulator: proves the script
    --json: one JSON line per measurement (tools/gpu_check collects them)
"""
import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

THREADS = {128: 256, 64: 256, 32: 64}
BENCH_VARIANTS = ("128grid", "128bk16")    # gemm_<layout>_f32_128x128_{grid,bk16}: measured, not used by the ops


def kernel_for(layout, variant):
    """(kernel name, tile) of a bench variant: a tile size (32, 64, 128), one of BENCH_VARIANTS, or 'tf32'."""
    if variant == "tf32":
        return f"gemm_{layout}_tf32_128x128", 128
    if variant in BENCH_VARIANTS:
        return f"gemm_{layout}_f32_128x128_{variant[3:]}", 128
    return f"gemm_{layout}_f32_{variant}x{variant}", variant
REPS = 20   # timed launches per measurement (after warm-up); the median is reported


def tf32_settings():
    """What decides TF32 on each side: rawdev's kernels are FP32 FMA only; PyTorch's and CuPy's switches."""
    out = {"rawdev": "FP32 FMA kernels (gemm_*_f32_*); rows with tile 'tf32' run gemm_*_tf32_128x128 (TF32 "
                     "tensor cores, sm_80+), which rawdev's ops use only when backends.cuda.matmul.allow_tf32"}
    try:
        import torch
        out["torch.backends.cuda.matmul.allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
        out["torch.backends.cudnn.allow_tf32"] = torch.backends.cudnn.allow_tf32
        out["torch.float32_matmul_precision"] = torch.get_float32_matmul_precision()
    except Exception:
        pass
    out["CUPY_TF32"] = os.environ.get("CUPY_TF32", "unset (off)")
    return out


def shapes(quick):
    """(label, layout, M, N, K): Y[M,N] = op(A)·op(B) with op per layout."""
    if quick:
        out = [(f"square {n}", lay, n, n, n) for n in (33, 64) for lay in ("nt", "nn", "tn")]
        layers = [(24, 40), (40, 10)]
        batches = [8, 70]
    else:
        out = [(f"square {n}", lay, n, n, n) for n in (256, 512, 1024, 2048, 4096) for lay in ("nt", "nn", "tn")]
        layers = [(784, 1024), (1024, 1024), (1024, 10)]
        batches = [256, 4096]
    for b in batches:
        for fin, fout in layers:
            tag = f"mlp b{b} {fin}->{fout}"
            out += [(tag + " fwd", "nt", b, fout, fin), (tag + " dX", "nn", b, fin, fout),
                    (tag + " dW", "tn", fout, fin, b)]
    return out


def operands(layout, M, N, K, rng):
    """Row-major A and B as the kernel reads them for `layout`, and the float64 reference op(A), op(B)."""
    if layout == "nt":
        A, B = rng.standard_normal((M, K)), rng.standard_normal((N, K))
        return A, B, A, B.T
    if layout == "nn":
        A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
        return A, B, A, B
    A, B = rng.standard_normal((K, M)), rng.standard_normal((K, N))
    return A, B, A.T, B


class RawdevGemm:
    def __init__(self, dev):
        from rawdev.runtime import Event, kernels, memory
        self.dev, self.kernels, self.memory, self.Event = dev, kernels, memory, Event

    def put(self, a):
        a = np.ascontiguousarray(a, np.float32)
        buf = self.memory.DeviceBuffer.alloc(self.dev, max(a.nbytes, 4), owner="gemm bench")
        self.memory.copy_htod(buf.ptr, a, a.nbytes)
        return buf

    def time(self, layout, tile, A, B, M, N, K, reps, warmup):
        """Milliseconds per launch (median of reps launches, each between two events on the compute stream)
        and the result."""
        a, b = self.put(A), self.put(B)
        y = self.put(np.full((M, N), np.nan, np.float32))      # poisoned: unwritten outputs show
        name, tile = kernel_for(layout, tile)
        k = self.kernels.get_kernel(self.dev, name)
        lda, ldb = A.shape[1], B.shape[1]
        args = [y.ptr, a.ptr, b.ptr, 0, M, N, K, lda, ldb, N, 1.0, 0.0, 0]
        grid = ((N + tile - 1) // tile, (M + tile - 1) // tile)
        s = self.dev.compute_stream
        for _ in range(warmup):
            k.launch(grid, THREADS[tile], args)
        marks = [self.Event(self.dev, timing=True) for _ in range(reps + 1)]
        marks[0].record(s)
        for i in range(reps):
            k.launch(grid, THREADS[tile], args)
            marks[i + 1].record(s)
        marks[-1].synchronize()
        ms = statistics.median(marks[i].elapsed_time(marks[i + 1]) for i in range(reps))
        out = np.empty((M, N), np.float32)
        self.memory.copy_dtoh(out, y.ptr, out.nbytes)
        for buf in (a, b, y):
            buf.free()
        return ms, out


    def time_launcher(self, layout, A, B, M, N, K, splits, reps, warmup):
        """Like time(), through rawdev.ops.cuda._gemm_raw (splits=1: one plain launch; None: its heuristic).
        Each timed step is the whole launcher (both kernels and the workspace allocation on split-K)."""
        from rawdev.ops.cuda import _gemm_raw
        a, b = self.put(A), self.put(B)
        y = self.put(np.full((M, N), np.nan, np.float32))
        lda, ldb = A.shape[1], B.shape[1]

        def step():
            _gemm_raw(self.dev, layout, y.ptr, a.ptr, b.ptr, M, N, K, lda, ldb, N, splits=splits)
        s = self.dev.compute_stream
        for _ in range(warmup):
            step()
        marks = [self.Event(self.dev, timing=True) for _ in range(reps + 1)]
        marks[0].record(s)
        for i in range(reps):
            step()
            marks[i + 1].record(s)
        marks[-1].synchronize()
        ms = statistics.median(marks[i].elapsed_time(marks[i + 1]) for i in range(reps))
        out = np.empty((M, N), np.float32)
        self.memory.copy_dtoh(out, y.ptr, out.nbytes)
        for buf in (a, b, y):
            buf.free()
        return ms, out


def skinny_shapes(quick):
    """(label, layout, M, N, K) with few output tiles and a long K: where split-K pays."""
    dims = [(10, 10, 600), (10, 40, 1000)] if quick else [(10, 10, 4096), (10, 64, 4096), (32, 64, 8192),
                                                          (64, 128, 16384)]
    return [(f"skinny {M}x{N} K{K}", lay, M, N, K) for M, N, K in dims for lay in ("nt", "nn", "tn")]


def _torch_timer(tf32):
    """(name, fn) timing torch's cuBLAS GEMM with allow_tf32 set to `tf32` for the calls (and restored), or None
    when torch has no GPU."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except Exception:
        return None

    def run(layout, A, B, reps, warmup):
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            a = torch.as_tensor(np.asarray(A, np.float32), device="cuda")
            b = torch.as_tensor(np.asarray(B, np.float32), device="cuda")
            opa = a.T if layout == "tn" else a
            opb = b.T if layout == "nt" else b
            for _ in range(warmup):
                opa @ opb
            marks = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
            marks[0].record()
            for i in range(reps):
                opa @ opb
                marks[i + 1].record()
            marks[-1].synchronize()
            return statistics.median(marks[i].elapsed_time(marks[i + 1]) for i in range(reps))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
    return "torch " + torch.__version__ + (" TF32" if tf32 else ""), run


def cublas_tf32_timer():
    """(name, fn) for cuBLAS with TF32 tensor cores allowed (PyTorch's allow_tf32 = True), or None."""
    return _torch_timer(True)


def cublas_timer():
    """(name, fn(layout, A, B, reps, warmup) -> ms) for cuBLAS SGEMM with TF32 off (CuPy when present, else
    torch), or None."""
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()

        def run_cupy(layout, A, B, reps, warmup):
            a, b = cp.asarray(A, cp.float32), cp.asarray(B, cp.float32)
            opa = a.T if layout == "tn" else a
            opb = b.T if layout == "nt" else b
            for _ in range(warmup):
                cp.matmul(opa, opb)
            marks = [cp.cuda.Event() for _ in range(reps + 1)]
            marks[0].record()
            for i in range(reps):
                cp.matmul(opa, opb)
                marks[i + 1].record()
            marks[-1].synchronize()
            return statistics.median(cp.cuda.get_elapsed_time(marks[i], marks[i + 1]) for i in range(reps))
        return "cupy " + cp.__version__, run_cupy   # CuPy uses FP32 compute unless CUPY_TF32=1
    except Exception:
        pass
    return _torch_timer(False)


def sample_relerr(out, opA, opB, rng, rows=16):
    """max |out - ref| / max |ref| over a random sample of rows (float64 reference)."""
    idx = rng.choice(out.shape[0], size=min(rows, out.shape[0]), replace=False)
    ref = opA[idx] @ opB
    got = out[idx].astype(np.float64)
    if np.isnan(got).any():
        return float("inf")
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    ap.add_argument("--tiles", type=int, nargs="*", default=[32, 64, 128])
    ap.add_argument("--max-size", type=int, default=None, help="skip square shapes above this")
    a = ap.parse_args(argv)
    from rawdev.ops.cuda import _tile
    from rawdev.runtime import get_device, seam
    dev = get_device(0)
    gemm = RawdevGemm(dev)
    cublas = cublas_timer() if seam.driver_name() == "cuda" else None
    cublas_tf32 = cublas_tf32_timer() if seam.driver_name() == "cuda" else None
    from rawdev.runtime import kernels
    tiles = list(a.tiles) + (list(BENCH_VARIANTS) if 128 in a.tiles else [])
    tiles += ["tf32"] if kernels.runs_on(dev, "gemm_nt_tf32_128x128") else []
    reps, warmup = (1, 0) if a.quick else (REPS, 3)
    tf32 = tf32_settings()
    rng = np.random.default_rng(0)
    rows, bad = [], 0
    if not a.json:
        print(f"{dev.name} via {seam.driver_name()} driver; cuBLAS: {cublas[0] if cublas else 'not importable'}")
        print(f"{'shape':<26}{'layout':>7}{'tile':>9}{'M':>6}{'N':>6}{'K':>6}{'ms':>10}{'TFLOP/s':>9}"
              f"{'cuBLAS ms':>11}{'% cuBLAS':>9}{'relerr':>10}")
    for label, layout, M, N, K in shapes(a.quick):
        if a.max_size and label.startswith("square") and M > a.max_size:
            continue
        A, B, opA, opB = operands(layout, M, N, K, rng)
        ref_fp32 = cublas[1](layout, A, B, reps, warmup) if cublas else None
        ref_tf32 = cublas_tf32[1](layout, A, B, reps, warmup) if cublas_tf32 and "tf32" in tiles else None
        auto = _tile(M, N, dev.multiprocessors)[0]
        for tile in tiles:
            if tile in BENCH_VARIANTS and not label.startswith("square"):
                continue
            ms, out = gemm.time(layout, tile, A, B, M, N, K, reps, warmup)
            err = sample_relerr(out, opA, opB, rng)
            ok = err < (5e-3 if tile == "tf32" else 1e-4)    # TF32 keeps 10 mantissa bits of each operand
            ref_ms, ref_lib = (ref_tf32, cublas_tf32) if tile == "tf32" else (ref_fp32, cublas)
            bad += not ok
            tflops = 2.0 * M * N * K / (ms * 1e-3) / 1e12 if ms > 0 else None
            r = {"bench": "gemm", "shape": label, "layout": layout, "tile": tile, "auto": tile == auto,
                 "M": M, "N": N, "K": K, "driver": seam.driver_name(), "ms": round(ms, 4),
                 "tflops": round(tflops, 3) if tflops else None,
                 "cublas": ref_lib[0] if ref_lib else None, "cublas_ms": round(ref_ms, 4) if ref_ms else None,
                 "pct_cublas": round(100 * ref_ms / ms, 1) if ref_ms and ms > 0 else None,
                 "relerr": float(f"{err:.3g}"), "correct": ok, "reps": reps, "warmup": warmup,
                 "tf32": tf32}
            rows.append(r)
            if a.json:
                print(json.dumps(r), flush=True)
            else:
                pct = f"{r['pct_cublas']:.1f}" if r["pct_cublas"] else "-"
                cms = f"{ref_ms:.4f}" if ref_ms else "-"
                tf = f"{tflops:.2f}" if tflops else "-"
                print(f"{label:<26}{layout:>7} {tile!s:>7}{'*' if tile == auto else ' '}{M:>6}{N:>6}{K:>6}"
                      f"{ms:>10.4f}{tf:>9}{cms:>11}{pct:>9}{err:>10.2e}" + ("" if ok else "  WRONG"), flush=True)
    from rawdev.ops.cuda import _splitk
    for label, layout, M, N, K in skinny_shapes(a.quick):
        A, B, opA, opB = operands(layout, M, N, K, rng)
        ref_ms = cublas[1](layout, A, B, reps, warmup) if cublas else None
        splits = _splitk(M, N, K, dev.multiprocessors)[0]
        for variant, forced in (("plain", 1), (f"splitK{splits}", None)):
            ms, out = gemm.time_launcher(layout, A, B, M, N, K, forced, reps, warmup)
            err = sample_relerr(out, opA, opB, rng)
            ok = err < 1e-4
            bad += not ok
            tflops = 2.0 * M * N * K / (ms * 1e-3) / 1e12 if ms > 0 else None
            r = {"bench": "gemm", "shape": label, "layout": layout, "tile": variant, "auto": forced is None,
                 "M": M, "N": N, "K": K, "driver": seam.driver_name(), "ms": round(ms, 4),
                 "tflops": round(tflops, 3) if tflops else None,
                 "cublas": cublas[0] if cublas else None, "cublas_ms": round(ref_ms, 4) if ref_ms else None,
                 "pct_cublas": round(100 * ref_ms / ms, 1) if ref_ms and ms > 0 else None,
                 "relerr": float(f"{err:.3g}"), "correct": ok, "reps": reps, "warmup": warmup, "tf32": tf32}
            rows.append(r)
            if a.json:
                print(json.dumps(r), flush=True)
            else:
                pct = f"{r['pct_cublas']:.1f}" if r["pct_cublas"] else "-"
                cms = f"{ref_ms:.4f}" if ref_ms else "-"
                tf = f"{tflops:.2f}" if tflops else "-"
                print(f"{label:<26}{layout:>7} {variant:>7}{'*' if forced is None else ' '}{M:>6}{N:>6}{K:>6}"
                      f"{ms:>10.4f}{tf:>9}{cms:>11}{pct:>9}{err:>10.2e}" + ("" if ok else "  WRONG"), flush=True)
    if not a.json:
        print("skinny rows: 'plain' is one launch of the auto tile, 'splitK<n>' the split-K path rawdev picks "
              "(* = the one rawdev's ops use).")
        print("* = the tile rawdev's ops choose for this shape. Times are medians of "
              f"{reps} event-timed launch(es) after {warmup} warm-up.")
        if seam.driver_name() == "sim":
            print("Simulator: times are the PTX interpreter's, not a GPU's; this run proves the script and "
                  "checks the results.")
    if bad:
        print(f"{bad} result(s) disagree with float64 numpy (relerr >= 1e-4)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
