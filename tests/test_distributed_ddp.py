"""DistributedDataParallel over 2 ranks (separate processes): training equals one process training on the
concatenated batch; no_sync accumulates; unused parameters raise naming them, or are found and skipped with
find_unused_parameters=True."""
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
def make(seed):
    rawdev.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
def batch(step, r):
    return inp(10 * step + r, (5, 4)), inp(10 * step + r + 5, (5, 2))
"""

TRAIN = MODEL + """
from rawdev import nn, optim
dev = os.environ.get("TEST_DEVICE", "cpu")
for cap in (None, 1e-4):            # one bucket; one bucket per parameter
    net = make(RANK).cuda() if dev == "cuda" else make(RANK)    # .cuda(): the rank's current device
    model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=cap)
    opt = optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x, y = batch(step, RANK)
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


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_ddp_training_equals_one_process_on_the_concatenated_batch(tmp_path, device):
    env = {"TEST_SEED": str(SEED), "TEST_DEVICE": device}
    if device == "cuda":
        env.update(RAWDEV_DRIVER="sim", RAWDEV_SIM_DEVICES="2")     # each rank on its own simulated GPU
        ranks = run_ranks(tmp_path, TRAIN, 2, env=env, init="dist.init_process_group('nccl', timeout=20)\n")
    else:
        ranks = run_ranks(tmp_path, TRAIN, 2, env=env)
    make, batch = reference_model()
    model = make(0)                   # DDP starts every rank from rank 0's parameters
    opt = rawdev.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        xs, ys = zip(*(batch(step, r) for r in range(2)))
        opt.zero_grad()
        nn.functional.mse_loss(model(rawdev.tensor(np.concatenate(xs))), rawdev.tensor(np.concatenate(ys))).backward()
        opt.step()
    ref = flat(model)
    assert np.abs(flat(make(1)) - ref).max() > 1e-3      # rank 1's own start differs: the broadcast mattered
    for rk in ranks:
        assert rk.rc == 0, f"seed {SEED}: {rk}"
        for cap in ("None", "0.0001"):
            got = np.asarray(rk.results[f"params_{cap}"], np.float64)
            assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5, f"rank {rk.rank} cap {cap} seed {SEED}"
    np.testing.assert_array_equal(ranks[0].results["params_None"], ranks[1].results["params_None"])
    np.testing.assert_array_equal(ranks[0].results["params_0.0001"], ranks[1].results["params_0.0001"])


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
