"""DataLoader worker processes (torch.utils.data._utils.worker): the worker loop, its seeding, WorkerInfo /
get_worker_info, the exception wrapper that carries a worker's traceback to the main process, and the
shared-memory transport of batches.

A batch travels as one shared-memory file (/dev/shm) holding every array of the batch at 64-byte aligned
offsets, plus (file name, size, a small pickled description: the batch's structure with a slot per array:
offset, numpy dtype, shape, rawdev dtype name) through the result queue. The main process maps the file,
unlinks it at once (the mapping stays valid; nothing is left behind even if it dies later), then unpickles
the description and wraps the arrays as rawdev cpu tensors without a copy. Files a worker wrote that the main
process never read are removed by name prefix: by the main process once the workers are gone (early
shutdown), by each worker for its own files when the main process dies (killed, even by SIGKILL: the kernel
tells the worker, rawdev.utils.data._worker._watch_parent).

Workers never touch the CUDA driver: rawdev's driver seam is switched off in them (a forked child must not
use the parent's CUDA context), so a dataset that reaches for the GPU gets a clear error there.
"""
import collections.abc
import ctypes
import glob
import mmap
import os
import pickle
import random
import signal
import sys
import tempfile
import traceback

import numpy as np

from ... import dtypes as _dt
from ... import random as _random
from ...tensor.core import Tensor

__all__ = ["WorkerInfo", "get_worker_info"]

STATUS_CHECK_INTERVAL = 5.0   # seconds between liveness checks while waiting on a queue (PyTorch's)
_ALIGN = 64
SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()

_worker_info = None


class WorkerInfo:
    """What a worker process knows about itself: id, num_workers, seed, dataset (its own copy)."""
    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info():
    """In a DataLoader worker process: its WorkerInfo(id, num_workers, seed, dataset). In the main process:
    None. An IterableDataset uses it to give each worker its own share of the stream."""
    return _worker_info


# ----------------------------------------------------------------------------- errors
class _KeyErrorMessage(str):
    """KeyError's str() is the repr of its argument; this keeps the traceback text readable."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception raised in a worker, with its traceback as text, re-raised in the main process as
    "Caught {Type} in DataLoader worker process {i}.\\nOriginal Traceback (most recent call last): ..."."""

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where
        from ...errors import CudaError
        if isinstance(self.exc_type, type) and issubclass(self.exc_type, CudaError):
            self.exc_msg += NO_CUDA + "\n"
        try:
            pickle.dumps(self.exc_type)
        except Exception:   # a class pickle cannot name (local to a function): re-raised as RuntimeError
            self.exc_type = RuntimeError

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:   # an exception type whose constructor wants other arguments
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            del exception   # no frame <-> traceback cycle keeping the DataLoader iterator alive


# ----------------------------------------------------------------------------- seeding
def _generate_state(base_seed, worker_id):
    """Four uint32 words for numpy.random.seed in worker `worker_id` (the hash PyTorch uses, modelled on
    numpy's SeedSequence), so numpy's stream differs from python's and rawdev's seeded with base_seed + id."""
    M = 0xFFFFFFFF
    xs = 16
    consts = {"a": 0x43B0D7E5}

    def h(v):
        v = (v ^ consts["a"]) & M
        consts["a"] = (consts["a"] * 0x931E8875) & M
        v = (v * consts["a"]) & M
        return (v ^ (v >> xs)) & M

    def mix(x, y):
        r = ((0xCA01F9DD * x) - (0x4973F715 * y)) & M
        return (r ^ (r >> xs)) & M

    pool = [h(e) for e in (worker_id, base_seed & M, base_seed >> 32, 0)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], h(pool[src]))
    b, out = 0x8B51F9DD, []
    for v in pool:
        v = (v ^ b) & M
        b = (b * 0x58F38DED) & M
        v = (v * b) & M
        out.append((v ^ (v >> xs)) & M)
    return out


def _seed_worker(base_seed, worker_id):
    seed = base_seed + worker_id
    random.seed(seed)
    _random.manual_seed(seed)
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


