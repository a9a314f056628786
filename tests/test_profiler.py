"""rawdev.profiler: the rows are the driver calls rawdev made (kernels by name), counted as rawdev.trace counts
them, with device times from event pairs; record_function ranges; PyTorch's schedule; the Chrome trace."""
import json

import numpy as np
import pytest
import rawdev
from rawdev.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def _model():
    rawdev.manual_seed(0)
    return rawdev.nn.Sequential(rawdev.nn.Linear(16, 32), rawdev.nn.ReLU(), rawdev.nn.Linear(32, 4)).cuda()


def test_rows_count_the_launches_and_time_them_on_the_device(driver, tmp_path):
    model = _model()
    x = rawdev.randn(8, 16, device="cuda")
    with rawdev.trace() as tr:
        want = model(x).cpu()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("model_inference"):
            got = model(x).cpu()
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())   # profiling changes no result
    rows = {r.key: r for r in prof.key_averages()}
    launched = [c.owner for c in tr.calls if c.fn == "cuLaunchKernel"]
    for name in set(launched):
        assert rows[name].count == launched.count(name) and rows[name].kind == "kernel"
        assert rows[name].cuda_time_total > 0 and rows[name].self_cuda_time_total == rows[name].cuda_time_total
    assert rows["cuMemcpyDtoHAsync"].count >= 1 and rows["cuMemcpyDtoHAsync"].cuda_time_total > 0
    rng = rows["model_inference"]
    assert rng.count == 1 and rng.self_cuda_time_total == 0
    inner = sum(r.cuda_time_total for k, r in rows.items() if k != "model_inference")
    assert abs(rng.cuda_time_total - inner) <= 1e-6 * inner
    assert rng.cpu_time_total >= rng.self_cpu_time_total > 0
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=5)
    lines = table.splitlines()
    assert "Self CUDA %" in lines[1] and lines[3].startswith("model_inference") and len(lines) == 3 + 5 + 3
    with pytest.raises(AttributeError, match="no attribute 'bogus'"):
        prof.key_averages().table(sort_by="bogus")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    assert {e["name"] for e in events if e["pid"] == "cuda"} >= set(launched)


def test_cpu_only_profiling_puts_no_events_on_the_streams(driver):
    model = _model()
    x = rawdev.randn(8, 16, device="cuda")
    with rawdev.trace() as tr:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model(x)
    assert tr.count("cuEventRecord") == 0 and tr.count("cuEventCreate") == 0
    rows = prof.key_averages()
    assert rows and all(r.cuda_time_total == 0 for r in rows)


def test_schedule_actions_match_pytorchs_and_drive_on_trace_ready(driver, tmp_path):
    s = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=1)
    assert [s(i) for i in range(7)] == [ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP,
                                        ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
                                        ProfilerAction.NONE, ProfilerAction.NONE]
    model = _model()
    x = rawdev.randn(8, 16, device="cuda")
    seen = []

    def ready(p):
        seen.append(sum(r.count for r in p.key_averages() if r.key == "step"))

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for _ in range(9):
            with record_function("step"):
                model(x)
            prof.step()
    assert seen == [2, 2]                  # two cycles, each recording its two active steps
    handler = rawdev.profiler.tensorboard_trace_handler(str(tmp_path / "tb"))
    with profile(on_trace_ready=handler):
        model(x)
    files = list((tmp_path / "tb").glob("*.pt.trace.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["traceEvents"]
