"""torch.utils.benchmark's Timer / Measurement / Compare on rawdev: the statement runs the asked number of times in
the given globals after setup, times come from the clock given (a fake clock here, so nothing depends on the
machine's speed), and Callgrind and C++ statements are refused with the reason (the fuzzers are in
test_utils_benchmark_fuzzer.py)."""
import pytest
import rawdev
import rawdev.utils.benchmark as benchmark


class FakeClock:
    """Each reading advances by `step` seconds."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def test_timeit_runs_setup_once_and_the_statement_number_plus_warmup_times():
    calls = {"setup": 0, "stmt": 0}

    def f(x):
        calls["stmt"] += 1
        return x * 2

    def s():
        calls["setup"] += 1

    t = benchmark.Timer(stmt="f(x)", setup="s()", globals={"f": f, "s": s, "x": rawdev.ones(3)},
                        timer=FakeClock(0.5), label="L", sub_label="sub", description="d", num_threads=2)
    m = t.timeit(7)
    assert calls == {"setup": 1, "stmt": 8}                     # one warm-up run, then 7
    assert m.number_per_run == 7 and m.raw_times == [0.5] and m.times == [0.5 / 7]
    assert m.mean == m.median == pytest.approx(0.5 / 7) and m.iqr == 0.0
    assert (m.label, m.sub_label, m.description, m.num_threads, m.stmt, m.title) == ("L", "sub", "d", 2, "f(x)", "L")
    assert "f(x)" in repr(m) and "7 runs per measurement, 2 threads" in repr(m)


def test_blocked_autorange_grows_the_block_and_spends_min_run_time():
    seen = []
    t = benchmark.Timer("y = x + 1", globals={"x": rawdev.zeros(2)}, timer=FakeClock(0.05))
    m = t.blocked_autorange(callback=lambda n, dt: seen.append((n, dt)), min_run_time=0.2)
    assert m.number_per_run == 1                                  # 0.05 s per block already >= 1e-4 s
    assert len(m.raw_times) == 4 and sum(m.raw_times) == pytest.approx(0.2) and len(seen) == 4


def test_compare_tabulates_medians():
    clock = FakeClock(1e-3)
    ms = [benchmark.Timer("pass", timer=clock, label="add", sub_label=s, description=d).timeit(10)
          for s in ("a", "b") for d in ("cpu", "cuda")]
    text = str(benchmark.Compare(ms))
    assert "add" in text and "cpu" in text and "cuda" in text and text.count("100.0") == 4
    assert "microseconds (us)" in text


def test_refused_parts_say_why():
    with pytest.raises(NotImplementedError, match="C\\+\\+ statements are not supported by rawdev"):
        benchmark.Timer("x", language=benchmark.Language.CPP)
    with pytest.raises(NotImplementedError, match="Callgrind"):
        benchmark.Timer("pass").collect_callgrind()
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        benchmark.Timer("pass", global_setup="int x;")


def test_real_clock_on_a_rawdev_statement():
    m = benchmark.Timer("x @ x", globals={"x": rawdev.ones(4, 4)}).timeit(3)
    assert m.number_per_run == 3 and len(m.times) == 1 and m.times[0] >= 0.0
