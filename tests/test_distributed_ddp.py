"""DistributedDataParallel over 2 and 4 ranks (separate processes): training an MLP or a small CNN equals one
process training on the concatenated batch; buckets are all-reduced while backward still runs; no_sync
accumulates; unused parameters raise naming them, or are found and skipped with find_unused_parameters=True."""
import os

import numpy as np
import pytest
import rawdev
from rawdev import nn

from _dist_ranks import run_ranks

SEED = int(os.environ.get("RAWDEV_TEST_SEED", np.random.SeedSequence().entropy % 10000))
STEPS, BATCH = 3, 5

MODEL = """
from rawdev import nn
def make(seed, kind="mlp"):
    rawdev.manual_seed(seed)
    if kind == "cnn":       # conv weights, their biases and a linear head: 4 parameters of differing shapes
        return nn.Sequential(nn.Conv2d(1, 3, 3), nn.Tanh(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
def batch(step, r, kind="mlp"):
    shape = (5, 1, 6, 6) if kind == "cnn" else (5, 4)
    return inp(10 * step + r, shape), inp(10 * step + r + 5, (5, 2))
"""

TRAIN = MODEL + """
from rawdev import nn, optim
dev = os.environ.get("TEST_DEVICE", "cpu")
kind = os.environ.get("TEST_MODEL", "mlp")
for cap in (None, 1e-5):            # one bucket; one bucket per parameter
    net = make(RANK, kind).cuda() if dev == "cuda" else make(RANK, kind)    # .cuda(): the rank's current device
    model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=cap)
    report(f"buckets_{cap}", len(model._buckets))
    opt = optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x, y = batch(step, RANK, kind)
        opt.zero_grad()
        nn.functional.mse_loss(model(rawdev.tensor(x, device=dev)), rawdev.tensor(y, device=dev)).backward()
        opt.step()
    assert str(next(net.parameters()).device) == ("cpu" if dev == "cpu" else f"cuda:{RANK}")
    report(f"params_{cap}", np.concatenate([p.detach().cpu().numpy().ravel() for p in model.module.parameters()]))
    assert list(model.state_dict())[0] == "module.0.weight"
"""


def reference_model():
    env = {}
    exec(MODEL.replace("inp(", "_inp("), {"rawdev": rawdev, "nn": nn, "_inp": _inp}, env)
    return env["make"], env["batch"]


def _inp(r, shape):
    return np.random.default_rng(SEED * 1000 + r).standard_normal(shape).astype(np.float32)


def flat(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]).astype(np.float64)


@pytest.mark.parametrize("device,kind,world", [("cpu", "mlp", 2), ("cuda", "mlp", 2), ("cpu", "cnn", 2),
                                               ("cpu", "mlp", 4), ("cpu", "cnn", 4)])
def test_ddp_training_equals_one_process_on_the_concatenated_batch(tmp_path, device, kind, world):
    env = {"TEST_SEED": str(SEED), "TEST_DEVICE": device, "TEST_MODEL": kind}
    if device == "cuda":
        env.update(RAWDEV_DRIVER="sim", RAWDEV_SIM_DEVICES=str(world))     # each rank on its own simulated GPU
        ranks = run_ranks(tmp_path, TRAIN, world, env=env, init="dist.init_process_group('nccl', timeout=20)\n")
    else:
        ranks = run_ranks(tmp_path, TRAIN, world, env=env)
    make, batch = reference_model()
    model = make(0, kind)             # DDP starts every rank from rank 0's parameters
    opt = rawdev.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        xs, ys = zip(*(batch(step, r, kind) for r in range(world)))
        opt.zero_grad()
        nn.functional.mse_loss(model(rawdev.tensor(np.concatenate(xs))), rawdev.tensor(np.concatenate(ys))).backward()
        opt.step()
    ref = flat(model)
    assert np.abs(flat(make(1, kind)) - ref).max() > 1e-3      # rank 1's own start differs: the broadcast mattered
    n_params = len(list(model.parameters()))
    for rk in ranks:
        assert rk.rc == 0, f"seed {SEED}: {rk}"
        assert rk.results["buckets_None"] == 1 and rk.results["buckets_1e-05"] == n_params, rk.results
        for cap in ("None", "1e-05"):
            got = np.asarray(rk.results[f"params_{cap}"], np.float64)
            assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5, f"rank {rk.rank} cap {cap} seed {SEED}"
    for rk in ranks[1:]:
        np.testing.assert_array_equal(ranks[0].results["params_None"], rk.results["params_None"])
        np.testing.assert_array_equal(ranks[0].results["params_1e-05"], rk.results["params_1e-05"])


