"""Writing a file so that a crash or a power loss leaves either the old or the new complete version.

`write_atomically(path, emit)` writes through a uniquely named temporary in the target's own directory
(`.<name>~<hash>.<pid>.<random>.rawdev-save`), flushes and fsyncs it, gives it the target's permission bits (or
the umask's for a new file), renames it over the target and fsyncs the directory so the rename itself is on disk.
Two threads or processes saving to one path each use their own temporary; the last rename wins and each reader
sees one whole file. A target that exists and is not a regular file (a character device such as /dev/null, a
FIFO, a socket) is opened and written into directly, as PyTorch's torch.save does, never replaced. A symlink is
followed: the file it points to is replaced, the link stays. Temporaries of the same target left by a process
that died mid-save (SIGKILL, power loss) are removed by the next save to that target.
"""

import hashlib
import os
import secrets
import stat

__all__ = ["write_atomically"]

_SUFFIX = ".rawdev-save"


def _prefix(name):
    """The temporaries' common prefix for a target file name (bounded: a name may already be 255 bytes)."""
    digest = hashlib.sha1(os.fsencode(name)).hexdigest()[:12]
    return f".{name[:80]}~{digest}."


def _umask():
    """The process's umask without changing it (reading /proc; os.umask() would change it for other threads)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:   # exists, owned by someone else
        return True
    return True


def _remove_stale(directory, name):
    """Delete temporaries of this target whose writing process is gone."""
    prefix = _prefix(name)
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        if not (entry.startswith(prefix) and entry.endswith(_SUFFIX)):
            continue
        pid = entry[len(prefix):-len(_SUFFIX)].partition(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                os.unlink(os.path.join(directory, entry))
            except OSError:
                pass


def _fsync_directory(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:   # some file systems cannot fsync a directory; the rename is still atomic
        pass
    finally:
        os.close(fd)


def write_atomically(path, emit):
    """Write a file by calling emit(binary_file); the target holds the old or the new whole content at any moment.

    Args:
        path: the target (str or os.PathLike). A symlink is followed; a target that is not a regular file
            (a device, a FIFO) is written into directly.
        emit: a function writing the content to the binary file object it is given.

    Returns:
        None.

    Example:
        >>> write_atomically("out.bin", lambda fh: fh.write(b"data"))
    """
    path = os.path.realpath(os.fspath(path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "wb") as fh:
            emit(fh)
        return
    directory, name = os.path.split(path)
    _remove_stale(directory, name)
    tmp = os.path.join(directory, f"{_prefix(name)}{os.getpid()}.{secrets.token_hex(6)}{_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            emit(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)
