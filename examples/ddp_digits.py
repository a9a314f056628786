"""Data-parallel training as torchrun programs do it, on rawdev: run with

    rawdev run --nproc-per-node 2 examples/ddp_digits.py --epochs 2

Each rank trains a replica on its shard of the bundled digits set (DistributedSampler); DDP averages the gradients,
so the replicas stay identical. Without a GPU every rank gets its own simulated GPU (RAWDEV_DRIVER=sim) or runs
on the cpu (--device cpu)."""
import argparse

import rawdev
import rawdev.distributed as dist
from rawdev import nn, optim
from rawdev.data import load_digits
from rawdev.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--device", default="auto", help="auto (cuda if available, else cpu), cuda or cpu")
    args = p.parse_args()
    use_cuda = args.device == "cuda" or (args.device == "auto" and rawdev.cuda.is_available())
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = rawdev.device("cuda") if use_cuda else rawdev.device("cpu")   # cuda: this rank's current device

    X, y = load_digits()
    data = TensorDataset(rawdev.tensor(X / 16.0), rawdev.tensor(y))
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)

    rawdev.manual_seed(rank)          # different on purpose: DDP starts every replica from rank 0's weights
    net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    model = nn.parallel.DistributedDataParallel(net)
    opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = rawdev.zeros(2, device=device)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += rawdev.stack([loss.detach() * len(yb), rawdev.tensor(float(len(yb)), device=device)])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean loss {float(total[0] / total[1]):.4f} over {int(total[1])} samples "
                  f"on {world} ranks", flush=True)
    checksum = rawdev.stack([p.detach().sum() for p in net.parameters()]).sum().reshape(1)
    sums = [rawdev.zeros(1, device=device) for _ in range(world)]
    dist.all_gather(sums, checksum)
    if rank == 0:
        print("replicas identical:", all(float(s) == float(sums[0]) for s in sums), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
