"""Subgroups (new_group), async Works, DDP's buffer broadcast, and the object wire form (tagged JSON, no pickle)."""
import numpy as np
import pytest
import rawdev
from rawdev.distributed import objects

from _dist_ranks import run_ranks

BODY = """
odd = dist.new_group([1, 3])
t = rawdev.ones(2) * (RANK + 1)
if odd != dist.GroupMember.NON_GROUP_MEMBER:
    report("odd_rank", dist.get_rank(odd))
    dist.all_reduce(t, group=odd)
    b = rawdev.ones(1) * RANK
    dist.broadcast(b, src=3, group=odd)
    report("odd_bcast", b)
else:
    assert dist.get_rank(odd) == -1
report("t", t)
works = [dist.all_reduce(rawdev.ones(3) * RANK, async_op=True) for _ in range(3)]
for w in works:
    w.wait()
    assert w.is_completed() and w.is_success()
bn = rawdev.nn.BatchNorm1d(2)
from rawdev import nn
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(2, 2), bn))
x = rawdev.tensor(inp(RANK, (6, 2)))
model(x)
report("running_mean_after_1", bn.running_mean)   # each rank's own batch statistics
model(x)                                          # rank 0's buffers were broadcast first
report("running_mean_after_2", bn.running_mean)
from rawdev.utils.data import DistributedSampler
report("sampler", list(DistributedSampler(range(10), shuffle=False)))   # num_replicas and rank from the group
dist.destroy_process_group()
"""


def test_subgroups_async_work_and_buffer_broadcast(tmp_path):
    ranks = run_ranks(tmp_path, BODY, 4)
    for rk in ranks:
        assert rk.rc == 0, rk
    assert [rk.results.get("odd_rank") for rk in ranks] == [None, 0, None, 1]
    assert [rk.results["t"][0] for rk in ranks] == [1.0, 6.0, 3.0, 6.0]
    assert ranks[1].results["odd_bcast"] == [3.0]
    assert [rk.results["sampler"] for rk in ranks] == [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]
    first = [np.asarray(rk.results["running_mean_after_1"]) for rk in ranks]
    second = [np.asarray(rk.results["running_mean_after_2"]) for rk in ranks]
    assert np.abs(first[0] - first[1]).max() > 1e-4                   # different batches
    for r in range(4):
        # running = 0.9 * rank 0's running + 0.1 * this rank's batch mean = first[0]*0.9 + first[r]
        np.testing.assert_allclose(second[r], 0.9 * first[0] + first[r], rtol=1e-5, atol=1e-6)


def test_objects_round_trip_plain_data():
    obj = {"a": [1, 2.5, None, True], ("t", 1): (b"\x00raw", "text"), 3: {"nan": float("nan"), "inf": float("inf")},
           "arr": np.arange(6, dtype=np.int16).reshape(2, 3), "scalar": np.float32(1.5)}
    back = objects.decode(objects.encode(obj))
    assert back["a"] == [1, 2.5, None, True] and back[("t", 1)] == (b"\x00raw", "text")
    assert np.isnan(back[3]["nan"]) and back[3]["inf"] == float("inf")
    assert back["arr"].dtype == np.int16 and back["arr"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["scalar"] == 1.5


def test_objects_refuse_what_is_not_data():
    with pytest.raises(TypeError, match=r"object at obj\['w'\] of type rawdev.*Tensor cannot be sent.*no pickle"):
        objects.encode({"w": rawdev.ones(2)})
    with pytest.raises(TypeError, match=r"obj\[1\] of type builtins.function"):
        objects.encode([1, lambda: 0])


def test_torchrun_scripts_record_decorator_runs_main():
    from rawdev.distributed.elastic.multiprocessing.errors import record

    @record
    def main(x):
        return x + 1
    assert main(1) == 2 and main.__name__ == "main"
    with pytest.raises(ValueError, match="boom"):
        record(lambda: (_ for _ in ()).throw(ValueError("boom")))()
