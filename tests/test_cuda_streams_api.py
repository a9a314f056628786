"""torch.cuda.Event / Stream / stream() / current_stream() / get_device_properties as programs use them:
timing a kernel between two events, ordering a side stream, and PyTorch's errors."""
import warnings

import pytest
import rawdev


def test_event_timing_brackets_the_queued_work(driver):
    x = rawdev.randn(64, 64).cuda()
    start, end = rawdev.cuda.Event(enable_timing=True), rawdev.cuda.Event(enable_timing=True)
    assert start.query()                                   # unrecorded: nothing to wait for
    start.record()
    y = x @ x
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    assert y.shape == (64, 64)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        rawdev.cuda.Event().elapsed_time(rawdev.cuda.Event())
    with pytest.raises(RuntimeError, match="must be recorded"):
        rawdev.cuda.Event(enable_timing=True).elapsed_time(end)


def test_streams_order_work_and_report_state(driver):
    cur = rawdev.cuda.current_stream()
    assert cur == rawdev.cuda.default_stream() and cur.cuda_stream != 0
    side = rawdev.cuda.Stream()
    assert side != cur and side.device == rawdev.device("cuda", 0)
    x = rawdev.ones(8).cuda()
    side.wait_stream(cur)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with rawdev.cuda.stream(side):
            y = x * 3
    cur.wait_stream(side)
    ev = side.record_event()
    ev.wait(cur)
    side.synchronize()
    assert side.query() and y.sum().item() == 24.0
    with pytest.raises(NotImplementedError, match="between processes"):
        rawdev.cuda.Event(interprocess=True)


def test_device_properties(driver):
    p = rawdev.cuda.get_device_properties(0)
    assert p.name == rawdev.cuda.get_device_name(0)
    assert (p.major, p.minor) == rawdev.cuda.get_device_capability(0)
    assert p.total_memory > 0 and p.multi_processor_count > 0
    assert rawdev.cuda.is_bf16_supported()
