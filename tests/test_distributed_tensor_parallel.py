"""Tensor parallelism (rawdev.distributed.tensor.parallel) on 2 ranks: an MLP (Colwise then Rowwise, also with
sequence-sharded input and output), Embedding+Linear models (Rowwise and Colwise embeddings) and a LayerNorm under
SequenceParallel give the single-process model's outputs and parameter gradients, and AdamW / SGD steps on the
shards stay equal to the same steps on the whole model; plans by name and wildcard, state_dict, and the errors."""
import os

import numpy as np
import rawdev

from _dist_ranks import run_ranks

SEED = int(os.environ.get("RAWDEV_TEST_SEED", np.random.SeedSequence().entropy % 10000))
STEPS = 3

MODELS = """
from rawdev import nn
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.in_proj, self.relu, self.out_proj = nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3)   # 5: uneven shards
    def forward(self, x):
        return self.out_proj(self.relu(self.in_proj(x)))
class EmbLin(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.proj = nn.Embedding(7, 4), nn.Linear(4, 5)
    def forward(self, ids):
        return self.proj(self.emb(ids).tanh())
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(6)
    def forward(self, x):
        return self.norm(x)
def make(kind):
    rawdev.manual_seed(SEED)
    m = {"mlp": MLP, "seq": MLP, "emb_row": EmbLin, "emb_col": EmbLin, "norm": Norm}[kind]()
    with rawdev.no_grad():     # a LayerNorm's own init is ones/zeros: make it tell the ranks apart
        for p in m.parameters():
            p.add_(rawdev.randn(*p.shape) * 0.3)
    return m
def batch(kind, step):
    rng = np.random.default_rng(SEED * 100 + step)
    if kind.startswith("emb"):
        x = rawdev.tensor(rng.integers(0, 7, size=(3, 5)))
        return x, rawdev.tensor(rng.standard_normal((3, 5, 5)).astype(np.float32))
    shape = {"mlp": (5, 4), "seq": (4, 4), "norm": (2, 4, 6)}[kind]
    out = {"mlp": (5, 3), "seq": (4, 3), "norm": (2, 4, 6)}[kind]
    return (rawdev.tensor(rng.standard_normal(shape).astype(np.float32)),
            rawdev.tensor(rng.standard_normal(out).astype(np.float32)))
def optimizer(kind, params):
    if kind in ("emb_col", "norm"):
        return rawdev.optim.SGD(params, lr=0.1, momentum=0.9)
    return rawdev.optim.AdamW(params, lr=0.05, weight_decay=0.1)
"""

TRAIN = MODELS + """
from rawdev.distributed.device_mesh import init_device_mesh
from rawdev.distributed.tensor import DTensor, Replicate, Shard
from rawdev.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                parallelize_module)
dev = os.environ.get("TEST_DEVICE", "cpu")
mesh = init_device_mesh(dev, (WORLD,))
PLANS = {
    "mlp": {"in_proj": ColwiseParallel(), "out_proj": RowwiseParallel()},
    "seq": {"in_proj": ColwiseParallel(input_layouts=Shard(0)), "out_proj": RowwiseParallel(output_layouts=Shard(0))},
    "emb_row": {"emb": RowwiseParallel(input_layouts=Replicate()), "proj": ColwiseParallel(output_layouts=Replicate())},
    "emb_col": {"emb": ColwiseParallel(), "proj": RowwiseParallel()},
    "norm": {"norm": SequenceParallel()},
}
def my_part(t, dim):
    return t.chunk(WORLD, dim)[RANK]
for kind in os.environ["TEST_KINDS"].split(","):
    model = make(kind)
    if dev == "cuda":
        model = model.cuda()
    parallelize_module(model, mesh, PLANS[kind])
    names = [n for n, _ in model.named_parameters()]
    assert all(isinstance(p, DTensor) and isinstance(p, nn.Parameter) for p in model.parameters()), names
    opt = optimizer(kind, model.parameters())
    for step in range({STEPS}):
        x, y = batch(kind, step)
        x, y = x.to(dev), y.to(dev)
        if kind == "seq":                  # this rank's rows of the batch go in, its rows of the result come out
            x, y = my_part(x, 0), my_part(y, 0)
        if kind == "norm":
            x, y = my_part(x, 1), my_part(y, 1)
        opt.zero_grad()
        out = model(x)
        if isinstance(out, DTensor):       # SequenceParallel keeps a DTensor (use_local_output=False)
            report(f"{kind}_out_placements_{step}", str(out.placements))
            out = out.to_local()
        if kind in ("seq", "norm"):
            report(f"{kind}_out_{step}", rawdev.distributed.tensor.DTensor.from_local(
                out, mesh, [Shard(0 if kind == "seq" else 1)]).full_tensor())
        else:
            report(f"{kind}_out_{step}", out)
        loss = (out * y).sum()
        loss.backward()
        for n, p in model.named_parameters():
            report(f"{kind}_grad_{n}_{step}", p.grad.full_tensor())
            report(f"{kind}_placement_{n}", str(p.placements))
        opt.step()
    for n, p in model.named_parameters():
        report(f"{kind}_param_{n}", p.full_tensor())
    sd = model.state_dict()
    report(f"{kind}_sd", sorted((k, type(v).__name__, list(v.shape)) for k, v in sd.items()))
"""


