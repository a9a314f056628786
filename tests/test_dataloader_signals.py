"""DataLoader workers when things go wrong around them: the main process killed mid-epoch (SIGKILL, SIGTERM)
leaves no shared-memory batch behind and no worker running; a worker that hangs and ignores SIGTERM does not
make shutdown wait forever; a batch that cannot be unpickled in the main process raises in its place and the
iteration goes on. The subprocess timeouts are hang guards, far above the work each case does."""
import glob
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from rawdev.utils.data import DataLoader, Dataset, _worker

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and /proc: Linux")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUARD = 120   # seconds: a hang guard, not a speed check


def _run(script):
    """Start `script` in its own session (so a failed case can end everything it started)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)


def _end_session(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _running(pid):
    """Whether pid is a process that has not exited (a zombie waiting for its reaper counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _wait_until(cond, what):
    deadline = time.monotonic() + GUARD
    while not cond():
        assert time.monotonic() < deadline, f"hang guard: {what} after {GUARD} s"
        time.sleep(0.05)


KILLED_MID_EPOCH = """
import json, os, sys, time
import numpy as np
from rawdev.utils.data import DataLoader, Dataset

class Rows(Dataset):
    def __len__(self):
        return 400
    def __getitem__(self, i):
        return np.full(256, i, np.float32), i

loader = DataLoader(Rows(), batch_size=4, num_workers=2, prefetch_factor=3)
it = iter(loader)
for _ in range(3):
    next(it)
print(json.dumps({"pid": os.getpid(), "workers": [w.pid for w in it._workers], "prefix": it._shm_prefix}),
      flush=True)
time.sleep(3600)   # mid-epoch, prefetched batches waiting in shared memory
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_main_process_killed_mid_epoch_leaves_no_shared_memory(sig):
    proc = _run(KILLED_MID_EPOCH)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        info = json.loads(line)
        prefix = info["prefix"]
        assert prefix.startswith(os.path.join(_worker.SHM_DIR, f"rawdev-dl-{info['pid']}-"))
        # the case is real only if batches are waiting in shared memory when the main process dies
        _wait_until(lambda: len(glob.glob(glob.escape(prefix) + "*")) >= 2, "no prefetched batch appeared")
        os.kill(info["pid"], sig)
        proc.wait(GUARD)
        assert proc.returncode == -sig
        _wait_until(lambda: not any(_running(p) for p in info["workers"]), "the workers outlived the main process")
        left = glob.glob(glob.escape(os.path.join(_worker.SHM_DIR, f"rawdev-dl-{info['pid']}-")) + "*")
        assert left == []
    finally:
        _end_session(proc)


HANGING_WORKER = """
import signal, time
import numpy as np
from rawdev.utils.data import DataLoader, Dataset

class Hangs(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        if i >= 2:
            time.sleep(3600)
        return np.ones(3, np.float32)

def deaf(worker_id):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

it = iter(DataLoader(Hangs(), batch_size=2, num_workers=1, timeout=2, worker_init_fn=deaf))
next(it)
try:
    next(it)
except RuntimeError as e:
    print("error:", e, flush=True)
workers = [w.pid for w in it._workers]
del it
print("shut down", workers, flush=True)
"""


def test_shutdown_kills_a_worker_that_hangs_and_ignores_sigterm():
    proc = _run(HANGING_WORKER)
    try:
        out, err = proc.communicate(timeout=GUARD)
    except subprocess.TimeoutExpired:
        _end_session(proc)
        pytest.fail("shutdown waited on a worker that ignores SIGTERM")
    finally:
        _end_session(proc)
    assert proc.returncode == 0, err
    assert "error: DataLoader timed out after 2 seconds" in out
    workers = json.loads(out.split("shut down", 1)[1].strip())
    assert not any(_running(p) for p in workers)


# ----------------------------------------------------------------------------- unpickling in the main process
def _explode():
    raise ValueError("this sample cannot be rebuilt in the main process")


class _Unbuildable:
    """Pickles fine in the worker; unpickling it in the main process raises."""

    def __reduce__(self):
        return _explode, ()


class _WithOneBadSample(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"x": np.full(64, i, np.float32), "meta": _Unbuildable() if i == 3 else i}


def test_a_batch_that_fails_to_unpickle_raises_in_its_place_and_iteration_goes_on():
    # timeout: a hang guard (before the fix the next batch never came)
    it = iter(DataLoader(_WithOneBadSample(), batch_size=None, num_workers=2, timeout=GUARD))
    prefix = it._shm_prefix
    got = []
    for i in range(8):
        try:
            b = next(it)
            np.testing.assert_array_equal(b["x"].numpy(), np.full(64, i, np.float32))
            assert b["meta"] == i
            got.append(i)
        except ValueError as e:
            assert i == 3
            assert "cannot be rebuilt in the main process" in str(e)
            assert "in the main process while unpickling a batch from DataLoader worker process 1" in str(e)
            got.append("error")
    with pytest.raises(StopIteration):
        next(it)
    assert got == [0, 1, 2, "error", 4, 5, 6, 7]
    assert glob.glob(glob.escape(prefix) + "*") == []   # the bad batch's file is gone too


EXITS_WITH_A_LIVE_ITERATOR = """
import glob, json, os, time
import numpy as np
from rawdev.utils.data import DataLoader, Dataset

class Rows(Dataset):
    def __len__(self):
        return 400
    def __getitem__(self, i):
        return np.full(256, i, np.float32)

it = iter(DataLoader(Rows(), batch_size=4, num_workers=2, prefetch_factor=3))   # alive until the interpreter exits
next(it)
while len(glob.glob(glob.escape(it._shm_prefix) + "*")) < 2:
    time.sleep(0.01)   # until batches are waiting in shared memory
print(json.dumps({"pid": os.getpid(), "workers": [w.pid for w in it._workers]}), flush=True)
"""


def test_interpreter_exit_with_a_live_iterator_leaves_no_shared_memory():
    proc = _run(EXITS_WITH_A_LIVE_ITERATOR)
    try:
        out, err = proc.communicate(timeout=GUARD)
    finally:
        _end_session(proc)
    assert proc.returncode == 0, err
    info = json.loads(out)
    _wait_until(lambda: not any(_running(p) for p in info["workers"]), "the workers outlived the main process")
    assert glob.glob(glob.escape(os.path.join(_worker.SHM_DIR, f"rawdev-dl-{info['pid']}-")) + "*") == []
