#!/usr/bin/env python3
"""Module moves: rawdev's one-copy model.to('cuda') / .cpu() against a raw pinned memcpy and PyTorch.

Three models: a 6-tensor MLP, a 1,000-tensor model (500 small layers) and a ~1 GiB model (4 layers of
8192x8192 float32); --quick scales them down for the simulator. For each, the median time of
model.to('cuda') (to completion: the device is synchronized) and model.cpu(), the first (cold) move
to cuda, which also allocates the pinned staging buffer that later moves reuse, the bytes moved and
the driver copies made; beside them, one cuMemcpyHtoDAsync of the same bytes from an already pinned
buffer into an already allocated arena (the floor), and torch's model.to('cuda') / .cpu() for the same
architecture when torch is importable. Prints a table, or one JSON object per row with --json.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from rawdev.nn import Module, Parameter, Sequential  # noqa: E402
from rawdev.runtime import get_device, memory, seam, trace  # noqa: E402
from rawdev.tensor import randn  # noqa: E402


class Lin(Module):
    def __init__(self, fan_in, fan_out):
        super().__init__()
        self.weight = Parameter(randn(fan_out, fan_in))
        self.bias = Parameter(randn(fan_out))


def models(quick):
    if quick:
        return [("mlp (6 tensors)", [(64, 32), (32, 32), (32, 8)], 5),
                ("1000 tensors", [(8, 8)] * 500, 3),
                ("~1 GiB model (scaled: 4 MiB)", [(512, 512)] * 4, 3)]
    return [("mlp (6 tensors)", [(784, 256), (256, 128), (128, 10)], 20),
            ("1000 tensors", [(64, 64)] * 500, 20),
            ("~1 GiB model", [(8192, 8192)] * 4, 20)]


def median_time(fn, reps, sync):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_rawdev(layers, reps, dev):
    m = Sequential(*[Lin(i, o) for i, o in layers])
    nbytes = sum(p.nbytes for p in m.parameters())
    ntensors = len(list(m.parameters()))
    from rawdev.runtime import transfer
    transfer.release_staging()
    t0 = time.perf_counter()
    with trace() as t:
        m.cuda()
        dev.synchronize()
    first = time.perf_counter() - t0   # cold: includes allocating the pinned staging buffer
    copies_htod = t.count("cuMemcpyHtoDAsync") + t.count("cuMemcpyHtoD")
    with trace() as t:
        m.cpu()
    copies_dtoh = t.count("cuMemcpyDtoHAsync") + t.count("cuMemcpyDtoH")
    up, down = [], []
    for _ in range(reps):
        up.append(median_time(m.cuda, 1, dev.synchronize))
        down.append(median_time(m.cpu, 1, lambda: None))
    return nbytes, ntensors, first, statistics.median(up), statistics.median(down), copies_htod, copies_dtoh


def bench_raw(nbytes, reps, dev):
    """One HtoD of nbytes from a pinned buffer into an allocated arena: the floor for any move."""
    pin = memory.PinnedBuffer(nbytes, owner="bench staging")
    pin.array[:] = 1
    buf = memory.DeviceBuffer.alloc(dev, nbytes, stream=dev.copy_stream, owner="bench arena")
    s = dev.copy_stream
    t = median_time(lambda: memory.copy_htod(buf.ptr, pin.ptr, nbytes, stream=s), reps, s.synchronize)
    buf.free()
    pin.free()
    return t


def bench_torch(layers, reps):
    try:
        import torch
    except Exception:
        return None
    if not torch.cuda.is_available():
        return None
    m = torch.nn.Sequential(*[torch.nn.Linear(i, o) for i, o in layers])
    m.to("cuda")
    torch.cuda.synchronize()
    m.cpu()  # warmed up: CUDA context, caching allocator
    ups, downs = [], []
    for _ in range(reps):
        ups.append(median_time(lambda: m.to("cuda"), 1, torch.cuda.synchronize))
        downs.append(median_time(lambda: m.cpu(), 1, torch.cuda.synchronize))
    return statistics.median(ups), statistics.median(downs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small models (the simulator, CI)")
    ap.add_argument("--json", action="store_true", help="one JSON object per row")
    a = ap.parse_args()
    dev = get_device(0)
    rows = []
    for name, layers, reps in models(a.quick):
        nbytes, ntensors, first, up, down, c_up, c_down = bench_rawdev(layers, reps, dev)
        raw = bench_raw(nbytes, reps, dev)
        tt = bench_torch(layers, reps)
        rows.append({"bench": "move", "model": name, "driver": seam.driver_name(), "device": dev.name,
                     "tensors": ntensors, "bytes": nbytes, "rawdev_first_to_cuda_ms": round(first * 1e3, 3),
                     "rawdev_to_cuda_ms": round(up * 1e3, 3),
                     "rawdev_cpu_ms": round(down * 1e3, 3), "htod_copies": c_up, "dtoh_copies": c_down,
                     "raw_pinned_memcpy_ms": round(raw * 1e3, 3),
                     "rawdev_gbps": round(nbytes / up / 1e9, 3) if up else None,
                     "torch_to_cuda_ms": round(tt[0] * 1e3, 3) if tt else None,
                     "torch_cpu_ms": round(tt[1] * 1e3, 3) if tt else None})
    if a.json:
        for r in rows:
            print(json.dumps(r))
        return rows
    cols = ["model", "tensors", "bytes", "rawdev_first_to_cuda_ms", "rawdev_to_cuda_ms", "rawdev_cpu_ms", "htod_copies",
            "dtoh_copies", "raw_pinned_memcpy_ms", "torch_to_cuda_ms", "torch_cpu_ms"]
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    print(f"moves on {rows[0]['device']} ({rows[0]['driver']} driver); times are medians, to completion")
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(str(r[c] if r[c] is not None else "-").ljust(w) for c, w in zip(cols, widths)))
    return rows


if __name__ == "__main__":
    main()