def reference(kind):
    env = {"rawdev": rawdev, "np": np, "SEED": SEED}
    exec(MODELS, env)
    model = env["make"](kind)
    opt = env["optimizer"](kind, model.parameters())
    outs, grads = [], []
    for step in range(STEPS):
        x, y = env["batch"](kind, step)
        opt.zero_grad()
        out = model(x)
        outs.append(out.detach().numpy())
        # the loss is a sum over rows: on "seq"/"norm" each rank's part of it gives the whole's gradients
        (out * y).sum().backward()
        grads.append({n: p.grad.numpy().copy() for n, p in model.named_parameters()})
        opt.step()
    return outs, grads, {n: p.detach().numpy() for n, p in model.named_parameters()}


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


def check(ranks, kinds, tol=1e-5):
    for r in ranks:
        assert r.rc == 0, r
    for kind in kinds:
        outs, grads, params = reference(kind)
        for r in ranks:
            res = r.results
            for step in range(STEPS):
                assert rel(res[f"{kind}_out_{step}"], outs[step]) < tol, (kind, step, r.rank)
                for n, g in grads[step].items():
                    # seq/norm: each rank's loss covers its rows only; the summed gradient is the whole one
                    assert rel(res[f"{kind}_grad_{n}_{step}"], g) < tol, (kind, n, step, r.rank)
            for n, p in params.items():
                assert rel(res[f"{kind}_param_{n}"], p) < 1e-4, (kind, n, r.rank)
    return ranks


def test_tensor_parallel_models_equal_the_single_process_model(tmp_path):
    kinds = ["mlp", "seq", "emb_row", "emb_col", "norm"]
    ranks = run_ranks(tmp_path, TRAIN.replace("{STEPS}", str(STEPS)), 2,
                      env={"TEST_SEED": str(SEED), "TEST_KINDS": ",".join(kinds)})
    check(ranks, kinds)
    res = ranks[0].results
    assert res["mlp_placement_in_proj.weight"] == "(Shard(dim=0),)"
    assert res["mlp_placement_in_proj.bias"] == "(Shard(dim=0),)"
    assert res["mlp_placement_out_proj.weight"] == "(Shard(dim=1),)"
    assert res["mlp_placement_out_proj.bias"] == "(Replicate(),)"
    assert res["emb_row_placement_emb.weight"] == "(Shard(dim=0),)"
    assert res["emb_col_placement_emb.weight"] == "(Shard(dim=1),)"
    assert res["norm_placement_norm.weight"] == "(Replicate(),)"
    assert res["norm_out_placements_0"] == "(Shard(dim=1),)"
    assert res["mlp_sd"] == [["in_proj.bias", "DTensor", [5]], ["in_proj.weight", "DTensor", [5, 4]],
                             ["out_proj.bias", "DTensor", [3]],
                             ["out_proj.weight", "DTensor", [3, 5]]]


