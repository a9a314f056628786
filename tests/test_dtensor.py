"""DTensor on 2 ranks: distribute_tensor / redistribute / full_tensor round trips for every pair of placements
(uneven shards included), Partial reductions, gradients through from_local / redistribute / to_local (each
backward the matching collective), DTensor's own ops (elementwise, sum/mean to Partial, matmul layouts) against
float64 references, and the clear errors for what it does not do; a cuda run through the simulated communicator."""
import os

import numpy as np
import pytest

from _dist_ranks import run_ranks

SEED = int(os.environ.get("RAWDEV_TEST_SEED", np.random.SeedSequence().entropy % 10000))

BODY = """
from rawdev.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor, init_device_mesh
dev = os.environ.get("TEST_DEVICE", "cpu")
mesh = init_device_mesh(dev, (WORLD,))
T = lambda a: rawdev.tensor(a, device=dev)
L = lambda t: t.detach().cpu().numpy().tolist()
x = T(inp(0, (5, 6)))                       # 5 rows: uneven shards on dim 0 (3 + 2)
PL = {"S0": Shard(0), "S1": Shard(1), "R": Replicate(), "P": Partial()}
for a, pa in PL.items():
    if a == "P":
        d = DTensor.from_local(T(inp(10 + RANK, (5, 6))), mesh, [pa])       # the value: the ranks' sum
    else:
        d = distribute_tensor(x, mesh, [pa])
    report(f"local_{a}", list(d.to_local().shape))
    report(f"meta_{a}", [list(d.shape), d.ndim, d.numel(), str(d.placements)])
    for b, pb in PL.items():
        if b == "P" and a != "P":
            continue
        e = d.redistribute(mesh, [pb])
        report(f"{a}_{b}", e.full_tensor())
        report(f"{a}_{b}_local", e.to_local())
# gradients: loss = sum(full * W) on every rank; the leaf's gradient is W's part that the leaf holds
W = T(inp(20, (5, 6)))
for a, pa in PL.items():
    for b, pb in PL.items():
        if b == "P" and a != "P":
            continue
        shape = {"S0": (3 - RANK, 6), "S1": (5, 3), "R": (5, 6), "P": (5, 6)}[a]
        leaf = T(inp(30 + RANK, shape)).requires_grad_()
        d = DTensor.from_local(leaf, mesh, [pa], shape=(5, 6))
        (d.redistribute(mesh, [pb]).full_tensor() * W).sum().backward()
        report(f"grad_{a}_{b}", leaf.grad)
# DTensor ops
y = T(inp(1, (5, 6)))
for a in ("S0", "S1", "R"):
    dx, dy = distribute_tensor(x, mesh, [PL[a]]), distribute_tensor(y, mesh, [PL[a]])
    report(f"ew_{a}", ((dx * dy + dx - 2.0 * dy) / 3.0).relu().tanh().full_tensor())
    s = dx.sum()
    report(f"sum_{a}", [str(s.placements), s.full_tensor().item()])
    m = dx.mean(1)
    report(f"mean1_{a}", [str(m.placements), L(m.full_tensor())])
    report(f"mean_{a}", dx.mean().full_tensor().item())
p1 = DTensor.from_local(T(inp(10 + RANK, (5, 6))), mesh, [Partial()])
report("partial_lin", (p1 * 3.0 - p1).full_tensor())
w = T(inp(2, (6, 4)))
for a, b in (("R", "R"), ("R", "S1"), ("S1", "S0"), ("S0", "R")):
    la = {"S1": Shard(1)}.get(a, PL[a])
    lhs = distribute_tensor(x, mesh, [la]).requires_grad_()
    rhs = distribute_tensor(w, mesh, [PL[b]]).requires_grad_()
    out = lhs @ rhs
    report(f"mm_{a}_{b}", [str(out.placements), L(out.full_tensor())])
    (out.full_tensor() * T(inp(21, (5, 4)))).sum().backward()
    report(f"mm_{a}_{b}_grads", [L(lhs.grad.full_tensor()), L(rhs.grad.full_tensor())])
errors = []
dx = distribute_tensor(x, mesh, [Shard(0)])
for f in (lambda: dx.cumsum(0), lambda: rawdev.exp(dx), lambda: dx + x,
          lambda: dx + distribute_tensor(x, mesh, [Replicate()]), lambda: p1.relu(),
          lambda: dx.redistribute(mesh, [Partial()]), lambda: distribute_tensor(x, mesh, [Partial()]),
          lambda: distribute_tensor(x, mesh, [Shard(0)]) @ distribute_tensor(w, mesh, [Shard(1)])):
    try:
        f()
        errors.append("no error")
    except (NotImplementedError, RuntimeError) as e:
        errors.append(f"{type(e).__name__}: {e}")
report("errors", errors)
report("repr", repr(Shard(1)) + repr(Replicate()) + repr(Partial()) + repr(Partial("max")))
report("eq", [Shard(1) == Shard(1), Shard(1) == Shard(0), Replicate() == Replicate(), Partial() == Partial("sum")])
"""


