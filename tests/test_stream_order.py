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


def _side():
    s = rawdev.cuda.Stream()
    assert s != rawdev.cuda.current_stream()
    return s


def test_a_stream_block_routes_work_to_its_stream(adversarial):
    adversarial(0)
    s = _side()
    main = rawdev.cuda.current_stream()
    assert rawdev.cuda.default_stream() == main
    x = rawdev.ones(16, device="cuda")
    rawdev.cuda.synchronize()
    with rawdev.cuda.stream(s):
        assert rawdev.cuda.current_stream() == s and rawdev.cuda.default_stream() == main
        y = x * 3                     # launched on s; its output allocated in s's order
        assert y._buf.block.stream is s._rt
        assert not s.query()          # queued on s and not run: the lazy scheduler runs nothing for a query
        assert main.query()           # nothing went to the default stream
    assert rawdev.cuda.current_stream() == main
    s.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), np.full(16, 3.0, np.float32))


def _producer_consumer(wait):
    """Producer on side stream s fills p; the default stream consumes it (with or without waiting for s)."""
    s = _side()
    a = np.arange(256, dtype=np.float32)
    x = rawdev.from_numpy(a).cuda()
    rawdev.cuda.synchronize()
    with rawdev.cuda.stream(s):
        p = x * 2 + 1
    if wait:
        rawdev.cuda.current_stream().wait_stream(s)
    q = p + 5
    p.record_stream(rawdev.cuda.current_stream())
    rawdev.cuda.synchronize()
    return q.cpu().numpy(), a * 2 + 6


def test_producer_consumer_across_streams_needs_wait_stream(adversarial):
    wrong = 0
    for seed in SEEDS:
        adversarial(seed)
        got, ref = _producer_consumer(wait=True)
        np.testing.assert_array_equal(got, ref, err_msg=f"RAWDEV_SIM_SCHEDULE=random:{seed}")
        adversarial(seed)
        got, ref = _producer_consumer(wait=False)
        wrong += not np.array_equal(got, ref)
    assert wrong > 0   # without wait_stream some order the streams allow reads p before s wrote it


def _reuse_after_free(record):
    """A block allocated on the default stream and read by a long chain on side stream s is freed; the next
    allocation of the same size on the default stream overwrites it. record: whether record_stream(s) was called."""
    s = _side()
    a = np.arange(1024, dtype=np.float32)
    x = rawdev.from_numpy(a).cuda()
    rawdev.cuda.synchronize()
    s.wait_stream(rawdev.cuda.current_stream())
    with rawdev.cuda.stream(s):
        out = x + 0
        for _ in range(3):
            out = out + x             # s keeps reading x
    if record:
        x.record_stream(s)
    ptr = x._buf.ptr
    del x
    rawdev.cuda.current_stream()      # a safe point: the queued free is issued at the next allocation
    z = rawdev.full((1024,), -100.0, device="cuda")
    reused = z._buf.ptr == ptr
    rawdev.cuda.synchronize()
    return out.cpu().numpy(), a * 4, reused


def test_record_stream_keeps_a_block_from_reuse_until_the_stream_is_done(adversarial):
    bad = 0
    for seed in SEEDS:
        adversarial(seed)
        got, ref, reused = _reuse_after_free(record=True)
        # the block may be handed out again on the default stream, but only in stream order after s's reads
        np.testing.assert_array_equal(got, ref, err_msg=f"RAWDEV_SIM_SCHEDULE=random:{seed}")
        adversarial(seed)
        got, ref, reused = _reuse_after_free(record=False)
        bad += reused and not np.array_equal(got, ref)
    assert bad > 0   # without record_stream the default stream overwrites the block while s may still read it
