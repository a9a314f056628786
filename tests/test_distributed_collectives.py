"""rawdev.distributed's collectives across real processes (2 and 4 ranks, cpu tensors and the simulated GPU)
against numpy references, reduced in rank order in float32 so results must match bit for bit; NCCL's ordering
rules: a rank making another collective raises on every rank, a rank that never calls times out naming it."""
import os

import numpy as np
import pytest

from _dist_ranks import run_ranks

SEED = int(os.environ.get("RAWDEV_TEST_SEED", np.random.SeedSequence().entropy % 10000))

BODY = """
dev = os.environ.get("TEST_DEVICE", "cpu")
def T(a):
    return rawdev.tensor(a, device=dev)
x = T(inp(RANK, (5, 3)))
for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
    t = x.clone()
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    report("all_reduce_" + op, t)
t = T(inp(RANK, (4,)))
dist.broadcast(t, src=WORLD - 1)
report("broadcast", t)
outs = [T(np.zeros(3, np.float32)) for _ in range(WORLD)]
dist.all_gather(outs, T(inp(RANK, (3,))))
report("all_gather", np.stack([o.cpu().numpy() for o in outs]))
big = T(np.zeros((WORLD * 2, 3), np.float32))
dist.all_gather_into_tensor(big, T(inp(RANK, (2, 3))))
report("all_gather_into_tensor", big)
out = T(np.zeros(2, np.float32))
dist.reduce_scatter_tensor(out, T(inp(RANK, (2 * WORLD,))))
report("reduce_scatter_tensor", out)
t = x.clone()
dist.reduce(t, dst=1, op=dist.ReduceOp.SUM)
report("reduce", t)
gl = [T(np.zeros(3, np.float32)) for _ in range(WORLD)] if RANK == 0 else None
dist.gather(T(inp(RANK, (3,))), gl, dst=0)
if RANK == 0:
    report("gather", np.stack([g.cpu().numpy() for g in gl]))
t = T(np.zeros(3, np.float32))
dist.scatter(t, [T(inp(100 + i, (3,))) for i in range(WORLD)] if RANK == 0 else None, src=0)
report("scatter", t)
w = dist.all_reduce(x.clone(), async_op=True)
w.wait()
assert w.is_completed()
if RANK == 0:
    dist.send(T(inp(7, (2, 2))), dst=1)
elif RANK == 1:
    r = T(np.zeros((2, 2), np.float32))
    assert dist.recv(r, src=0) == 0
    report("recv", r)
objs = [{"lr": 0.5, "name": ("a", b"b"), "arr": np.arange(3)}] if RANK == 0 else [None]
dist.broadcast_object_list(objs, src=0)
report("object", [objs[0]["lr"], list(objs[0]["name"][:1]), objs[0]["arr"].tolist(), objs[0]["name"][1].decode()])
gathered = [None] * WORLD
dist.all_gather_object(gathered, {"rank": RANK})
report("all_gather_object", [g["rank"] for g in gathered])
dist.barrier()
dist.destroy_process_group()
"""


def reference(world):
    def inp(r, shape):
        return np.random.default_rng(SEED * 1000 + r).standard_normal(shape).astype(np.float32)

    def in_order(arrays, fn):
        acc = arrays[0].copy()
        for a in arrays[1:]:
            acc = fn(acc, a).astype(np.float32)
        return acc
    xs = [inp(r, (5, 3)) for r in range(world)]
    ref = {"all_reduce_SUM": in_order(xs, np.add), "all_reduce_MAX": in_order(xs, np.maximum),
           "all_reduce_MIN": in_order(xs, np.minimum), "all_reduce_PRODUCT": in_order(xs, np.multiply)}
    ref["all_reduce_AVG"] = ref["all_reduce_SUM"] / np.float32(world)
    ref["broadcast"] = inp(world - 1, (4,))
    ref["all_gather"] = np.stack([inp(r, (3,)) for r in range(world)])
    ref["all_gather_into_tensor"] = np.concatenate([inp(r, (2, 3)) for r in range(world)])
    chunks = in_order([inp(r, (2 * world,)) for r in range(world)], np.add)
    ref["reduce_scatter_tensor"] = [chunks[2 * r:2 * r + 2] for r in range(world)]
    ref["gather"] = np.stack([inp(r, (3,)) for r in range(world)])
    ref["scatter"] = [inp(100 + r, (3,)) for r in range(world)]
    ref["recv"] = inp(7, (2, 2))
    # a float64 check that the float32 sum is the sum (the bit-exact checks below compare with the same order)
    assert np.abs(ref["all_reduce_SUM"] - np.sum(np.array(xs, np.float64), 0)).max() < 1e-5
    return ref