NO_CUDA = ("CUDA cannot be used in a DataLoader worker process: workers load and collate on the host (numpy / "
           "cpu tensors); move batches to the device in the main process (pin_memory=True, then "
           ".to('cuda', non_blocking=True))")


def _no_cuda_here():
    """Switch rawdev's driver seam off in this process: any CUDA use raises NoDeviceError with the reason,
    rawdev.cuda.is_available() is False, and finalizers of inherited pinned buffers do not call the driver."""
    from ...errors import NoDeviceError
    from ...runtime import seam
    seam._drv, seam._name = None, "none"
    seam._why_none = NoDeviceError(NO_CUDA)


# ----------------------------------------------------------------------------- the shared-memory transport
class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __getstate__(self):
        return self.i

    def __setstate__(self, i):
        self.i = i


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _walk(x, leaf):
    """x with leaf(v) for tensors and numeric numpy arrays inside tuples/lists/dicts (types kept)."""
    if isinstance(x, Tensor) or (isinstance(x, np.ndarray) and x.dtype.kind in "biufc"):
        return leaf(x)
    if isinstance(x, collections.abc.Mapping):
        return {k: _walk(v, leaf) for k, v in x.items()}
    if _is_namedtuple(x):
        return type(x)(*(_walk(v, leaf) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_walk(v, leaf) for v in x)
    return x


def _rebuild(x, leaf):
    if isinstance(x, _Slot):
        return leaf(x.i)
    if isinstance(x, dict):
        return {k: _rebuild(v, leaf) for k, v in x.items()}
    if _is_namedtuple(x):
        return type(x)(*(_rebuild(v, leaf) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_rebuild(v, leaf) for v in x)
    return x


def pack(batch, path):
    """Write batch's arrays into the shared-memory file `path`; return what travels through the result queue:
    (path or None, total bytes, the pickled description). The description is pickled before the file exists,
    and a failed write removes the file, so a batch that cannot be sent leaves nothing behind."""
    arrays, names = [], []

    def leaf(v):
        if isinstance(v, Tensor):
            if v.is_cuda:
                raise RuntimeError("a DataLoader worker produced a cuda tensor: workers must return host data")
            arrays.append(np.ascontiguousarray(v._host_storage()))
            names.append(v.dtype.name)
        else:
            arrays.append(np.ascontiguousarray(v))
            names.append(None)
        return _Slot(len(arrays) - 1)
    tree = _walk(batch, leaf)
    slots, total = [], 0
    for a, name in zip(arrays, names):
        slots.append((total, a.dtype, a.shape, name))
        total = (total + a.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
    desc = pickle.dumps((tree, slots), protocol=pickle.HIGHEST_PROTOCOL)
    if total:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                os.ftruncate(fd, total)
                mm = mmap.mmap(fd, total)
            finally:
                os.close(fd)
            try:
                dst = np.frombuffer(mm, np.uint8)
                for (off, _, _, _), a in zip(slots, arrays):
                    dst[off:off + a.nbytes] = a.reshape(-1).view(np.uint8)
                del dst
            finally:
                mm.close()
        except BaseException:
            _unlink(path)
            raise
    return (path if total else None, total, desc)


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def unpack(payload):
    """The batch a worker packed: rawdev cpu tensors over the mapped (and already unlinked) file.

    The file is mapped and unlinked before the description is unpickled, so a description that fails to
    unpickle here (a sample whose class cannot be rebuilt in the main process) leaves no file behind; the
    error propagates to the caller, which hands it out in that batch's place."""
    path, total, desc = payload
    buf = None
    if total:
        try:
            fd = os.open(path, os.O_RDWR)
            try:
                mm = mmap.mmap(fd, total)
            finally:
                os.close(fd)
        finally:
            _unlink(path)
        buf = np.frombuffer(mm, np.uint8)
    tree, slots = pickle.loads(desc)

    def leaf(i):
        off, np_dtype, shape, dt_name = slots[i]
        n = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
        a = buf[off:off + n].view(np_dtype).reshape(shape) if n else np.empty(shape, np_dtype)
        return Tensor._make_cpu(a, _dt.from_name(dt_name)) if dt_name is not None else a
    return _rebuild(tree, leaf)


def discard(payload):
    """Remove the shared-memory file of a batch that will not be used."""
    try:
        path = payload[0]
    except Exception:
        return
    if path:
        _unlink(path)


def remove_files(prefix):
    """Unlink every batch file whose name starts with `prefix` (batches nobody will read)."""
    for path in glob.glob(glob.escape(prefix) + "*"):
        _unlink(path)


# ----------------------------------------------------------------------------- the worker loop
class ResumeIteration:
    """Sent to persistent workers at the start of each epoch after the first; they answer with one."""


def _watch_parent(parent_pid, own_prefix):
    """Make this worker leave, removing the batch files it wrote, as soon as the main process dies (even by
    SIGKILL): on Linux the kernel sends PARENT_DEATH_SIGNAL when the parent goes (PR_SET_PDEATHSIG); the
    handler acts only once the parent really is gone (the signal also comes when the thread that started
    the worker ends while the process lives on). Elsewhere the loop's liveness check finds out within
    STATUS_CHECK_INTERVAL when it is idle."""
    def on_signal(signum, frame):
        if os.getppid() != parent_pid:
            remove_files(own_prefix)
            os._exit(1)
    try:
        signal.signal(PARENT_DEATH_SIGNAL, on_signal)
        if sys.platform.startswith("linux"):
            ctypes.CDLL(None, use_errno=True).prctl(1, int(PARENT_DEATH_SIGNAL))   # 1: PR_SET_PDEATHSIG
    except Exception:   # no prctl: the liveness check is the fallback
        pass
    if os.getppid() != parent_pid:   # the parent died before the request took effect
        remove_files(own_prefix)
        os._exit(1)


# The signal a worker asks for when its parent dies: not SIGTERM, so that terminate() keeps its default
# meaning (leave now) and a worker_init_fn that handles SIGTERM sees only real terminations.
PARENT_DEATH_SIGNAL = signal.SIGUSR2 if hasattr(signal, "SIGUSR2") else None


def _worker_loop(make_fetcher, dataset, index_queue, data_queue, done_event, base_seed, init_fn, worker_id,
                 num_workers, shm_prefix, parent_pid):
    global _worker_info
    own_prefix = f"{shm_prefix}{worker_id}-"
    parent_gone = False
    try:
        if PARENT_DEATH_SIGNAL is not None:
            _watch_parent(parent_pid, own_prefix)
        _no_cuda_here()
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_exception, fetcher = None, None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(dataset)
        except Exception:
            init_exception = ExceptionWrapper(where=where)
        iteration_end, count = False, 0
        while True:
            if not index_queue._reader.poll(STATUS_CHECK_INTERVAL):
                if os.getppid() != parent_pid:   # the main process is gone
                    parent_gone = True
                    break
                continue
            r = index_queue.get()
            if isinstance(r, ResumeIteration):
                data_queue.put((r, "resume", None))
                iteration_end = False
                try:
                    fetcher = make_fetcher(dataset)
                except Exception:
                    init_exception = ExceptionWrapper(where=where)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                kind, payload, init_exception = "error", _pickled_error(init_exception), None
            else:
                try:
                    kind, payload = "batch", pack(fetcher.fetch(index), f"{own_prefix}{count}")
                    count += 1
                except StopIteration:
                    kind, payload, iteration_end = "stop", worker_id, True
                except Exception:
                    kind, payload = "error", _pickled_error(ExceptionWrapper(where=where))
            data_queue.put((idx, kind, payload))
            del r, idx, index, payload
    except KeyboardInterrupt:
        pass
    if parent_gone or os.getppid() != parent_pid:
        remove_files(own_prefix)   # nobody will read them
        data_queue.cancel_join_thread()
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()


def _pickled_error(wrapper):
    """An ExceptionWrapper as bytes: only ints, strings and bytes cross the result queue, so reading it in the
    main process cannot fail; the wrapper is unpickled where its batch is handed out."""
    try:
        return pickle.dumps(wrapper, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:   # an exception message pickle cannot carry
        wrapper.exc_type, wrapper.exc_msg = RuntimeError, str(wrapper.exc_msg)
        return pickle.dumps(wrapper, protocol=pickle.HIGHEST_PROTOCOL)
