"""Tensor parallelism in the style of PyTorch's tensor-parallel example: two processes share one MLP, its first
Linear split by output columns and its second by input rows (one all-reduce per forward), and train it with AdamW
and gradient clipping on the same batches. Each process also checks the first forward against an unsplit copy
of the model."""
import os
import socket

import rawdev as torch
import rawdev.multiprocessing as mp
import rawdev.nn as nn
import rawdev.nn.functional as F
from rawdev.distributed.device_mesh import init_device_mesh
from rawdev.distributed.tensor import DTensor
from rawdev.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

WORLD = 2
STEPS = 40


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.in_proj = nn.Linear(10, 32)
        self.relu = nn.ReLU()
        self.out_proj = nn.Linear(32, 5)

    def forward(self, x):
        return self.out_proj(self.relu(self.in_proj(x)))


def train(rank, device, results):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(WORLD), LOCAL_RANK=str(rank))
    mesh = init_device_mesh(device, (WORLD,))      # makes the default process group too
    torch.manual_seed(0)
    model = ToyModel().to(device)
    plain = ToyModel().to(device)
    plain.load_state_dict(model.state_dict())
    model = parallelize_module(model, mesh, {"in_proj": ColwiseParallel(), "out_proj": RowwiseParallel()})
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.02, foreach=True)
    torch.manual_seed(1)
    true_w = torch.randn(10, 5).to(device)
    losses, err = [], None
    for step in range(STEPS):
        torch.manual_seed(100 + step)            # every rank draws the same batch
        x = torch.rand(20, 10, device=device)
        y = x @ true_w
        out = model(x)
        if err is None:
            err = (out - plain(x)).abs().max().item()
        loss = F.mse_loss(out, y)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    halves = sorted(tuple(p.to_local().shape) for p in model.parameters())
    sharded = all(isinstance(p, DTensor) for p in model.parameters()) and halves == [(5,), (5, 16), (16,), (16, 10)]
    results.put((rank, losses[0], losses[-1], err, int(sharded)))


def main():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    device = "cuda" if torch.cuda.is_available() and torch.cuda.device_count() >= WORLD else "cpu"
    print(f"Using device: {device}")
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=train, args=(r, device, results)) for r in range(WORLD)]
    for p in procs:
        p.start()
    got = sorted(results.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    first, last = got[0][1], got[0][2]
    same = int(all(abs(g[2] - last) < 1e-6 for g in got))       # the ranks hold one model
    print(f"RESULT first_loss={first:.4f} last_loss={last:.4f} out_err={max(g[3] for g in got):.3g} "
          f"sharded={min(g[4] for g in got)} same={same}")


if __name__ == "__main__":
    main()
