"""A pytest plugin tools/gpu_check loads (`-p gpu_check_plugin`): each test's outcome streamed to a file as it
finishes, and a per-test timeout, with nothing but pytest and the standard library (the GPU image has no
pytest-timeout).

RAWDEV_GPU_CHECK_OUTCOMES names the file; one line per event, flushed at once, so the names of failures are on
disk even when the run is killed at its deadline:

    COLLECTED <n>
    START <nodeid>
    PASSED|FAILED|SKIPPED|ERROR <nodeid> <seconds>s
    TIMEOUT <nodeid> <seconds>s

RAWDEV_GPU_CHECK_TEST_TIMEOUT (seconds, default 60): a test still running then gets a TimeoutError raised in it
(SIGALRM: it fails, the run goes on). One stuck inside a C call that never returns to Python cannot be
interrupted: RAWDEV_GPU_CHECK_GRACE seconds (default 30) later a watchdog thread writes TIMEOUT, dumps every
thread's stack to the file and ends the process, and tools/gpu_check reports the tests after it as not reached.
"""
import faulthandler
import os
import signal
import threading

import pytest

_out = None
_timeout = 60.0
_grace = 30.0   # seconds past the timeout before the watchdog gives up on the test and ends the process


def _write(line):
    if _out is not None:
        _out.write(line + "\n")
        _out.flush()


def pytest_configure(config):
    global _out, _timeout, _grace
    path = os.environ.get("RAWDEV_GPU_CHECK_OUTCOMES")
    if path:
        _out = open(path, "a", buffering=1)
    _timeout = float(os.environ.get("RAWDEV_GPU_CHECK_TEST_TIMEOUT", "60"))
    _grace = float(os.environ.get("RAWDEV_GPU_CHECK_GRACE", "30"))


def pytest_collection_finish(session):
    _write(f"COLLECTED {len(session.items)}")


class TestTimeout(TimeoutError):
    pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _write(f"START {item.nodeid}")
    done = threading.Event()

    def watchdog():
        if not done.wait(_timeout + _grace):
            _write(f"TIMEOUT {item.nodeid} {_timeout + _grace:.0f}s (stuck outside Python: the run stops here)")
            if _out is not None:
                faulthandler.dump_traceback(file=_out, all_threads=True)
                _out.flush()
            os._exit(124)

    def on_alarm(signum, frame):
        raise TestTimeout(f"the test ran past the per-test timeout of {_timeout:g} s")

    threading.Thread(target=watchdog, daemon=True, name="gpu_check watchdog").start()
    armed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    old = None
    if armed:
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, _timeout)
    try:
        yield
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        done.set()


def pytest_runtest_logreport(report):
    if report.when == "call":
        word = {"passed": "PASSED", "failed": "FAILED", "skipped": "SKIPPED"}[report.outcome]
        if report.failed and "TestTimeout" in str(report.longrepr):
            word = "TIMEOUT"
    elif report.outcome == "skipped":       # skipped in setup
        word = "SKIPPED"
    elif report.failed:                     # an error in setup or teardown
        word = "ERROR"
    else:
        return
    _write(f"{word} {report.nodeid} {report.duration:.2f}s")


def read_outcomes(path):
    """{collected, passed, failed, errors, skipped, timeouts, not_reached, failures: [nodeid…], last_started}
    from an outcomes file (None when there is none). A test's worst outcome counts (a teardown error after a
    pass is an error); a test that started and never reported is the one the run was stopped in."""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None
    collected, final, started = None, {}, None
    rank = {"PASSED": 0, "SKIPPED": 1, "FAILED": 2, "ERROR": 3, "TIMEOUT": 4}
    for ln in lines:
        word, _, rest = ln.partition(" ")
        if word == "COLLECTED":
            collected = int(rest)
        elif word == "START":
            started = rest
        elif word in rank:
            node = rest.split(" ", 1)[0]
            if rank[word] >= rank.get(final.get(node), -1):
                final[node] = word
    counts = {k: sum(1 for w in final.values() if w == v) for k, v in
              (("passed", "PASSED"), ("failed", "FAILED"), ("errors", "ERROR"), ("skipped", "SKIPPED"),
               ("timeouts", "TIMEOUT"))}
    total = collected if collected is not None else len(final)
    stuck = started if started is not None and started not in final else None
    return {"tests": total, **counts, "not_reached": max(0, total - len(final)),
            "failures": sorted(n for n, w in final.items() if w in ("FAILED", "ERROR", "TIMEOUT")),
            "stopped_in": stuck}
