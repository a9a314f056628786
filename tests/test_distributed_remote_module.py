"""torch.distributed.nn.RemoteModule between two RPC workers: the module is built on its owner, forward runs there
and equals the same layer run locally, distributed autograd carries the gradient back to its parameters, a
DistributedOptimizer over remote_parameters() steps them as plain SGD would, the RemoteModule can itself be sent in
an RPC, and the local-only Module methods raise PyTorch's error."""
import numpy as np

from _dist_ranks import run_ranks

RPC_INIT = "import rawdev.distributed.rpc as rpc\n"

BODY = """
import rawdev.distributed.autograd as dist_autograd
from rawdev import nn
from rawdev.distributed.nn import RemoteModule
from rawdev.distributed.optim import DistributedOptimizer

def use_it(remote_linear, x):
    # runs on w1: the RemoteModule arrived as an argument and calls back to its owner
    return remote_linear.forward(x)

rpc.init_rpc(f"w{RANK}", rank=RANK, world_size=WORLD)
if RANK == 0:
    rawdev.manual_seed(0)
    remote_linear = RemoteModule("w1/cpu", nn.Linear, args=(4, 3), kwargs={"bias": True})
    params = [p.to_here() for p in remote_linear.remote_parameters()]
    x = rawdev.tensor(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)
    y = remote_linear.forward(x)
    want = x @ params[0].t() + params[1]
    report("forward_err", float((y - want).abs().max()))
    report("async_err", float((remote_linear.forward_async(x).wait() - want).abs().max()))
    report("sent_err", float((rpc.rpc_sync("w1", use_it, args=(remote_linear, x)) - want).abs().max()))
    opt = DistributedOptimizer(rawdev.optim.SGD, remote_linear.remote_parameters(), lr=0.5)
    with dist_autograd.context() as cid:
        loss = (remote_linear(x) ** 2).sum()
        dist_autograd.backward(cid, [loss])
        grads = dist_autograd.get_gradients(cid)
        opt.step(cid)
    after = [p.to_here() for p in remote_linear.remote_parameters()]
    g_w = (2 * want).t() @ x          # d(sum y^2)/dW for y = x W^T + b
    g_b = (2 * want).sum(0)
    report("step_err", [float((after[0] - (params[0] - 0.5 * g_w)).abs().max()),
                        float((after[1] - (params[1] - 0.5 * g_b)).abs().max())])
    errors = []
    for f in (lambda: remote_linear.parameters(), lambda: remote_linear.to("cpu"),
              lambda: remote_linear.state_dict(), lambda: RemoteModule("w1/cpu/extra", nn.Linear, args=(1, 1))):
        try:
            f()
            errors.append("no error")
        except ValueError as e:
            errors.append(str(e))
    report("errors", errors)
    report("repr", repr(remote_linear))
rpc.shutdown()
"""


def test_remote_module_runs_on_its_owner_and_trains_through_distributed_autograd(tmp_path):
    ranks = run_ranks(tmp_path, BODY, 2, init=RPC_INIT)
    for r in ranks:
        assert r.rc == 0, r
    res = ranks[0].results
    assert res["forward_err"] < 1e-6 and res["async_err"] < 1e-6 and res["sent_err"] < 1e-6
    assert max(res["step_err"]) < 1e-5, res["step_err"]
    assert res["errors"][:3] == ["Method ``parameters`` not supported for RemoteModule",
                                 "Method ``to`` not supported for RemoteModule",
                                 "Method ``state_dict`` not supported for RemoteModule"]
    assert res["errors"][3].startswith("Could not parse remote_device: w1/cpu/extra")
    assert res["repr"] == "RemoteModule(on='w1', device='cpu')"
    assert np.isfinite(res["step_err"]).all()
