#!/usr/bin/env python3
"""rawdev's Python cost per kernel launch, above the driver call itself.

The driver's cuLaunchKernel is replaced by a no-op, so what is timed is rawdev's own work: argument
count check, packing into the pre-built buffer, the checker. The no-op's own cost is subtracted.
Runs anywhere (no GPU, no simulator needed). Prints one line; --json for machine-readable output.
"""
import argparse
import json
import statistics
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuda.bindings.driver import CUfunction, CUresult, CUstream  # noqa: E402
from rawdev.runtime import kernels, seam  # noqa: E402

OK = (CUresult.CUDA_SUCCESS,)


def noop_launch(*args):
    return OK


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    n = 20_000 if a.quick else a.n
    fake = types.SimpleNamespace(cuLaunchKernel=noop_launch,
                                 cuModuleGetFunction=lambda m, name: (CUresult.CUDA_SUCCESS, CUfunction(1)))
    seam._drv, seam._name = fake, "noop"
    from rawdev.runtime import device as rdevice
    dev = types.SimpleNamespace()
    dev.activate = types.MethodType(rdevice.Device.activate, dev)   # the real per-thread check (already current)
    rdevice._tls.ctx = dev
    stream = types.SimpleNamespace(handle=CUstream(0), device=dev)
    module = types.SimpleNamespace(handle=None, name="bench", device=types.SimpleNamespace(compute_stream=stream))
    params = [("out", "u64"), ("x", "u64"), ("n", "u32"), ("alpha", "f32"), ("beta", "f32"), ("flags", "u32")]
    k = kernels.Kernel(module, "bench_kernel", params)
    args = [0x10000_0000_0000, 0x10000_0001_0000, 4096, 1.5, 0.0, 3]
    grid, block, f = (16, 1, 1), (256, 1, 1), k.handle
    reps, per = 20, max(n // 20, 1)
    for _ in range(per):   # warm-up
        k.launch(grid, block, args, stream=stream)
    launch, noop = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(per):
            k.launch(grid, block, args, stream=stream)
        launch.append((time.perf_counter() - t0) / per)
        t0 = time.perf_counter()
        for _ in range(per):
            noop_launch(f, 16, 1, 1, 256, 1, 1, 0, stream.handle, 0, 0)
        noop.append((time.perf_counter() - t0) / per)
    us = (statistics.median(launch) - statistics.median(noop)) * 1e6
    res = {"bench": "launch_overhead", "us_per_launch_above_driver": round(us, 3), "launches": reps * per,
           "reps": reps}
    print(json.dumps(res) if a.json else f"launch overhead: {us:.2f} us per launch above the driver call "
          f"(6 arguments, median of {reps} x {per} launches after warm-up, driver replaced by a no-op)")
    return res


if __name__ == "__main__":
    main()
