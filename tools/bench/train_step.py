#!/usr/bin/env python3
"""One training step (forward, cross-entropy, backward, SGD-momentum step) of an MLP, timed: eager (one
driver launch per kernel) and captured once as a CUDA graph (one cuGraphLaunch per step).

Default: MLP 784-1024-1024-10 at batch 256 and 4096 on cuda, beside PyTorch eager (TF32 off) when
PyTorch is importable. --quick: tiny sizes (64-128-128-10, batch 32 and 128) so it runs on the
simulator (RAWDEV_DRIVER=sim) in seconds. --json: one JSON line per measurement (tools/gpu_check
collects them). Timing: the median of 20 timed blocks of `steps` steps after warm-up, each synchronized at both ends.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

REPS = 20   # timed repeats after warm-up; the median is reported

def rawdev_step_time(sizes, batch, steps, warmup, device, graphed=False):
    import rawdev
    from rawdev import nn, optim
    rawdev.manual_seed(0)
    layers = []
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(sizes[-2], sizes[-1]))
    model = nn.Sequential(*layers).to(device)
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = rawdev.tensor(rng.standard_normal((batch, sizes[0])).astype(np.float32)).to(device)
    y = rawdev.tensor(rng.integers(0, sizes[-1], batch)).to(device)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    sync = rawdev.cuda.synchronize if device != "cpu" else (lambda: None)
    for _ in range(warmup):
        step()
    sync()
    if graphed:   # capture one step; each step is then one replay of it
        g = rawdev.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with rawdev.cuda.graph(g):
            static_loss = loss_fn(model(x), y)
            static_loss.backward()
            opt.step()

        def step():
            g.replay()
            return static_loss
    launches = None
    if device != "cpu":
        with rawdev.trace() as t:
            step()
            sync()
        launches = t.count("cuLaunchKernel") + t.count("cuGraphLaunch")
    times = []
    for _ in range(REPS):   # the median of REPS timed blocks of `steps` steps, synchronized at both ends
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = step()
        sync()
        times.append((time.perf_counter() - t0) / steps)
    return statistics.median(times), float(loss.item()), launches


def torch_step_time(sizes, batch, steps, warmup):
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    layers = []
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(sizes[-2], sizes[-1]))
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, sizes[0], device="cuda")
    y = torch.randint(0, sizes[-1], (batch,), device="cuda")

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / steps)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--batches", type=int, nargs="*", default=None)
    a = ap.parse_args(argv)
    from rawdev.runtime import seam
    sizes = [64, 128, 128, 10] if a.quick else [784, 1024, 1024, 10]
    batches = a.batches or ([32, 128] if a.quick else [256, 4096])
    global REPS
    if a.quick:   # the simulator: a smoke test of the script, not a measurement
        REPS = 3
    steps = a.steps or (1 if a.quick else 5)
    warmup = 1 if a.quick else 3
    results = []
    for batch in batches:
        dt, loss, launches = rawdev_step_time(sizes, batch, steps, warmup, a.device)
        gdt = glaunches = None
        if a.device != "cpu":
            gdt, gloss, glaunches = rawdev_step_time(sizes, batch, steps, warmup, a.device, graphed=True)
        tt = torch_step_time(sizes, batch, steps, warmup) if a.device == "cuda" and seam.driver_name() == "cuda" \
            else None
        res = {"bench": "train_step", "mlp": "-".join(map(str, sizes)), "batch": batch,
               "driver": seam.driver_name() if a.device != "cpu" else "cpu", "rawdev_ms": round(dt * 1e3, 3),
               "launches_per_step": launches,
               "graphed_ms": round(gdt * 1e3, 3) if gdt else None, "graphed_launches_per_step": glaunches,
               "torch_ms": round(tt * 1e3, 3) if tt else None,
               "torch_tf32": False if tt else None, "rawdev_tf32": False, "loss": round(loss, 5),
               "reps": REPS, "steps_per_rep": steps}
        results.append(res)
        if a.json:
            print(json.dumps(res), flush=True)
        else:
            extra = f"  PyTorch eager {res['torch_ms']:.3f} ms" if tt else "  (PyTorch: not importable with CUDA)"
            graphed = f", CUDA graph {res['graphed_ms']:.3f} ms ({glaunches} launch)" if gdt else ""
            print(f"train step MLP {res['mlp']} batch {batch:>5} on {res['driver']}: {res['rawdev_ms']:.3f} ms "
                  f"({launches} kernel launches){graphed}{extra}", flush=True)
    return results


if __name__ == "__main__":
    main()
