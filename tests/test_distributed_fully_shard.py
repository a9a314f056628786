"""FSDP2's fully_shard over 2 ranks (separate processes, cpu/gloo): blocks then root sharded as Shard(0) DTensor
parameters train a few AdamW steps like one process on the concatenated batch; full_tensor() of the shards is the
single-process parameters; gradients are averaged and clip_grad_norm_ sees their global norm; state_dict
(DTensors) round-trips; bf16 MixedPrecisionPolicy keeps float32 shards; reshard_after_forward False/True agree;
misuse raises."""

import numpy as np
import pytest
import rawdev
from rawdev import nn, optim

from _dist_ranks import SHARDED_NET, run_ranks

# the inputs' seed, from the run's base seed (tests/conftest.py): `--rawdev-seed` replays it
SEED = int(np.random.default_rng().integers(10000))
STEPS = 3

MODEL = SHARDED_NET + """def loss(model, step):
    xs, ys = zip(*[batch(step, r) for r in RANKS])
    out = model(rawdev.tensor(np.concatenate(xs)))
    return nn.functional.mse_loss(out.float(), rawdev.tensor(np.concatenate(ys)))
def train(model, steps):
    opt = optim.AdamW(model.parameters(), lr=0.01)
    for step in range(steps):
        opt.zero_grad()
        loss(model, step).backward()
        opt.step()
"""

BODY = "from rawdev import nn, optim\n" + MODEL + """
from rawdev.distributed.fsdp import (fully_shard, FSDPModule, MixedPrecisionPolicy, CPUOffloadPolicy,
                                     OffloadPolicy)
from rawdev.distributed.tensor import DTensor, Shard
RANKS, STEPS = [RANK], 3
def shard(model, **kw):
    for b in model.blocks:
        fully_shard(b, **kw)
    fully_shard(model, **kw)
    return model
def full(model):
    return {n: p.full_tensor().detach().float().numpy().ravel().tolist() for n, p in model.named_parameters()}
def all_shard0(ts):
    return all(isinstance(t, DTensor) and t.placements == (Shard(0),) for t in ts)

m = shard(make(0))
report("classes", [isinstance(m, FSDPModule), isinstance(m, Net), isinstance(m.blocks[1], FSDPModule),
                   isinstance(m.blocks[1], Block), type(m).__name__, isinstance(m.emb, FSDPModule)])
report("params_dtensor", all_shard0(m.parameters()) and
       all(isinstance(p, nn.Parameter) for p in m.parameters()))
report("local_rows", m.head.weight.to_local().shape[0])
report("init", full(m))
loss(m, 0).backward()
report("grads", {n: p.grad.full_tensor().numpy().ravel().tolist() for n, p in m.named_parameters()})
norm = nn.utils.clip_grad_norm_(m.parameters(), 1e9)
report("grad_norm", float(norm.full_tensor() if isinstance(norm, DTensor) else norm))
train(m, STEPS)
report("grads_dtensor", all_shard0(p.grad for p in m.parameters()))
report("trained", full(m))
sd = m.state_dict()
report("sd_dtensor", all_shard0(sd.values()) and sorted(sd) == sorted(n for n, _ in m.named_parameters()))
m2 = shard(make(1))
m2.load_state_dict(sd)
report("reloaded", full(m2))

m3 = shard(make(0), reshard_after_forward=False)
train(m3, STEPS)
report("no_reshard", full(m3))
report("no_reshard_after_backward", all_shard0(m3.parameters()))

m4 = shard(make(0), mp_policy=MixedPrecisionPolicy(param_dtype=rawdev.bfloat16, reduce_dtype=rawdev.float32))
train(m4, STEPS)
report("bf16_shard_dtypes", sorted({str(p.to_local().dtype) for p in m4.parameters()} |
                                   {str(p.grad.to_local().dtype) for p in m4.parameters()}))
report("bf16_out_dtype", str(m4(rawdev.tensor(batch(0, RANK)[0])).dtype))
report("bf16", full(m4))

errs = []
for call in (lambda: fully_shard(m), lambda: fully_shard(make(0), offload_policy=CPUOffloadPolicy()),
             lambda: fully_shard(make(0), reshard_after_forward=1),
             lambda: fully_shard(make(0), shard_placement_fn=lambda p: Shard(1))):
    try:
        call()
        errs.append(None)
    except (ValueError, NotImplementedError) as e:
        errs.append(type(e).__name__)
report("errors", errs)
"""


def _inp(r, shape):
    return np.random.default_rng(SEED * 1000 + r).standard_normal(shape).astype(np.float32)


def _reference(seed, ranks):
    ns = {"rawdev": rawdev, "nn": nn, "optim": optim, "np": np, "inp": _inp, "RANKS": ranks}
    exec(MODEL, ns)
    model = ns["make"](seed)
    init = {n: p.detach().numpy().ravel().tolist() for n, p in model.named_parameters()}
    ns["loss"](model, 0).backward()
    grads = {n: p.grad.numpy().ravel().tolist() for n, p in model.named_parameters()}
    ns["train"](model, STEPS)
    return init, grads, {n: p.detach().numpy().ravel().tolist() for n, p in model.named_parameters()}


def _close(got, want, rtol):
    assert sorted(got) == sorted(want)
    for k in want:
        g, w = np.asarray(got[k], np.float64), np.asarray(want[k], np.float64)
        err = np.abs(g - w).max() / max(np.abs(w).max(), 1e-12)
        assert err <= rtol, (k, err)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    rs = run_ranks(tmp_path_factory.mktemp("fsdp2"), BODY, env={"TEST_SEED": str(SEED)})
    for r in rs:
        assert r.rc == 0, r
    return [r.results for r in rs]


def test_fully_shard_swaps_class_and_shards_params_as_dtensors(ranks):
    for res in ranks:
        assert res["classes"] == [True, True, True, True, "FSDPNet", False]
        assert res["params_dtensor"] and res["grads_dtensor"] and res["sd_dtensor"]
    assert [res["local_rows"] for res in ranks] == [2, 1]


def test_fully_shard_trains_like_one_process_on_the_concatenated_batch(ranks):
    init, grads, trained = _reference(0, [0, 1])
    for res in ranks:
        _close(res["init"], init, 1e-6)
        _close(res["grads"], grads, 1e-5)      # averaged over the ranks (AdamW alone would hide a sum)
        want = np.sqrt(sum(np.sum(np.square(np.asarray(g, np.float64))) for g in grads.values()))
        assert abs(res["grad_norm"] - want) <= 1e-5 * want       # clip_grad_norm_ over the DTensor grads
        _close(res["trained"], trained, 1e-5)


def test_state_dict_round_trip_and_reshard_after_forward_false(ranks):
    for res in ranks:
        _close(res["reloaded"], res["trained"], 0.0)
        _close(res["no_reshard"], res["trained"], 1e-6)
        assert res["no_reshard_after_backward"]


def test_bf16_mixed_precision_keeps_float32_shards(ranks):
    _, _, trained = _reference(0, [0, 1])
    for res in ranks:
        assert res["bf16_shard_dtypes"] == ["rawdev.float32"]
        assert res["bf16_out_dtype"] == "rawdev.bfloat16"
        # bf16 compute: AdamW normalizes each step, so a tiny bf16-rounded gradient can move its parameter by up
        # to 2 * lr a step; the float32 shards still follow the float32 run closely
        _close(res["bf16"], trained, 0.25)


def test_misuse_raises(ranks):
    for res in ranks:
        assert res["errors"] == ["ValueError", "NotImplementedError", "ValueError", "NotImplementedError"]
