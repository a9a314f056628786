#!/usr/bin/env python3
"""All-reduce bus bandwidth over message sizes (as nccl-tests' all_reduce_perf), and DDP scaling over ranks:
rawdev's communicator against torch.distributed on the same sizes, in the same run, when PyTorch is importable.

Every job is started through the launcher (`python -m rawdev.distributed.run --standalone --nproc-per-node N`,
what `rawdev run` runs), each rank running this script with --worker.

all-reduce mode (`--mode allreduce`): for each size from --min-bytes to --max-bytes (doubling), float32 by
default, rank 0 reports the time of one all-reduce (SUM) averaged over --iters back-to-back calls after --warmup,
synchronized at both ends, as nccl-tests does; algbw = bytes / time and busbw = algbw * 2(n-1)/n (the bandwidth
each link carries in a ring, comparable across rank counts; 0 for one rank). "in-place" is
`dist.all_reduce(t)`; "out-of-place" (separate send and receive buffers) is measured where the communicator
has one: rawdev on NCCL (the group's communicator on raw pointers); torch.distributed and rawdev's simulated
communicator only have the in-place call. Before timing each size, one all-reduce of (rank + 1) is checked
against n(n+1)/2 ("wrong": 0 or 1, nccl-tests' #wrong).

ddp mode (`--mode ddp`): the step time (forward, backward, all-reduce of the gradients, SGD) of one MLP at
1..N ranks with the same batch per rank, rawdev's DistributedDataParallel and PyTorch's; scaling efficiency =
time at 1 rank / time at n ranks (1.0: communication is free).

Communicators: rawdev uses backend "nccl": NCCL for cuda tensors on a real GPU, the simulated communicator on
the simulator (RAWDEV_DRIVER=sim; each rank gets its own simulated GPU). torch.distributed uses NCCL on cuda
when it has a GPU per rank, else gloo on cpu tensors (then it compares a different device: the rows say
which). NCCL refuses two ranks on one GPU: on a real machine --nproc defaults to the GPU count.

Default: 8 B .. 256 MiB, 20 iterations after 5 warm-up; MLP 1024-1024-1024-10, batch 64 per rank. --quick:
1 KiB .. 64 KiB, 2 iterations, MLP 16-32-10 (a smoke test of the script on the simulator, not a
measurement). --json: one JSON line per row (tools/gpu_check collects them).
"""
import argparse
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
TAG = "ALLREDUCE_RESULT "
NP_DTYPES = ("float32", "float16", "float64", "int32", "int64")


def _sizes(a):
    sizes, s = [], a.min_bytes
    while s <= a.max_bytes:
        sizes.append(s)
        s *= 2
    return sizes


def _emit(row):
    print(TAG + json.dumps(row), flush=True)


def _bw(nbytes, seconds, world):
    algbw = nbytes / seconds / 1e9
    return round(algbw, 4), round(algbw * 2 * (world - 1) / world, 4)