def _inp(r, shape):
    return np.random.default_rng(SEED * 1000 + r).standard_normal(shape).astype(np.float32).astype(np.float64)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


def chunk(a, dim, k, n=2):
    return np.array_split(a, [3], axis=dim)[k] if a.shape[dim] == 5 else np.split(a, n, axis=dim)[k]


def _run(tmp_path, device):
    env = {"TEST_SEED": str(SEED), "TEST_DEVICE": device}
    if device == "cuda":
        env.update(RAWDEV_DRIVER="sim", RAWDEV_SIM_DEVICES="2")
        ranks = run_ranks(tmp_path, BODY, 2, env=env, init="dist.init_process_group('nccl', timeout=20)\n")
    else:
        ranks = run_ranks(tmp_path, BODY, 2, env=env)
    for r in ranks:
        assert r.rc == 0, r
    return ranks


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_redistribute_round_trips_and_gradients(tmp_path, device):
    ranks = _run(tmp_path, device)
    x, W = _inp(0, (5, 6)), _inp(20, (5, 6))
    partial = _inp(10, (5, 6)) + _inp(11, (5, 6))
    for r in ranks:
        res, k = r.results, r.rank
        assert res["local_S0"] == [[3, 6], [2, 6]][k] and res["local_S1"] == [5, 3] and res["local_R"] == [5, 6]
        assert res["meta_S0"] == [[5, 6], 2, 30, "(Shard(dim=0),)"]
        for a in ("S0", "S1", "R", "P"):
            full = partial if a == "P" else x
            for b in ("S0", "S1", "R", "P"):
                if b == "P" and a != "P":
                    continue
                assert rel(res[f"{a}_{b}"], full) < 1e-6, (a, b)
                want = {"S0": chunk(full, 0, k), "S1": chunk(full, 1, k), "R": full}.get(b)
                if want is not None:
                    assert rel(res[f"{a}_{b}_local"], want) < 1e-6, (a, b)
                # the gradient of sum(full * W) for the leaf each rank holds: its part of W
                grad_want = {"S0": chunk(W, 0, k), "S1": chunk(W, 1, k), "R": W, "P": W}[a]
                assert rel(res[f"grad_{a}_{b}"], grad_want) < 1e-6, (a, b)


