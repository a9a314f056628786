"""DeviceMesh / init_device_mesh on 4 ranks laid out 2x2 ("dp", "tp"): each rank's coordinate, one process group
per mesh dimension holding the ranks that differ only along it (checked by an all_reduce over it), sub-meshes by
name, a mesh given as a transposed array, DTensors placed on both dimensions, tensor parallelism on the "tp" slice,
and the errors PyTorch gives."""
import os

import numpy as np
import pytest

from _dist_ranks import run_ranks

SEED = int(os.environ.get("RAWDEV_TEST_SEED", np.random.SeedSequence().entropy % 10000))

BODY = """
import rawdev
from rawdev.distributed.device_mesh import DeviceMesh, init_device_mesh
mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
report("shape", list(mesh.shape)); report("ndim", mesh.ndim); report("size", mesh.size())
report("coord", mesh.get_coordinate())
report("local", [mesh.get_local_rank("dp"), mesh.get_local_rank("tp"), mesh.get_local_rank(1)])
report("mesh", mesh.mesh.tolist()); report("names", list(mesh.mesh_dim_names)); report("type", mesh.device_type)
for name in ("dp", "tp"):
    g = mesh.get_group(name)
    report(f"ranks_{name}", dist.get_process_group_ranks(g))
    t = rawdev.tensor([float(RANK + 1)])
    dist.all_reduce(t, group=g)                  # sums exactly the ranks of this rank's line along `name`
    report(f"sum_{name}", t.item())
tp = mesh["tp"]
report("tp_mesh", tp.mesh.tolist()); report("tp_group", dist.get_process_group_ranks(tp.get_group()))
report("tp_local", tp.get_local_rank()); report("tp_size", tp.size())
report("same", mesh["dp", "tp"] is mesh)
swapped = mesh["tp", "dp"]
report("swapped", swapped.mesh.tolist()); report("swapped_group0", dist.get_process_group_ranks(swapped.get_group(0)))
assert dist.DeviceMesh is DeviceMesh
from rawdev.distributed._tensor.device_mesh import init_device_mesh as old
assert old is init_device_mesh
cols = DeviceMesh("cpu", [[0, 2], [1, 3]], mesh_dim_names=("a", "b"))   # every rank builds it, in the same order
report("cols_b", dist.get_process_group_ranks(cols.get_group("b")))
with mesh["tp"] as m:
    from rawdev.distributed.device_mesh import _current_mesh
    assert _current_mesh() is m
errors = []
for f in (lambda: mesh.get_group(), lambda: mesh["pp"], lambda: tp["dp"],
          lambda: init_device_mesh("cpu", (3,)), lambda: init_device_mesh("cpu", (2, 2), mesh_dim_names=("a",)),
          lambda: init_device_mesh("cpu", (2, 2), mesh_dim_names=("a", "a"))):
    try:
        f()
    except (RuntimeError, KeyError) as e:
        errors.append(f"{type(e).__name__}: {e}")
report("errors", errors)
# DTensors on the 2-d mesh: a placement per mesh dimension
from rawdev import nn
from rawdev.distributed.tensor import Replicate, Shard, distribute_tensor
x = rawdev.tensor(inp(0, (4, 6)))
d = distribute_tensor(x, mesh, [Shard(0), Shard(1)])
report("local_2d", list(d.to_local().shape))
errs2 = [float((d.full_tensor() - x).abs().max())]
e = distribute_tensor(x, mesh, [Replicate(), Shard(0)]).redistribute(mesh, [Shard(1), Replicate()])
errs2.append(float((e.full_tensor() - x).abs().max()))
errs2.append(float((e.to_local() - x.chunk(2, 1)[RANK // 2]).abs().max()))
# tensor parallelism on the "tp" slice (data parallel copies along "dp"): the single-process model's values
from rawdev.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
rawdev.manual_seed(SEED)
ref = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
tpm = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
tpm.load_state_dict(ref.state_dict())
parallelize_module(tpm, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
xin = rawdev.tensor(inp(5 + RANK // 2, (5, 4)))        # one batch per data-parallel coordinate
want, got = ref(xin), tpm(xin)
want.sum().backward(); got.sum().backward()
errs2.append(float((got - want).abs().max() / want.abs().max()))
for (n, p), q in zip(tpm.named_parameters(), ref.parameters()):
    errs2.append(float((p.grad.full_tensor() - q.grad).abs().max() / q.grad.abs().max()))
report("errs_2d", errs2)
try:
    parallelize_module(nn.Linear(2, 2), mesh, ColwiseParallel())
except ValueError as e:
    report("tp_2d", str(e))
"""


def test_a_2x2_mesh_has_a_group_per_dimension_and_named_sub_meshes(tmp_path):
    ranks = run_ranks(tmp_path, BODY, 4, env={"TEST_SEED": str(SEED)})
    for r in ranks:
        assert r.rc == 0, r
    for r in ranks:
        res, dp, tp = r.results, r.rank // 2, r.rank % 2
        assert res["shape"] == [2, 2] and res["ndim"] == 2 and res["size"] == 4 and res["type"] == "cpu"
        assert res["mesh"] == [[0, 1], [2, 3]] and res["names"] == ["dp", "tp"]
        assert res["coord"] == [dp, tp] and res["local"] == [dp, tp, tp]
        assert res["ranks_dp"] == [tp, tp + 2] and res["ranks_tp"] == [2 * dp, 2 * dp + 1]
        assert res["sum_dp"] == (tp + 1) + (tp + 3)
        assert res["sum_tp"] == (2 * dp + 1) + (2 * dp + 2)
        assert res["tp_mesh"] == [2 * dp, 2 * dp + 1] and res["tp_group"] == res["ranks_tp"]
        assert res["tp_local"] == tp and res["tp_size"] == 2 and res["same"] is True
        assert res["swapped"] == [[0, 2], [1, 3]] and res["swapped_group0"] == res["ranks_tp"]
        assert res["cols_b"] == [r.rank % 2, r.rank % 2 + 2]
        assert res["local_2d"] == [2, 3]
        assert max(res["errs_2d"]) < 1e-5, res["errs_2d"]
        assert len(res["errs_2d"]) == 3 + 1 + 4
        assert res["tp_2d"].startswith("Tensor Parallel only accepts a 1D DeviceMesh, but found 2D!")
        errs = res["errors"]
        assert len(errs) == 6, errs
        assert "mesh_dim` needs to be specified when device_mesh.ndim > 1" in errs[0]
        assert errs[1].startswith("KeyError") and "Invalid mesh_dim_names" in errs[1]
        assert errs[2].startswith("KeyError")
        assert "world size is 4" in errs[3]
        assert "should have same length" in errs[4]
        assert "Each mesh_dim_name must be unique" in errs[5]


@pytest.mark.parametrize("world", [2])
def test_a_1d_mesh_needs_no_dimension_argument(tmp_path, world):
    body = """
from rawdev.distributed.device_mesh import init_device_mesh
mesh = init_device_mesh("cpu", (WORLD,))
report("group", dist.get_process_group_ranks(mesh.get_group()))
report("local", mesh.get_local_rank()); report("repr", repr(mesh))
"""
    ranks = run_ranks(tmp_path, body, world)
    for r in ranks:
        assert r.rc == 0, r
        assert r.results["group"] == list(range(world)) and r.results["local"] == r.rank
        assert r.results["repr"] == f"DeviceMesh('cpu', {list(range(world))})"
