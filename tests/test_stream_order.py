"""Stream ordering under the simulator's adversarial scheduler (RAWDEV_SIM_SCHEDULE=random:SEED): every order of
the streams' work the CUDA stream semantics allow is fair, so a missing dependency shows up as wrong data."""
import numpy as np
import pytest
import rawdev
from rawdev.runtime import reset_for_tests

SEEDS = range(8)


@pytest.fixture
def adversarial(monkeypatch):
    """Call with a seed: a power-on simulated GPU scheduling at random from that seed."""
    def power_on(seed):
        monkeypatch.setenv("RAWDEV_SIM_SCHEDULE", f"random:{seed}")
        reset_for_tests("sim")
    yield power_on
    monkeypatch.delenv("RAWDEV_SIM_SCHEDULE", raising=False)
    reset_for_tests("sim")


def test_non_blocking_copy_to_host_is_ordered_before_later_work(adversarial):
    for seed in SEEDS:
        adversarial(seed)
        a = np.arange(64, dtype=np.float32)
        x = rawdev.from_numpy(a.copy()).cuda()
        y = x.to("cpu", non_blocking=True)
        x.add_(1)                       # must not reach the bytes the copy reads
        rawdev.cuda.synchronize()
        np.testing.assert_array_equal(y.numpy(), a, err_msg=f"RAWDEV_SIM_SCHEDULE=random:{seed}")
        np.testing.assert_array_equal(x.cpu().numpy(), a + 1, err_msg=f"RAWDEV_SIM_SCHEDULE=random:{seed}")
