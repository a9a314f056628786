#!/usr/bin/env python3
"""tools/gpu_check's NCCL step: the world-size-1 NCCL path of rawdev.distributed on the GPU.

One process joins a process group of one rank through env:// on 127.0.0.1 (a free port), backend "nccl", then
checks cuda-tensor collectives against numpy: all_reduce (SUM, AVG, async), broadcast, all_gather_into_tensor,
reduce_scatter_tensor, a barrier, and one DistributedDataParallel step of a small MLP against the same plain
step. NCCL refuses two ranks on one GPU, so one rank is what a single-GPU machine can check; it still runs the
whole path (unique id through the store, ncclCommInitRank, the collectives on the current stream, destroy).

On the real driver the collectives must go through NCCL (the "communicator" row fails otherwise); on the
simulator (`--driver sim`) they run on the simulated communicator, which proves this script. Prints one line
`NCCL_CHECK {json}` per check: {"check", "result": "PASS" | "FAIL: why", "communicator"}; exits 1 when any
failed.
"""
import json
import os
import socket
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TAG = "NCCL_CHECK "


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checks(rawdev, dist, np):
    """(name, fn) pairs; fn raises AssertionError (or anything) on failure."""
    rng = np.random.default_rng(0)

    def cuda(a):
        return rawdev.tensor(a, device="cuda")

    def all_reduce_sum():
        a = rng.standard_normal(1000).astype(np.float32)
        t = cuda(a)
        dist.all_reduce(t)
        np.testing.assert_array_equal(t.cpu().numpy(), a)

    def all_reduce_avg_async():
        a = rng.standard_normal(257).astype(np.float32)
        t = cuda(a)
        work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
        assert work.wait() is True
        np.testing.assert_array_equal(t.cpu().numpy(), a)

    def broadcast():
        a = rng.standard_normal((4, 5)).astype(np.float32)
        t = cuda(a)
        dist.broadcast(t, src=0)
        np.testing.assert_array_equal(t.cpu().numpy(), a)

    def all_gather_into_tensor():
        a = rng.standard_normal(64).astype(np.float32)
        out = rawdev.zeros(64, device="cuda")
        dist.all_gather_into_tensor(out, cuda(a))
        np.testing.assert_array_equal(out.cpu().numpy(), a)

    def reduce_scatter_tensor():
        a = rng.standard_normal(64).astype(np.float32)
        out = rawdev.zeros(64, device="cuda")
        dist.reduce_scatter_tensor(out, cuda(a))
        np.testing.assert_array_equal(out.cpu().numpy(), a)

    def barrier():
        dist.barrier()

    def ddp_step():
        from rawdev import nn, optim
        x = cuda(rng.standard_normal((16, 32)).astype(np.float32))
        y = cuda(rng.standard_normal((16, 4)).astype(np.float32))
        nets = []
        for _ in range(2):
            rawdev.manual_seed(0)
            nets.append(nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 4)).to("cuda"))
        plain, model = nets[0], nn.parallel.DistributedDataParallel(nets[1])
        for m in (plain, model):
            opt = optim.SGD(m.parameters(), lr=0.1)
            opt.zero_grad()
            nn.functional.mse_loss(m(x), y).backward()
            opt.step()
        for p, q in zip(plain.parameters(), model.module.parameters()):
            np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().cpu().numpy(), rtol=1e-6, atol=1e-7)

    return [("all_reduce SUM", all_reduce_sum), ("all_reduce AVG async", all_reduce_avg_async),
            ("broadcast", broadcast), ("all_gather_into_tensor", all_gather_into_tensor),
            ("reduce_scatter_tensor", reduce_scatter_tensor), ("barrier", barrier), ("DDP step = plain step", ddp_step)]


def main():
    import numpy as np
    import rawdev
    import rawdev.distributed as dist
    from rawdev.runtime import seam
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), RANK="0", WORLD_SIZE="1")
    failed = 0

    def row(name, result, communicator):
        nonlocal failed
        failed += result != "PASS"
        print(TAG + json.dumps({"check": name, "result": result, "communicator": communicator}), flush=True)

    dist.init_process_group("nccl", timeout=60)
    rawdev.zeros(1, device="cuda")                 # the driver is chosen
    real = seam.driver_name() == "cuda"
    communicator = "nccl" if real else "simulated"
    for name, fn in checks(rawdev, dist, np):
        try:
            fn()
            rawdev.cuda.synchronize()
            row(name, "PASS", communicator)
        except Exception as e:
            traceback.print_exc()
            row(name, f"FAIL: {type(e).__name__}: {str(e)[:300]}", communicator)
    from rawdev.cuda import process_group_nccl
    comm = process_group_nccl.communicator()
    if real:
        used = comm is not None
        from rawdev.distributed import nccl
        version = ".".join(map(str, nccl.version())) if used else "-"
        row(f"collectives went through NCCL {version}", "PASS" if used else
            "FAIL: the cuda collectives did not go through NCCL", communicator)
    else:
        row("the simulator keeps the simulated communicator", "PASS" if comm is None else
            "FAIL: the simulator made an NCCL backend", communicator)
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
