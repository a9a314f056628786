"""rawdev.save to a path: a unique temporary beside the target (threads saving to one path never collide), the
target's permissions kept, devices and FIFOs written into rather than replaced, stale temporaries of a killed save
removed by the next save, the file and its directory fsynced around the rename, a save killed at random moments
always leaving the old or the new complete file, and strings a UTF-8 header cannot hold refused by name."""
import os
import random
import signal
import stat
import threading
import time

import numpy as np
import pytest
import rawdev
from rawdev.utils import atomic_file

SEED = int(os.environ.get("RAWDEV_TEST_SEED", "4242"))


def version(n, size=1000):
    return {"w": rawdev.full((size,), float(n)), "n": rawdev.tensor([n])}


def saved_version(path):
    sd = rawdev.load(path)
    w, n = sd["w"].numpy(), int(sd["n"].item())
    np.testing.assert_array_equal(w, np.full(w.shape, float(n)))
    return n


def leftovers(directory, keep):
    return sorted(set(os.listdir(directory)) - set(keep))


def test_threads_saving_to_one_path_do_not_collide(tmp_path):
    p = tmp_path / "shared.pt"
    errors = []

    def work(n):
        try:
            for _ in range(15):
                rawdev.save(version(n), p)
        except Exception as e:   # noqa: BLE001 - any failure is the defect
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert saved_version(p) in range(4)
    assert leftovers(tmp_path, ["shared.pt"]) == []


def test_a_save_keeps_the_targets_permissions(tmp_path):
    p = tmp_path / "private.pt"
    p.write_bytes(b"old")
    os.chmod(p, 0o600)
    rawdev.save(version(1), p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    os.chmod(p, 0o640)
    rawdev.save(version(2), p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640 and saved_version(p) == 2


def test_a_new_file_gets_the_umasks_permissions(tmp_path):
    old = os.umask(0o027)
    try:
        rawdev.save(version(1), tmp_path / "new.pt")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.pt").st_mode) == 0o640


def test_a_symlink_is_followed_and_kept(tmp_path):
    (tmp_path / "real.pt").write_bytes(b"old")
    os.symlink("real.pt", tmp_path / "link.pt")
    rawdev.save(version(3), tmp_path / "link.pt")
    assert os.path.islink(tmp_path / "link.pt") and saved_version(tmp_path / "real.pt") == 3


def test_a_fifo_is_written_into_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))   # noqa: SIM115
    reader.start()
    rawdev.save(version(5), fifo)
    reader.join(60)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    (tmp_path / "copy.pt").write_bytes(got[0])
    assert saved_version(tmp_path / "copy.pt") == 5
    assert leftovers(tmp_path, ["pipe", "copy.pt"]) == []


def test_dev_null_stays_a_character_device():
    before = os.stat("/dev/null")
    assert stat.S_ISCHR(before.st_mode)
    rawdev.save(version(1), "/dev/null")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino and after.st_rdev == before.st_rdev


def test_stale_temporaries_of_the_target_are_removed_by_the_next_save(tmp_path):
    p = tmp_path / "model.pt"
    pid = os.fork()
    if pid == 0:   # a process that dies: its pid names the stale temporaries
        os._exit(0)
    os.waitpid(pid, 0)
    prefix = atomic_file._prefix("model.pt")
    stale = tmp_path / f"{prefix}{pid}.abc123{atomic_file._SUFFIX}"
    stale.write_bytes(b"x" * 1000)
    live = tmp_path / f"{prefix}{os.getpid()}.def456{atomic_file._SUFFIX}"   # another thread's save in progress
    live.write_bytes(b"y")
    other = tmp_path / f"{atomic_file._prefix('other.pt')}{pid}.abc123{atomic_file._SUFFIX}"   # another target's
    other.write_bytes(b"z")
    rawdev.save(version(1), p)
    assert not stale.exists() and live.exists() and other.exists()
    assert leftovers(tmp_path, ["model.pt", live.name, other.name]) == []