def test_tensor_parallel_mlp_on_simulated_gpus(tmp_path):
    env = {"TEST_SEED": str(SEED), "TEST_KINDS": "mlp", "TEST_DEVICE": "cuda", "RAWDEV_DRIVER": "sim",
           "RAWDEV_SIM_DEVICES": "2"}
    ranks = run_ranks(tmp_path, TRAIN.replace("{STEPS}", "2"), 2, env=env,
                      init="dist.init_process_group('nccl', timeout=20)\n")
    for r in ranks:
        assert r.rc == 0, r
    outs, grads, _ = reference("mlp")
    for r in ranks:
        for step in range(2):
            assert rel(r.results[f"mlp_out_{step}"], outs[step]) < 1e-5
            for n, g in grads[step].items():
                assert rel(r.results[f"mlp_grad_{n}_{step}"], g) < 1e-5, n


PLANS = """
import warnings
from rawdev import nn
from rawdev.distributed.device_mesh import init_device_mesh
from rawdev.distributed.tensor import DTensor, Replicate, Shard
from rawdev.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, PrepareModuleOutput,
                                                RowwiseParallel, SequenceParallel, parallelize_module)
mesh = init_device_mesh("cpu", (WORLD,))
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(4, 6), nn.Linear(6, 4)
    def forward(self, x):
        return self.down(self.up(x).relu())
rawdev.manual_seed(SEED)
net = nn.Sequential(Block(), Block(), nn.LayerNorm(4))
ref = [p.detach().clone() for p in net.parameters()]
x = rawdev.tensor(inp(0, (4, 4)))       # even rows: from_local takes a shard for 1/WORLD of the whole
want = net(x)
# wildcards in the path; the blocks' input arrives sequence-sharded and is gathered by PrepareModuleInput
parallelize_module(net, mesh, {"*.up": ColwiseParallel(), "*.down": RowwiseParallel(),
                               "0": PrepareModuleInput(input_layouts=(Shard(0),), desired_input_layouts=(Replicate(),),
                                                       use_local_output=True),
                               "2": PrepareModuleOutput(output_layouts=(Replicate(),),
                                                        desired_output_layouts=(Shard(0),))})
report("placements", [str(getattr(p, "placements", None)) for p in net.parameters()])  # the norm: untouched
out = net(x.chunk(WORLD, 0)[RANK])
report("out", out)
report("err_out", float((out - want.chunk(WORLD, 0)[RANK]).abs().max()))
errors = []
for f in (lambda: parallelize_module(nn.Sequential(nn.Linear(2, 2)), mesh, {"1": ColwiseParallel()}),
          lambda: parallelize_module(nn.Sequential(nn.Linear(2, 2)), mesh, {"0.nope": ColwiseParallel()}),
          lambda: parallelize_module(nn.LayerNorm(4), mesh, ColwiseParallel()),
          lambda: parallelize_module(nn.Conv2d(1, 1, 1), mesh, RowwiseParallel()),
          lambda: net[0].up.weight.cumsum(0),
          lambda: rawdev.nn.functional.linear(x, net[0].up.weight)):
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            f()
        errors.append("; ".join(f"{w.category.__name__}: {w.message}" for w in seen) or "no error")
    except (ValueError, NotImplementedError) as e:
        errors.append(f"{type(e).__name__}: {e}")
report("errors", errors)
m = nn.Linear(4, 2)
sd = {k: v.clone() for k, v in m.state_dict().items()}
parallelize_module(m, mesh, ColwiseParallel())
with rawdev.no_grad():
    m.weight.to_local().zero_()
m.load_state_dict(sd)          # a full tensor loads into each rank's shard
report("loaded", float((m.weight.full_tensor() - sd["weight"]).abs().max()))
report("repr", repr(ColwiseParallel()) + repr(SequenceParallel()))
m(rawdev.ones(3, 4)).sum().backward()
m.zero_grad(set_to_none=False)
report("zeroed", [float(p.grad.full_tensor().abs().sum()) for p in m.parameters()])
opt = rawdev.optim.Adam(m.parameters())
m(rawdev.ones(3, 4)).sum().backward()
opt.step()
opt2 = rawdev.optim.Adam(m.parameters())
opt2.load_state_dict(opt.state_dict())        # the state of a sharded parameter is its shard's
report("opt_state", [list(v["exp_avg"].shape) for v in opt2.state_dict()["state"].values()])
# distribute_module: partition_fn shards the weight's rows, the rest (the bias) is replicated; the hooks run
from rawdev.distributed.tensor import distribute_module, distribute_tensor
lin = nn.Linear(4, 2)
def rows(name, mod, mesh):
    if isinstance(mod, nn.Linear):
        mod.weight = nn.Parameter(distribute_tensor(mod.weight, mesh, [Shard(0)]))
seen = []
distribute_module(lin, mesh, rows, input_fn=lambda mod, inputs, mesh: seen.append("in"),
                  output_fn=lambda mod, out, mesh: seen.append("out"))
report("dm", [str(lin.weight.placements), str(lin.bias.placements), list(lin.weight.to_local().shape),
              isinstance(lin.weight, nn.Parameter), lin.weight.requires_grad])
w_local = lin.weight.to_local()
lin.forward = lambda x: x @ w_local.t()        # a module of one's own computing on the local shard
lin(rawdev.ones(1, 4))
report("hooks", seen)
# clip_grad_norm_ over DTensor parameters: the norm of the whole gradients, and the same clipped values
clip = []
for norm_type in (2.0, float("inf")):
    rawdev.manual_seed(SEED)
    ref = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3), nn.LayerNorm(3))
    tpm = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3), nn.LayerNorm(3))
    tpm.load_state_dict(ref.state_dict())
    parallelize_module(tpm, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})   # the norm stays plain
    xin = rawdev.tensor(inp(7, (6, 4)))
    tgt = rawdev.tensor(inp(8, (6, 3)))
    (ref(xin) * tgt).sum().backward()
    (tpm(xin) * tgt).sum().backward()
    want = nn.utils.clip_grad_norm_(ref.parameters(), 0.5, norm_type)
    got = nn.utils.clip_grad_norm_(tpm.parameters(), 0.5, norm_type)
    clip.append([float(got.full_tensor()), float(want)])
    for p, q in zip(tpm.parameters(), ref.parameters()):
        g = p.grad.full_tensor() if isinstance(p, DTensor) else p.grad
        clip.append([float((g - q.grad).abs().max()), float(q.grad.abs().max())])
report("clip", clip)
"""