OVERLAP = """
from rawdev import nn
rawdev.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                    nn.Linear(8, 2))
events = []
# registered before DDP wraps the module, so each of these runs before DDP's own hook on the same gradient
for name, p in net.named_parameters():
    p.register_post_accumulate_grad_hook(lambda p, name=name: events.append("grad " + name))
real_all_reduce = dist.all_reduce
def spy(tensor, *args, **kwargs):
    events.append(f"all_reduce {tensor.numel()}")
    work = real_all_reduce(tensor, *args, **kwargs)
    events.append(f"issued, completed={work.is_completed()}")
    return work
dist.all_reduce = spy                 # DDP calls it as dist.all_reduce, so the spy sees every bucket's call
model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=1e-5)      # ~10 bytes: a bucket per parameter
report("buckets", model._buckets)
x = rawdev.tensor(inp(RANK, (6, 4)))
events.clear()
model(x).pow(2).mean().backward()
report("events", events)
report("grad0", net[0].weight.grad)
"""


def test_buckets_are_all_reduced_while_backward_still_produces_gradients(tmp_path):
    ranks = run_ranks(tmp_path, OVERLAP, 2, env={"TEST_SEED": str(SEED)})
    for rk in ranks:
        assert rk.rc == 0, f"seed {SEED}: {rk}"
        assert rk.results["buckets"] == [[i] for i in reversed(range(8))], rk.results["buckets"]
        ev = rk.results["events"]
        reduces = [i for i, e in enumerate(ev) if e.startswith("all_reduce")]
        grads = [i for i, e in enumerate(ev) if e.startswith("grad")]
        assert len(reduces) == 8 and len(grads) == 8, ev       # >= 3 buckets, each its own all-reduce
        # the last layer's gradients come first in backward; its bucket is issued (asynchronously) at once, long
        # before the first layer's weight gradient, the model's last, is produced
        assert ev[grads[0]] == "grad 6.bias" and ev[reduces[0] - 1] == "grad 6.bias", ev
        assert ev[grads[-1]] == "grad 0.weight", ev
        assert reduces[0] < grads[-1] and reduces[1] < grads[-1] and reduces[2] < grads[-1], ev
        # every bucket but the last was issued before the gradient that fills the next one
        assert [ev[i - 1] for i in reduces] == [ev[g] for g in grads], ev
    # the all-reduced gradient is the average of both ranks' own (each rank's equals the other's, bit for bit)
    assert ranks[0].results["grad0"] == ranks[1].results["grad0"]


NO_SYNC = MODEL + """
model = nn.parallel.DistributedDataParallel(make(0))
x1, y1 = batch(0, RANK)
x2, y2 = batch(1, RANK)
with model.no_sync():
    nn.functional.mse_loss(model(rawdev.tensor(x1)), rawdev.tensor(y1)).backward()
report("local", model.module[0].weight.grad)
nn.functional.mse_loss(model(rawdev.tensor(x2)), rawdev.tensor(y2)).backward()
report("synced", model.module[0].weight.grad)
"""


def test_no_sync_accumulates_locally_then_averages_the_sum(tmp_path):
    ranks = run_ranks(tmp_path, NO_SYNC, 2, env={"TEST_SEED": str(SEED)})
    make, batch = reference_model()
    grads = []
    for r in range(2):
        model = make(0)
        for step in range(2):
            x, y = batch(step, r)
            nn.functional.mse_loss(model(rawdev.tensor(x)), rawdev.tensor(y)).backward()
            if step == 0:
                first = model[0].weight.grad.numpy().astype(np.float64)
        grads.append((first, model[0].weight.grad.numpy().astype(np.float64)))
    avg = (grads[0][1] + grads[1][1]) / 2
    for rk in ranks:
        assert rk.rc == 0, f"seed {SEED}: {rk}"
        np.testing.assert_allclose(rk.results["local"], grads[rk.rank][0], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(rk.results["synced"], avg, rtol=1e-5, atol=1e-6, err_msg=f"seed {SEED}")


UNUSED = """
from rawdev import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(3, 2)
        self.unused = nn.Linear(3, 2)
    def forward(self, x):
        return self.used(x)
FIND = os.environ["FIND"] == "1"
model = nn.parallel.DistributedDataParallel(Net(), find_unused_parameters=FIND)
for step in range(2):
    try:
        model(rawdev.ones(4, 3) * (RANK + 1)).sum().backward()
    except RuntimeError as e:
        print("ERROR", e, flush=True)
        break
report("grad", model.module.used.bias.grad)
report("unused_grad_is_none", model.module.unused.weight.grad is None)
"""


@pytest.mark.parametrize("find", [False, True])
def test_unused_parameters(tmp_path, find):
    ranks = run_ranks(tmp_path, UNUSED, 2, env={"FIND": str(int(find))})
    for rk in ranks:
        assert rk.rc == 0, rk
        if find:
            assert "ERROR" not in rk.out, rk
            assert rk.results["grad"] == [8.0, 8.0], rk     # d(sum)/d(bias) = 4 rows, two backwards accumulated
            assert rk.results["unused_grad_is_none"] is True
        else:
            assert "Expected to have finished reduction in the prior iteration" in rk.out, rk
            assert f"Parameters which did not receive grad for rank {rk.rank}: unused.weight, unused.bias" in rk.out


def test_ddp_needs_a_process_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
    assert nn.DistributedDataParallel is nn.parallel.DistributedDataParallel