def test_the_file_and_its_directory_are_synced_around_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", stat.S_ISDIR(os.fstat(fd).st_mode)))
        real_fsync(fd)

    def replace(a, b):
        events.append(("replace", os.path.basename(b)))
        real_replace(a, b)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    rawdev.save(version(1), tmp_path / "synced.pt")
    assert events == [("fsync", False), ("replace", "synced.pt"), ("fsync", True)]


def test_a_failed_save_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "keep.pt"
    rawdev.save(version(1), p)

    def broken(a, b):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="No space"):
        rawdev.save(version(2), p)
    monkeypatch.undo()
    assert saved_version(p) == 1 and leftovers(tmp_path, ["keep.pt"]) == []


def test_a_save_killed_at_random_moments_leaves_the_old_or_the_new_file(tmp_path):
    """A forked child saves versions 1, 2, 3, ... in a loop; it is SIGKILLed after a seeded random delay. The
    target must always be one whole version, never a torn file; the next save removes the dead child's temporary."""
    rng = random.Random(SEED)
    p = tmp_path / "ckpt.pt"
    rawdev.save(version(0, 200_000), p)
    seen = set()
    for it in range(12):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child: never returns into pytest
            try:
                os.close(r)
                os.write(w, b"go")
                n = 1
                while True:
                    rawdev.save(version(n, 200_000), p)
                    n += 1
            finally:
                os._exit(1)
        os.close(w)
        os.read(r, 2)
        os.close(r)
        time.sleep(rng.uniform(0, 0.2))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        try:
            seen.add(saved_version(p))
        except Exception as e:   # noqa: BLE001 - a torn file is the defect under test
            pytest.fail(f"seed {SEED}, iteration {it}: {type(e).__name__}: {e}")
    rawdev.save(version(99, 10), p)
    assert saved_version(p) == 99 and leftovers(tmp_path, ["ckpt.pt"]) == []
    assert seen   # the versions the kills left


@pytest.mark.parametrize("obj,what", [
    ({"bad\ud800": rawdev.ones(1)}, "the state_dict key 'bad\\\\ud800'"),
    ({"model": {"bad\udcff": rawdev.ones(1)}}, "the object\\['model'\\] \\(a key\\) 'bad\\\\udcff'"),
    ({"name": "bad\ud800", "w": rawdev.ones(1), "epoch": 1}, "the object\\['name'\\] 'bad\\\\ud800'"),
    ([{"ok": 1, "x\ud800": 2}], "the object\\[0\\] \\(a key\\) 'x\\\\ud800'"),
])
def test_strings_a_utf8_header_cannot_hold_are_refused_by_name(tmp_path, obj, what):
    p = tmp_path / "s.pt"
    rawdev.save(version(1), p)
    with pytest.raises(ValueError, match=f"rawdev.save: {what} is not valid Unicode text .*lone surrogate"):
        rawdev.save(obj, p)
    assert saved_version(p) == 1 and leftovers(tmp_path, ["s.pt"]) == []


def test_metadata_a_utf8_header_cannot_hold_is_refused_by_name(tmp_path):
    p = tmp_path / "m.pt"
    with pytest.raises(ValueError, match="the metadata key 'k\\\\ud800'"):
        rawdev.save(version(1), p, metadata={"k\ud800": "v"})
    with pytest.raises(ValueError, match="the metadata value of 'k' 'v\\\\udc80'"):
        rawdev.save(version(1), p, metadata={"k": "v\udc80"})
    assert not p.exists() and leftovers(tmp_path, []) == []


def test_a_save_into_a_file_object_is_unchanged(tmp_path):
    import io
    buf = io.BytesIO()
    rawdev.save(version(4), buf)
    (tmp_path / "b.pt").write_bytes(buf.getvalue())
    assert saved_version(tmp_path / "b.pt") == 4


def test_concurrent_memory_snapshot_dumps_do_not_collide(tmp_path):
    import json

    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    p = tmp_path / "snap.json"
    errors = []

    def work():
        try:
            for _ in range(5):
                rawdev.cuda.memory.dump_snapshot(str(p))
        except Exception as e:   # noqa: BLE001 - a collision on a fixed temporary name is the defect
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert isinstance(json.loads(p.read_text()), dict) and leftovers(tmp_path, ["snap.json"]) == []