def test_plans_by_path_and_wildcard_prepare_inputs_and_the_errors(tmp_path):
    ranks = run_ranks(tmp_path, PLANS, 2, env={"TEST_SEED": str(SEED)})
    for r in ranks:
        assert r.rc == 0, r
        res = r.results
        assert res["placements"] == ["(Shard(dim=0),)", "(Shard(dim=0),)", "(Shard(dim=1),)", "(Replicate(),)"] * 2 \
            + ["None"] * 2
        assert res["err_out"] < 1e-5
        errs = res["errors"]
        # as PyTorch: a plan key that names no submodule is skipped with a warning
        assert errs[0] == ("UserWarning: Parallelize plan key '1' could not be resolved: no submodule matching token "
                           "'1' in module Sequential, skipping this plan entry.")
        assert errs[1].startswith("UserWarning: Parallelize plan key '0.nope' could not be resolved")
        assert errs[2] == "NotImplementedError: ColwiseParallel currently only support nn.Linear and nn.Embedding!"
        assert errs[3] == "NotImplementedError: RowwiseParallel currently only support nn.Linear and nn.Embedding!"
        assert errs[4].startswith("NotImplementedError: Tensor.cumsum: rawdev's DTensor has no sharding rule")
        assert "Shard(dim=0)" in errs[4]
        assert errs[5].startswith("NotImplementedError: linear: rawdev's DTensor has no sharding rule")
        assert res["loaded"] == 0.0
        assert res["zeroed"] == [0.0, 0.0]
        assert res["opt_state"] == [[1, 4], [1]]
        assert res["dm"] == ["(Shard(dim=0),)", "(Replicate(),)", [1, 4], True, True]
        assert res["hooks"] == ["in", "out"]
        clip = res["clip"]
        assert len(clip) == 2 * 7
        for i in (0, 7):
            assert abs(clip[i][0] - clip[i][1]) < 1e-5 * clip[i][1]       # the total norm, 2 and inf
        for err, scale in clip[1:7] + clip[8:]:
            assert err <= 1e-5 * scale + 1e-7
        assert res["repr"] == ("ColwiseParallel(input_layouts=(Replicate(),), output_layouts=(Shard(dim=-1),), "
                               "use_local_output=True)SequenceParallel(sequence_dim=1, use_local_output=False)")