def check(ranks, world):
    ref = reference(world)
    for rk in ranks:
        assert rk.rc == 0, f"seed {SEED}: {rk}"
        res = {k: np.asarray(v, np.float32) for k, v in rk.results.items() if "object" not in k}
        for name in ("all_reduce_SUM", "all_reduce_AVG", "all_reduce_MAX", "all_reduce_MIN", "all_reduce_PRODUCT",
                     "broadcast", "all_gather", "all_gather_into_tensor"):
            np.testing.assert_array_equal(res[name], ref[name], err_msg=f"{name} on rank {rk.rank}, seed {SEED}")
        np.testing.assert_array_equal(res["reduce_scatter_tensor"], ref["reduce_scatter_tensor"][rk.rank],
                                      err_msg=f"seed {SEED}")
        np.testing.assert_array_equal(res["scatter"], ref["scatter"][rk.rank], err_msg=f"seed {SEED}")
        if rk.rank == 1:
            np.testing.assert_array_equal(res["reduce"], ref["all_reduce_SUM"], err_msg=f"seed {SEED}")
            np.testing.assert_array_equal(res["recv"], ref["recv"], err_msg=f"seed {SEED}")
        if rk.rank == 0:
            np.testing.assert_array_equal(res["gather"], ref["gather"], err_msg=f"seed {SEED}")
        assert rk.results["object"] == [0.5, ["a"], [0, 1, 2], "b"]
        assert rk.results["all_gather_object"] == list(range(world))


@pytest.mark.parametrize("world", [2, 4])
def test_collectives_on_cpu_tensors_match_numpy(tmp_path, world):
    check(run_ranks(tmp_path, BODY, world, env={"TEST_SEED": str(SEED)}), world)


def test_collectives_on_the_simulated_gpu(tmp_path):
    env = {"TEST_SEED": str(SEED), "TEST_DEVICE": "cuda", "RAWDEV_DRIVER": "sim", "RAWDEV_SIM_DEVICES": "2"}
    ranks = run_ranks(tmp_path, BODY + "\n", 2, env=env,
                      init="dist.init_process_group('nccl', timeout=20)\nassert rawdev.cuda.current_device() == RANK\n")
    check(ranks, 2)


def test_a_rank_making_another_collective_raises_on_every_rank(tmp_path):
    body = """
t = rawdev.ones(4)
try:
    if RANK == 1:
        dist.broadcast(t, src=0)
    else:
        dist.all_reduce(t)
except RuntimeError as e:
    print("ERROR", e, flush=True)
"""
    for rk in run_ranks(tmp_path, body, 2):
        assert rk.rc == 0, rk
        assert ("collective mismatch at call #0 of group world: rank 0 called all_reduce(shape=(4,), dtype=float32, "
                "op=SUM); rank 1 called broadcast(shape=(4,), dtype=float32, src=0)") in rk.out, rk


def test_a_different_size_raises_on_every_rank(tmp_path):
    body = """
try:
    dist.all_reduce(rawdev.ones(3 + RANK))
except RuntimeError as e:
    print("ERROR", e, flush=True)
"""
    for rk in run_ranks(tmp_path, body, 2):
        assert "rank 0 called all_reduce(shape=(3,)" in rk.out and "rank 1 called all_reduce(shape=(4,)" in rk.out, rk


def test_a_rank_that_never_calls_times_out_naming_it(tmp_path):
    body = """
short = dist.new_group(timeout=1.5)       # the rendezvous keeps the long timeout: slow starts are not failures
if RANK != 2:
    try:
        dist.all_reduce(rawdev.ones(2), group=short)
    except RuntimeError as e:
        print("ERROR", e, flush=True)
else:
    import time
    time.sleep(3)     # alive but never calling: the others must not wait for it past their timeout
"""
    ranks = run_ranks(tmp_path, body, 3)
    for rk in ranks[:2]:
        assert "all_reduce(shape=(2,), dtype=float32, op=SUM) (call #0 of group g1) timed out after 1.5 s" in rk.out
        assert "rank(s) [2] never made this call" in rk.out, rk


def test_when_the_master_rank_dies_the_others_get_a_clear_error(tmp_path):
    body = """
import time
if RANK == 0:
    time.sleep(1.0)       # rank 1 is waiting in all_reduce by then
    os._exit(7)           # rank 0 serves the store: its death cuts the others off (os._exit skips its atexit)
try:
    dist.all_reduce(rawdev.ones(2))
except RuntimeError as e:
    print("ERROR", e, flush=True)
"""
    ranks = run_ranks(tmp_path, body, 2)
    assert ranks[0].rc == 7
    assert "ERROR TCPStore: lost the connection to the master at 127.0.0.1:" in ranks[1].out, ranks[1]
    assert "the master process (rank 0) has ended" in ranks[1].out
