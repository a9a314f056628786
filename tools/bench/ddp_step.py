#!/usr/bin/env python3
"""DistributedDataParallel step time over 2 ranks vs 1: the cost of communication and bucketing.

Each configuration is a job started through the launcher (`python -m rawdev.distributed.run --standalone
--nproc-per-node N`), every rank running this script with --worker: a small MLP, SGD, mean-squared error, the
same per-rank batch whatever the number of ranks (so 2 ranks do twice the work of 1 in the same step, and the
difference is what DDP adds). Rank 0 reports, for each mode: "local" (the bare module, no DDP; 1 rank only),
"ddp" (the default bucket cap: one bucket for this model) and "ddp_bucket_per_param" (bucket_cap_mb=1e-5: one
all-reduce per parameter). Devices: cpu, and cuda on whichever driver RAWDEV_DRIVER selects (the simulator with
RAWDEV_DRIVER=sim; on one real GPU every rank shares cuda:0, and gradients cross through the host, as the
communicator does for now).

Default: MLP 256-256-256-10 at batch 32 per rank. --quick: MLP 16-32-10 at batch 8, few repeats (a smoke test of
the script on the simulator, not a measurement). --json: one JSON line per measurement (tools/gpu_check collects
them). Timing: the median of REPS timed blocks of `steps` steps after warm-up, on rank 0, each block
synchronized at both ends (a barrier, and cuda synchronize on a GPU). Ranks run with OMP_NUM_THREADS=1 unless
it is set, for 1 rank too, so the comparison is one core per rank either way.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

MODES = (("local", None), ("ddp", None), ("ddp_bucket_per_param", 1e-5))
TAG = "DDP_RESULT "


def worker(a):
    """One rank: time each mode's training step; rank 0 prints one TAG line per mode."""
    import numpy as np
    import rawdev
    import rawdev.distributed as dist
    from rawdev import nn, optim
    dist.init_process_group("gloo", timeout=120)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = a.device
    if device == "cuda":
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0)) % rawdev.cuda.device_count()}"
        rawdev.cuda.set_device(device)
    sync = (lambda: rawdev.cuda.synchronize()) if device != "cpu" else (lambda: None)
    sizes = a.sizes
    rng = np.random.default_rng(rank)
    x = rawdev.tensor(rng.standard_normal((a.batch, sizes[0])).astype(np.float32), device=device)
    y = rawdev.tensor(rng.standard_normal((a.batch, sizes[-1])).astype(np.float32), device=device)
    for mode, cap in MODES:
        if mode == "local" and world > 1:
            continue       # plain local training over 2 ranks measures nothing DDP adds
        rawdev.manual_seed(0)
        layers = []
        for i, o in zip(sizes[:-2], sizes[1:-1]):
            layers += [nn.Linear(i, o), nn.Tanh()]
        net = nn.Sequential(*layers, nn.Linear(sizes[-2], sizes[-1])).to(device)
        model = net if mode == "local" else nn.parallel.DistributedDataParallel(net, bucket_cap_mb=cap)
        opt = optim.SGD(model.parameters(), lr=0.01)

        def step(model=model, opt=opt):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        for _ in range(a.warmup):
            step()
        sync()
        times = []
        for _ in range(a.reps):
            dist.barrier()      # every rank starts the block together
            t0 = time.perf_counter()
            for _ in range(a.steps):
                loss = step()
            sync()
            times.append((time.perf_counter() - t0) / a.steps)
        if rank == 0:
            print(TAG + json.dumps({"mode": mode, "ms": statistics.median(times) * 1e3, "loss": float(loss.item()),
                                    "buckets": None if mode == "local" else len(model._buckets)}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def launch(a, device, nproc):
    """Run one job of `nproc` ranks through the launcher; returns rank 0's rows (or raises with its output)."""
    cmd = [sys.executable, "-m", "rawdev.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
           str(Path(__file__).resolve()), "--worker", "--device", device, "--batch", str(a.batch), "--steps",
           str(a.steps), "--warmup", str(a.warmup), "--reps", str(a.reps), "--sizes", *map(str, a.sizes)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OMP_NUM_THREADS", "1")
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.job_timeout)
    if res.returncode != 0:
        raise RuntimeError(f"ddp_step: {nproc}-rank job on {device} failed (exit {res.returncode}):\n"
                           f"{res.stdout[-2000:]}\n{res.stderr[-3000:]}")
    return [json.loads(ln[len(TAG):]) for ln in res.stdout.splitlines() if ln.startswith(TAG)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, few repeats (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    ap.add_argument("--devices", nargs="*", default=["cpu", "cuda"], help="cpu and/or cuda (default both)")
    ap.add_argument("--ranks", type=int, nargs="*", default=[1, 2], help="rank counts to compare (default 1 2)")
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="MLP layer widths")
    ap.add_argument("--batch", type=int, default=None, help="batch per rank")
    ap.add_argument("--steps", type=int, default=None, help="steps per timed block")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps first")
    ap.add_argument("--reps", type=int, default=None, help="timed blocks (the median is reported)")
    ap.add_argument("--job-timeout", type=float, default=600, help="hang guard per launched job, seconds")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--device", default="cpu", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.sizes = a.sizes or ([16, 32, 10] if a.quick else [256, 256, 256, 10])
    a.batch = a.batch or (8 if a.quick else 32)
    a.steps = a.steps or (1 if a.quick else 5)
    a.warmup = a.warmup if a.warmup is not None else (1 if a.quick else 3)
    a.reps = a.reps or (2 if a.quick else 15)
    if a.worker:
        return worker(a)
    import rawdev
    from rawdev.runtime import seam
    devices = [d for d in a.devices if d == "cpu" or rawdev.cuda.is_available()]
    if devices != a.devices:
        print("ddp_step: no cuda device (no GPU; RAWDEV_DRIVER=sim selects the simulator): cpu only", file=sys.stderr)
    driver = seam.driver_name() if "cuda" in devices else "cpu"
    results = []
    for device in devices:
        for nproc in a.ranks:
            for row in launch(a, device, nproc):
                res = {"bench": "ddp_step", "device": device, "driver": driver if device == "cuda" else "cpu",
                       "ranks": nproc, "mode": row["mode"], "buckets": row["buckets"],
                       "mlp": "-".join(map(str, a.sizes)), "batch_per_rank": a.batch, "step_ms": round(row["ms"], 3),
                       "loss": round(row["loss"], 5), "reps": a.reps, "steps_per_rep": a.steps}
                results.append(res)
                if a.json:
                    print(json.dumps(res), flush=True)
                else:
                    print(f"DDP step MLP {res['mlp']} batch {a.batch}/rank on {res['driver']}, {nproc} rank(s), "
                          f"{row['mode']}: {res['step_ms']:.3f} ms", flush=True)
    return results


if __name__ == "__main__":
    main()
