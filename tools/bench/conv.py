#!/usr/bin/env python3
"""Conv2d (im2col + GEMM, float32) forward and forward+backward, and BatchNorm2d training forward+backward,
beside PyTorch (cuDNN, TF32 off) on the same float32 inputs when torch with CUDA is importable. Each rawdev
conv result is checked against a float64 numpy convolution of one output channel first, so a fast wrong kernel
posts nothing. BatchNorm reports the effective bandwidth of its passes (reads and writes of x-sized tensors).

    python tools/bench/conv.py                             # real GPU: ResNet-like layers, batch 32
    RAWDEV_DRIVER=sim python tools/bench/conv.py --quick      # tiny shapes on the simulator: proves the script
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


def _ref_channel(x, w, pad):
    """Output channel 0 of conv2d(x, w, padding=pad, stride 1) in float64."""
    N, C, H, W = x.shape
    KH, KW = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = H + 2 * pad - KH + 1, W + 2 * pad - KW + 1
    y = np.zeros((N, OH, OW))
    for i in range(KH):
        for j in range(KW):
            y += np.einsum("nchw,c->nhw", xp[:, :, i:i + OH, j:j + OW], w[0, :, i, j])
    return y


def bench_conv_rawdev(shape, reps, warmup):
    import rawdev
    import rawdev.nn.functional as F
    N, C, H, W, Co, K = shape
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((N, C, H, W)).astype(np.float32)
    wa = (rng.standard_normal((Co, C, K, K)) / np.sqrt(C * K * K)).astype(np.float32)
    x = rawdev.tensor(xa, device="cuda", requires_grad=True)
    w = rawdev.tensor(wa, device="cuda", requires_grad=True)
    y = F.conv2d(x, w, padding=K // 2)
    err = float(np.abs(y.detach().cpu().numpy()[:, 0] - _ref_channel(xa.astype(np.float64), wa.astype(np.float64),
                                                                       K // 2)).max())
    if err > 1e-3:
        raise SystemExit(f"rawdev conv2d wrong: max error {err:.2e} against float64")
    g = rawdev.ones_like(y)

    def fwd():
        with rawdev.no_grad():
            F.conv2d(x, w, padding=K // 2)

    def fwd_bwd():
        F.conv2d(x, w, padding=K // 2).backward(g)
    sync = rawdev.cuda.synchronize
    return _median_ms(fwd, sync, reps, warmup), _median_ms(fwd_bwd, sync, reps, warmup), err


def bench_bn_rawdev(shape, reps, warmup):
    import rawdev
    N, C, H, W = shape
    bn = rawdev.nn.BatchNorm2d(C).cuda()
    x = rawdev.randn(N, C, H, W, device="cuda", requires_grad=True)
    g = rawdev.ones_like(x)

    def fwd_bwd():
        bn(x).backward(g)
    return _median_ms(fwd_bwd, rawdev.cuda.synchronize, reps, warmup)


def bench_torch(conv_shape, bn_shape, reps, warmup):
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except Exception:
        return None
    import torch.nn.functional as tF
    torch.backends.cudnn.allow_tf32 = False
    N, C, H, W, Co, K = conv_shape
    x = torch.randn(N, C, H, W, device="cuda", requires_grad=True)
    w = torch.randn(Co, C, K, K, device="cuda", requires_grad=True)
    g = torch.ones(N, Co, H, W, device="cuda")
    sync = torch.cuda.synchronize

    def fwd():
        with torch.no_grad():
            tF.conv2d(x, w, padding=K // 2)

    def fwd_bwd():
        tF.conv2d(x, w, padding=K // 2).backward(g)
    bn = torch.nn.BatchNorm2d(bn_shape[1]).cuda()
    xb = torch.randn(bn_shape, device="cuda", requires_grad=True)
    gb = torch.ones(bn_shape, device="cuda")

    def bn_fb():
        bn(xb).backward(gb)
    return _median_ms(fwd, sync, reps, warmup), _median_ms(fwd_bwd, sync, reps, warmup), \
        _median_ms(bn_fb, sync, reps, warmup)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    a = ap.parse_args()
    convs = [(2, 3, 9, 9, 4, 3)] if a.quick else [(32, 64, 56, 56, 64, 3), (32, 128, 28, 28, 128, 3),
                                                   (32, 256, 14, 14, 256, 3)]
    reps, warmup = (1, 0) if a.quick else (10, 2)
    if not a.json:
        print(f"{'conv (N,C,H,W,O,K)':<28} {'rawdev fwd ms':>14} {'rawdev f+b ms':>14} {'torch fwd ms':>13} "
              f"{'torch f+b ms':>13} {'bn f+b ms':>10} {'bn GB/s':>8} {'torch bn ms':>12}")
    for shape in convs:
        f, fb, err = bench_conv_rawdev(shape, reps, warmup)
        bn_shape = (shape[0], shape[4], shape[2], shape[3])
        bn = bench_bn_rawdev(bn_shape, reps, warmup)
        # stats pass reads x; apply reads x writes y; backward reduce reads dy, x; dx pass reads dy, x writes dx
        gbs = 8 * 4 * float(np.prod(bn_shape)) / (bn * 1e-3) / 1e9
        t = None if a.quick else bench_torch(shape, bn_shape, reps, warmup)
        row = {"bench": "conv2d", "shape": list(shape), "rawdev_fwd_ms": f, "rawdev_fwd_bwd_ms": fb, "max_err": err,
               "batchnorm_shape": list(bn_shape), "rawdev_bn_fwd_bwd_ms": bn, "rawdev_bn_gbs": gbs,
               "torch_fwd_ms": t[0] if t else None, "torch_fwd_bwd_ms": t[1] if t else None,
               "torch_bn_fwd_bwd_ms": t[2] if t else None}
        if a.json:
            print(json.dumps(row))
        else:
            ts = f"{t[0]:13.3f} {t[1]:13.3f}" if t else f"{'-':>13} {'-':>13}"
            tb = f"{t[2]:12.3f}" if t else f"{'-':>12}"
            print(f"{str(shape):<28} {f:14.3f} {fb:14.3f} {ts} {bn:10.3f} {gbs:8.2f} {tb}")


if __name__ == "__main__":
    main()