# ------------------------------------------------------------------------------------------------- rawdev ranks
def rawdev_worker(a):
    import numpy as np
    import rawdev
    import rawdev.distributed as dist
    from rawdev.cuda.process_group_nccl import communicator
    dist.init_process_group("nccl", timeout=300)
    rank, world = dist.get_rank(), dist.get_world_size()
    rawdev.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)) % rawdev.cuda.device_count())
    from rawdev.runtime import seam
    sync = rawdev.cuda.synchronize
    dtype = getattr(rawdev, a.dtype)
    itemsize = np.dtype(a.dtype).itemsize
    if a.mode == "allreduce":
        for nbytes in _sizes(a):
            n = max(1, nbytes // itemsize)
            t = rawdev.full((n,), rank + 1, dtype=dtype, device="cuda")
            dist.all_reduce(t)
            want = world * (world + 1) // 2
            wrong = int(not bool((t == want).all().item()))
            comm = communicator()
            places = ["in-place"] + (["out-of-place"] if comm is not None else [])
            for place in places:
                if place == "in-place":
                    op = functools.partial(dist.all_reduce, t)
                else:       # NCCL's own call on raw pointers: the public API has only the in-place one
                    out = rawdev.empty((n,), dtype=dtype, device="cuda")
                    op = functools.partial(comm.all_reduce, t.data_ptr(), out.data_ptr(), n, a.dtype, "SUM",
                                           rawdev.cuda.current_stream().cuda_stream)
                seconds = _time(op, sync, dist.barrier, a)
                if rank == 0:
                    algbw, busbw = _bw(n * itemsize, seconds, world)
                    _emit({"impl": "rawdev", "communicator": "nccl" if comm is not None else "simulated",
                           "driver": seam.driver_name(), "device": "cuda", "place": place, "bytes": n * itemsize,
                           "count": n, "time_us": round(seconds * 1e6, 2), "algbw_GBps": algbw,
                           "busbw_GBps": busbw, "wrong": wrong})
    else:
        from rawdev import nn, optim
        rng = np.random.default_rng(rank)
        x = rawdev.tensor(rng.standard_normal((a.batch, a.mlp[0])).astype(np.float32), device="cuda")
        y = rawdev.tensor(rng.standard_normal((a.batch, a.mlp[-1])).astype(np.float32), device="cuda")
        rawdev.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(_mlp(nn, a.mlp).to("cuda"))
        opt = optim.SGD(model.parameters(), lr=0.01)

        def step():
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        seconds = _time(step, sync, dist.barrier, a)
        if rank == 0:
            _emit({"impl": "rawdev", "communicator": "nccl" if communicator() is not None else "simulated",
                   "driver": seam.driver_name(), "device": "cuda", "step_ms": round(seconds * 1e3, 3)})
    dist.barrier()
    dist.destroy_process_group()


def _mlp(nn, widths):
    layers = []
    for i, o in zip(widths[:-2], widths[1:-1]):
        layers += [nn.Linear(i, o), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(widths[-2], widths[-1]))


def _time(op, sync, barrier, a):
    for _ in range(a.warmup):
        op()
    sync()
    barrier()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        op()
    sync()
    return (time.perf_counter() - t0) / a.iters


# -------------------------------------------------------------------------------------------------- torch ranks
def torch_worker(a):
    import torch
    import torch.distributed as tdist
    local = int(os.environ.get("LOCAL_RANK", 0))
    world = int(os.environ["WORLD_SIZE"])
    cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
    if cuda:
        torch.cuda.set_device(local)
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    tdist.init_process_group("nccl" if cuda else "gloo")
    rank = tdist.get_rank()

    def sync():
        if cuda:
            torch.cuda.synchronize()
    dtype = getattr(torch, a.dtype)
    itemsize = torch.empty((), dtype=dtype).element_size()
    base = {"impl": "torch", "communicator": "nccl" if cuda else "gloo", "torch": torch.__version__,
            "device": device.type}
    if a.mode == "allreduce":
        for nbytes in _sizes(a):
            n = max(1, nbytes // itemsize)
            t = torch.full((n,), rank + 1, dtype=dtype, device=device)
            tdist.all_reduce(t)
            wrong = int(not bool((t == world * (world + 1) // 2).all().item()))
            seconds = _time(lambda t=t: tdist.all_reduce(t), sync, tdist.barrier, a)
            if rank == 0:
                algbw, busbw = _bw(n * itemsize, seconds, world)
                _emit({**base, "place": "in-place", "bytes": n * itemsize, "count": n,
                       "time_us": round(seconds * 1e6, 2), "algbw_GBps": algbw, "busbw_GBps": busbw, "wrong": wrong})
    else:
        from torch import nn
        g = torch.Generator().manual_seed(rank)
        x = torch.randn((a.batch, a.mlp[0]), generator=g).to(device)
        y = torch.randn((a.batch, a.mlp[-1]), generator=g).to(device)
        torch.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(_mlp(nn, a.mlp).to(device))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def step():
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        seconds = _time(step, sync, tdist.barrier, a)
        if rank == 0:
            _emit({**base, "step_ms": round(seconds * 1e3, 3)})
    tdist.barrier()
    tdist.destroy_process_group()


# ------------------------------------------------------------------------------------------------------ the job
def launch(a, impl, nproc):
    """One job of `nproc` ranks through the launcher; rank 0's rows (or raises with the job's output)."""
    cmd = [sys.executable, "-m", "rawdev.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
           str(Path(__file__).resolve()), "--worker", impl, "--mode", a.mode, "--dtype", a.dtype,
           "--min-bytes", str(a.min_bytes), "--max-bytes", str(a.max_bytes), "--iters", str(a.iters),
           "--warmup", str(a.warmup), "--batch", str(a.batch), "--mlp", *map(str, a.mlp)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OMP_NUM_THREADS", "1")
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.job_timeout)
    if res.returncode != 0:
        raise RuntimeError(f"allreduce: {nproc}-rank {impl} job failed (exit {res.returncode}):\n"
                           f"{res.stdout[-2000:]}\n{res.stderr[-3000:]}")
    return [json.loads(ln[len(TAG):]) for ln in res.stdout.splitlines() if ln.startswith(TAG)]


def _torch_importable():
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="two sizes, few iterations (runs on the simulator)")
    ap.add_argument("--json", action="store_true", help="one JSON line per row")
    ap.add_argument("--mode", choices=["allreduce", "ddp", "both"], default="both")
    ap.add_argument("--nproc", type=int, default=None,
                    help="ranks for the all-reduce, and the most for DDP (default: the GPU count; 2 on the simulator)")
    ap.add_argument("--dtype", choices=NP_DTYPES, default="float32")
    ap.add_argument("--min-bytes", type=int, default=None, help="smallest message (default 8; --quick 1024)")
    ap.add_argument("--max-bytes", type=int, default=None, help="largest message (default 256 MiB; --quick 64 KiB)")
    ap.add_argument("--iters", type=int, default=None, help="timed calls per size (default 20)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed calls first (default 5)")
    ap.add_argument("--mlp", type=int, nargs="*", default=None, help="DDP mode: the MLP's widths")
    ap.add_argument("--batch", type=int, default=None, help="DDP mode: batch per rank")
    ap.add_argument("--no-torch", action="store_true", help="rawdev only, even when PyTorch is importable")
    ap.add_argument("--job-timeout", type=float, default=600, help="hang guard per launched job, seconds")
    ap.add_argument("--worker", choices=["rawdev", "torch"], default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.min_bytes = a.min_bytes or (1024 if a.quick else 8)
    a.max_bytes = a.max_bytes or ((64 << 10) if a.quick else (256 << 20))
    a.iters = a.iters or (2 if a.quick else 20)
    a.warmup = a.warmup if a.warmup is not None else (1 if a.quick else 5)
    a.mlp = a.mlp or ([16, 32, 10] if a.quick else [1024, 1024, 1024, 10])
    a.batch = a.batch or (8 if a.quick else 64)
    if a.worker == "rawdev":
        return rawdev_worker(a)
    if a.worker == "torch":
        return torch_worker(a)
    import rawdev
    from rawdev.runtime import seam
    if not rawdev.cuda.is_available():
        print("allreduce: no cuda device (no GPU; RAWDEV_DRIVER=sim selects the simulator)", file=sys.stderr)
        return 2
    sim = seam.driver_name() == "sim"
    nproc = a.nproc or (2 if sim else rawdev.cuda.device_count())
    impls = ["rawdev"] + (["torch"] if _torch_importable() and not a.no_torch else [])
    modes = ["allreduce", "ddp"] if a.mode == "both" else [a.mode]
    rows = []
    for mode in modes:
        a.mode = mode
        for impl in impls:
            for n in ([nproc] if mode == "allreduce" else range(1, nproc + 1)):
                try:
                    got = launch(a, impl, n)
                except RuntimeError as e:
                    if impl == "rawdev":
                        raise
                    got = [{"impl": "torch", "error": str(e).splitlines()[0]}]   # the baseline failed: say so
                    print(e, file=sys.stderr)
                for r in got:
                    r = {"bench": "allreduce", "mode": mode, "ranks": n, "dtype": a.dtype, **r}
                    if mode == "ddp":
                        r["mlp"], r["batch_per_rank"] = "-".join(map(str, a.mlp)), a.batch
                    rows.append(r)
    for impl in impls:                 # scaling efficiency: step time at 1 rank over step time at n ranks
        one = next((r["step_ms"] for r in rows if r["mode"] == "ddp" and r.get("impl") == impl and r["ranks"] == 1
                    and "step_ms" in r), None)
        for r in rows:
            if r["mode"] == "ddp" and r.get("impl") == impl and "step_ms" in r and one:
                r["scaling_efficiency"] = round(one / r["step_ms"], 3)
    for r in rows:
        if a.json:
            print(json.dumps(r), flush=True)
        elif "error" in r:
            print(f"{r['impl']} {r['mode']} {r['ranks']} rank(s): {r['error']}")
        elif r["mode"] == "allreduce":
            print(f"{r['impl']:6} {r['communicator']:9} {r['ranks']} rank(s) {r['place']:12} {r['bytes']:>11} B "
                  f"{r['time_us']:>10.1f} us  algbw {r['algbw_GBps']:8.3f} GB/s  busbw {r['busbw_GBps']:8.3f} GB/s  "
                  f"wrong {r['wrong']}")
        else:
            print(f"{r['impl']:6} {r['communicator']:9} DDP MLP {r['mlp']} batch {r['batch_per_rank']}/rank, "
                  f"{r['ranks']} rank(s): {r['step_ms']:.3f} ms/step, scaling efficiency "
                  f"{r.get('scaling_efficiency')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