def test_dtensor_ops_against_float64_references(tmp_path):
    ranks = _run(tmp_path, "cpu")
    x, y, w, G = _inp(0, (5, 6)), _inp(1, (5, 6)), _inp(2, (6, 4)), _inp(21, (5, 4))
    p = _inp(10, (5, 6)) + _inp(11, (5, 6))
    for r in ranks:
        res = r.results
        for a in ("S0", "S1", "R"):
            assert rel(res[f"ew_{a}"], np.tanh(np.maximum((x * y + x - 2 * y) / 3, 0))) < 1e-6
            assert res[f"sum_{a}"][0] == ("(Replicate(),)" if a == "R" else "(Partial(sum),)")
            assert abs(res[f"sum_{a}"][1] - x.sum()) < 1e-5 * np.abs(x).sum()
            assert res[f"mean1_{a}"][0] == {"S0": "(Shard(dim=0),)", "S1": "(Partial(sum),)", "R": "(Replicate(),)"}[a]
            assert rel(res[f"mean1_{a}"][1], x.mean(1)) < 1e-6
            assert abs(res[f"mean_{a}"] - x.mean()) < 1e-5 * np.abs(x).mean()
        assert rel(res["partial_lin"], 2 * p) < 1e-6
        for a, b, placement in (("R", "R", "Replicate()"), ("R", "S1", "Shard(dim=1)"),
                                ("S1", "S0", "Partial(sum)"), ("S0", "R", "Shard(dim=0)")):
            got_pl, got = res[f"mm_{a}_{b}"]
            assert got_pl == f"({placement},)" and rel(got, x @ w) < 1e-6, (a, b)
            gx, gw = res[f"mm_{a}_{b}_grads"]
            assert rel(gx, G @ w.T) < 1e-6 and rel(gw, x.T @ G) < 1e-6, (a, b)
        errs = res["errors"]
        assert "Tensor.cumsum" in errs[0] and "Shard(dim=0)" in errs[0] and errs[0].startswith("NotImplementedError")
        assert errs[1].startswith("NotImplementedError") and "exp" in errs[1] and "Shard(dim=0)" in errs[1]
        assert "got mixed torch.Tensor and DTensor" in errs[2]
        assert errs[3].startswith("NotImplementedError") and "redistribute() one of them" in errs[3]
        assert errs[4].startswith("NotImplementedError") and "relu" in errs[4] and "Partial(sum)" in errs[4]
        assert "Can not redistribute to Partial" in errs[5]
        assert "Trying to distribute tensor with unsupported placements Partial(sum)" in errs[6]
        assert errs[7].startswith("NotImplementedError") and "aten.mm" in errs[7]
        assert res["repr"] == "Shard(dim=1)Replicate()Partial(sum)Partial(max)"
        assert res["eq"] == [True, False, True, True]


AVG = """
from rawdev.distributed.tensor import DTensor, Partial, Replicate, Shard, init_device_mesh
mesh = init_device_mesh("cpu", (WORLD,))
for op in ("avg", "max", "min"):
    leaf = rawdev.tensor(inp(10 + RANK, (4, 3))).requires_grad_()
    d = DTensor.from_local(leaf, mesh, [Partial(op)])
    full = d.full_tensor()
    report(f"{op}_value", full)
    report(f"{op}_shard", d.redistribute(mesh, [Shard(0)]).to_local())
    try:
        (full * 2.0).sum().backward()
        report(f"{op}_grad", leaf.grad)
    except NotImplementedError as e:
        report(f"{op}_grad", str(e))
"""


def test_partial_avg_max_min_values_and_gradients(tmp_path):
    ranks = run_ranks(tmp_path, AVG, 2, env={"TEST_SEED": str(SEED)})
    a, b = _inp(10, (4, 3)), _inp(11, (4, 3))
    want = {"avg": (a + b) / 2, "max": np.maximum(a, b), "min": np.minimum(a, b)}
    for r in ranks:
        assert r.rc == 0, r
        res = r.results
        for op, v in want.items():
            assert rel(res[f"{op}_value"], v) < 1e-6
            assert rel(res[f"{op}_shard"], v[2 * r.rank:2 * r.rank + 2]) < 1e-6
        assert rel(res["avg_grad"], np.full((4, 3), 2.0 / 2)) < 1e-6      # d mean / d term = 1/n
        assert "gradient of redistributing Partial(max)" in res["max_grad"]
        assert "gradient of redistributing Partial(min)" in res["min_grad"]
