"""rawdev.futures: completion across threads, chained callbacks, errors, collect_all / wait_all."""
import threading

import pytest
from rawdev.futures import Future, collect_all, wait_all


def test_a_value_set_by_another_thread_wakes_the_waiter():
    fut = Future()
    threading.Timer(0.01, fut.set_result, args=(41,)).start()
    assert fut.then(lambda f: f.value() + 1).wait() == 42
    assert fut.done() and fut.value() == 41


def test_errors_reach_wait_and_chained_futures():
    fut = Future()
    chained = fut.then(lambda f: f.value() * 2)
    fut.set_exception(ValueError("bad input"))
    with pytest.raises(ValueError, match="bad input"):
        fut.wait()
    with pytest.raises(ValueError, match="bad input"):
        chained.wait()
    failing = Future()
    out = failing.then(lambda f: 1 / 0)
    failing.set_result(1)
    with pytest.raises(ZeroDivisionError):
        out.wait()


def test_misuse_is_refused():
    fut = Future()
    with pytest.raises(RuntimeError, match="not completed yet"):
        fut.value()
    fut.set_result(1)
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        fut.set_result(2)
    with pytest.raises(TypeError):
        Future().set_exception("not an exception")


def test_callbacks_run_once_in_order_even_when_added_late():
    fut, seen = Future(), []
    fut.add_done_callback(lambda f: seen.append(("early", f.value())))
    fut.set_result(5)
    fut.add_done_callback(lambda f: seen.append(("late", f.value())))
    assert seen == [("early", 5), ("late", 5)]


def test_collect_all_and_wait_all():
    futs = [Future() for _ in range(4)]
    both = collect_all(futs)
    threads = [threading.Thread(target=f.set_result, args=(i * i,)) for i, f in enumerate(futs)]
    for t in threads:
        t.start()
    assert [f.value() for f in both.wait()] == [0, 1, 4, 9]
    assert wait_all(futs) == [0, 1, 4, 9]
    assert collect_all([]).wait() == []
    bad = Future()
    bad.set_exception(KeyError("k"))
    with pytest.raises(KeyError):
        wait_all([futs[0], bad])
