"""A parameter server over RPC, in the style of the distributed RPC examples: one process owns the model (on the
GPU when there is one) and two trainer processes run forward through it with rpc_sync, backpropagate with
distributed autograd and step it with a DistributedOptimizer. The trainers also check one step's gradients
against a local autograd run on a copy of the weights."""
import os
import socket
import threading

import rawdev as torch
import rawdev.distributed.autograd as dist_autograd
import rawdev.distributed.rpc as rpc
import rawdev.multiprocessing as mp
import rawdev.nn as nn
import rawdev.nn.functional as F
from rawdev import optim
from rawdev.distributed.optim import DistributedOptimizer

TRAINERS = 2
STEPS = 30


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class ParameterServer(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = Net().to(self.device)
        self.turn, self.cond = 0, threading.Condition()

    # the trainers take turns (forward, backward, step), so that no step changes the weights a forward saved
    # for its backward, and the run is the same every time
    def wait_turn(self, ticket):
        with self.cond:
            self.cond.wait_for(lambda: self.turn == ticket)

    def end_turn(self):
        with self.cond:
            self.turn += 1
            self.cond.notify_all()

    def forward(self, x):
        # tensors travel over RPC on the cpu: move in, compute on the device, move the result back
        return self.model(x.to(self.device)).cpu()

    def get_param_rrefs(self):
        return [rpc.RRef(p) for p in self.model.parameters()]

    def weights(self):
        return [p.detach().cpu() for p in self.model.parameters()]

    def grads(self, context_id):
        g = dist_autograd.get_gradients(context_id)
        return [g[p].cpu() for p in self.model.parameters()]


def call_method(method, rref, *args, **kwargs):
    return method(rref.local_value(), *args, **kwargs)


def remote_method(method, rref, *args, **kwargs):
    return rpc.rpc_sync(rref.owner(), call_method, args=[method, rref] + list(args), kwargs=kwargs)


_results = {}
_done = threading.Event()


def report(rank, first, last, grad_err):
    _results[rank] = (first, last, grad_err)
    if len(_results) == TRAINERS:
        _done.set()


def make_data(rank):
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(64, 4, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    return x, y


def trainer(rank):
    rpc.init_rpc(f"trainer{rank}", rank=rank, world_size=TRAINERS + 1)
    ps = rpc.rpc_sync("ps", get_ps_rref)
    param_rrefs = remote_method(ParameterServer.get_param_rrefs, ps)
    opt = DistributedOptimizer(optim.SGD, param_rrefs, lr=0.05)
    x, y = make_data(rank)
    losses, grad_err = [], None
    for step in range(STEPS):
        remote_method(ParameterServer.wait_turn, ps, step * TRAINERS + rank - 1)
        with dist_autograd.context() as cid:
            out = remote_method(ParameterServer.forward, ps, x)
            loss = F.cross_entropy(out, y)
            dist_autograd.backward(cid, [loss])
            if step == 0:   # the distributed gradients against plain autograd on a copy of the weights
                got = remote_method(ParameterServer.grads, ps, cid)
                local = Net()
                with torch.no_grad():
                    for p, w in zip(local.parameters(), remote_method(ParameterServer.weights, ps)):
                        p.copy_(w)
                F.cross_entropy(local(x), y).backward()
                grad_err = max(float((a - p.grad).abs().max()) for a, p in zip(got, local.parameters()))
            opt.step(cid)
        remote_method(ParameterServer.end_turn, ps)
        losses.append(float(loss))
    rpc.rpc_sync("ps", report, args=(rank, losses[0], sum(losses[-5:]) / 5, grad_err))
    rpc.shutdown()


_ps = []
_ps_ready = threading.Event()


def get_ps_rref():
    _ps_ready.wait()   # a trainer may ask before the server has made its model
    return _ps[0]


def main():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=trainer, args=(r,)) for r in range(1, TRAINERS + 1)]
    for p in procs:
        p.start()
    rpc.init_rpc("ps", rank=0, world_size=TRAINERS + 1)
    _ps.append(rpc.RRef(ParameterServer()))
    _ps_ready.set()
    print(f"Using device: {_ps[0].local_value().device}")
    _done.wait(timeout=600)
    rpc.shutdown()
    for p in procs:
        p.join()
    firsts = [r[0] for r in _results.values()]
    lasts = [r[1] for r in _results.values()]
    err = max(r[2] for r in _results.values())
    ok = int(all(p.exitcode == 0 for p in procs))
    print(f"RESULT first_loss={sum(firsts) / len(firsts):.4f} last_loss={sum(lasts) / len(lasts):.4f} "
          f"grad_err={err:.3g} trainers_ok={ok}")


if __name__ == "__main__":
    main()
