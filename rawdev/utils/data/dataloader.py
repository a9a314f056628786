"""DataLoader (torch.utils.data.dataloader): batches of a dataset, loaded in the main process
(num_workers=0) or in worker processes.

Worker processes (num_workers > 0; the 'fork' start method by default on Linux):
- per iterator, a base seed is drawn from the loader's generator (else rawdev's global one), as PyTorch does
  for every iterator (so the sampler's draws are the same with 0 or N workers); worker i seeds python's
  `random` and rawdev with base_seed + i and numpy with a hash of (base_seed, i), then calls
  worker_init_fn(i); get_worker_info() in the worker says (id, num_workers, seed, dataset);
- index batches go round-robin to the workers' index queues, prefetch_factor of them in flight per worker;
  results come back through one queue and are handed out in sampler order (a reorder buffer keyed by batch
  index); an IterableDataset is iterated by every worker on its own copy (sharding is the dataset's
  business, through get_worker_info), its batches interleaved worker by worker;
- batches travel as numpy arrays in shared memory (rawdev.utils.data._worker), and the main process
  rebuilds rawdev cpu tensors in the batch's structure; with pin_memory=True it copies them into one
  page-locked buffer per batch, so `.to('cuda', non_blocking=True)` is an asynchronous copy;
- an exception in a worker is re-raised in the main process with the worker's traceback in the message;
- the workers are stopped (asked, then terminated if they do not go within JOIN_GRACE, then killed if they
  outlive KILL_GRACE, and joined) when the iterator is exhausted, garbage collected or deleted after an early
  break, or, with persistent_workers, when the loader goes; timeout > 0 bounds each wait for a batch;
- when the main process dies (even by SIGKILL), each worker removes the batch files it wrote and exits;
- a batch (or a worker's error) that fails to unpickle in the main process raises in that batch's place,
  and the iterator goes on with the next one.
"""
from __future__ import annotations

import functools
import itertools
import multiprocessing
import os
import pickle
import queue
import sys
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ...tensor.core import Tensor
from . import _worker
from ._collate import default_collate, default_convert, pin_batch
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _draw_seed

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

get_worker_info = _worker.get_worker_info
_serial = itertools.count()


class _DatasetKind:
    Map, Iterable = 0, 1


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: the dataset decides what comes next."""

    def __iter__(self):
        while True:
            yield None


# ----------------------------------------------------------------------------- fetchers
class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last, fast):
        self.dataset, self.auto_collation, self.collate_fn, self.fast = dataset, auto_collation, collate_fn, fast

    def fetch(self, index):
        if self.auto_collation:
            if self.fast:   # TensorDataset: one gather per tensor instead of stacking samples
                ix = np.asarray(index, dtype=np.int64)
                return [_gather(t, ix) for t in self.dataset.tensors]
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last, fast):
        self.it, self.ended = iter(dataset), False
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.it))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.it)
        return self.collate_fn(data)


def _make_fetcher(kind, auto_collation, collate_fn, drop_last, fast, dataset):
    cls = _IterableFetcher if kind == _DatasetKind.Iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last, fast)


def _gather(t, ix):
    if t.is_cuda:
        raise NotImplementedError("DataLoader over cuda tensors: keep the dataset on the host and use DeviceLoader")
    return Tensor._make_cpu(np.ascontiguousarray(t._host_storage()[ix]), t.dtype)


def _cuda_usable():
    from ...runtime import is_available
    return is_available()


# ----------------------------------------------------------------------------- DataLoader
class DataLoader:
    """Batches of a dataset. shuffle draws a permutation per epoch from `generator`; num_workers > 0 loads
    in worker processes (see the module docstring)."""

    __initialized = False

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable[Any] | None = None, batch_sampler: Iterable[list[Any]] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list[Any]], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None, multiprocessing_context: Any = None,
                 generator: Any = None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "") -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset, self.num_workers, self.prefetch_factor = dataset, num_workers, prefetch_factor
        self.pin_memory, self.pin_memory_device, self.timeout = pin_memory, pin_memory_device, timeout
        self.worker_init_fn, self.persistent_workers = worker_init_fn, persistent_workers
        self.multiprocessing_context = multiprocessing_context

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if isinstance(shuffle, bool) and shuffle:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            self._dataset_kind = _DatasetKind.Map
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            else:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.generator = generator
        self._user_collate = collate_fn is not None
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._fast = isinstance(dataset, TensorDataset) and not self._user_collate
        self._iterator = None
        self.__initialized = True

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _mp_context(self):
        ctx = self.multiprocessing_context
        if ctx is None:
            methods = multiprocessing.get_all_start_methods()
            return multiprocessing.get_context("fork" if "fork" in methods and sys.platform != "darwin" else None)
        if isinstance(ctx, str):
            if ctx not in multiprocessing.get_all_start_methods():
                methods = multiprocessing.get_all_start_methods()
                raise ValueError(f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                                 f"but got multiprocessing_context={ctx!r}")
            return multiprocessing.get_context(ctx)
        return ctx

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> Iterator[Any]:
        if self.persistent_workers and self.num_workers > 0:
            it = self._iterator
            if it is None:
                it = self._iterator = self._get_iterator()
            else:
                it._reset(self)
            return it
        return self._get_iterator()

    def __len__(self) -> int:
        return _length(self._dataset_kind, self.dataset, self.batch_size, self.drop_last, self._index_sampler)


def _length(kind, dataset, batch_size, drop_last, index_sampler):
    if kind == _DatasetKind.Iterable:
        n = len(dataset)
        if batch_size is not None:
            n = n // batch_size if drop_last else -(-n // batch_size)
        return n
    return len(index_sampler)


# ----------------------------------------------------------------------------- iterators
class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset, self._dataset_kind = loader.dataset, loader._dataset_kind
        self._auto_collation, self._drop_last = loader._auto_collation, loader.drop_last
        self._index_sampler, self._num_workers = loader._index_sampler, loader.num_workers
        self._collate_fn, self._fast, self._timeout = loader.collate_fn, loader._fast, loader.timeout
        self._pin_memory = loader.pin_memory
        if self._pin_memory and not _cuda_usable():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
            self._pin_memory = False
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_seed(loader.generator)
        self._num_yielded = 0
        self._len = functools.partial(_length, loader._dataset_kind, loader.dataset, loader.batch_size,
                                      loader.drop_last, loader._index_sampler)   # not the loader: no cycle

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self):
        return self._len()

    def _make_fetcher(self):
        return functools.partial(_make_fetcher, self._dataset_kind, self._auto_collation, self._collate_fn,
                                 self._drop_last, self._fast)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = self._make_fetcher()(self._dataset)

    def _next_data(self):
        index = self._next_index()
        data = self._fetcher.fetch(index)
        return pin_batch(data) if self._pin_memory else data


JOIN_GRACE = 1.0    # seconds a worker asked to stop gets before it is terminated (SIGTERM)
KILL_GRACE = 2.0    # seconds a terminated worker gets before it is killed (SIGKILL: a worker that ignores SIGTERM)


def _stop(workers):
    """Join the workers, all within JOIN_GRACE; terminate those still running, then kill those that outlive
    KILL_GRACE after that, so shutdown never waits on a worker that hangs or ignores SIGTERM."""
    def join_all(ws, grace):
        deadline = time.monotonic() + grace
        for w in ws:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
        return [w for w in ws if w.is_alive()]
    alive = join_all(workers, JOIN_GRACE)
    for w in alive:
        w.terminate()
    alive = join_all(alive, KILL_GRACE)
    for w in alive:
        w.kill()
    if join_all(alive, KILL_GRACE):
        warnings.warn("DataLoader: a worker process did not exit after SIGKILL (pid(s) "
                      f"{', '.join(str(w.pid) for w in alive if w.is_alive())})", RuntimeWarning, stacklevel=3)


def _shutdown(done_event, index_queues, workers, result_queue, shm_prefix):
    """Stop an iterator's workers (done event, a None to each, then _stop) and remove its unread batch files."""
    try:
        done_event.set()
        for q in index_queues:
            try:
                q.put(None)
            except Exception:
                pass
        _stop(workers)
        for q in index_queues:
            q.close()
        result_queue.cancel_join_thread()
        result_queue.close()
    finally:
        _worker.remove_files(shm_prefix)   # batches never read


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._shutdown = True   # nothing to stop until the workers exist
        self._prefetch_factor = loader.prefetch_factor
        self._persistent_workers = loader.persistent_workers
        ctx = loader._mp_context()
        self._shm_prefix = os.path.join(_worker.SHM_DIR, f"rawdev-dl-{os.getpid()}-{next(_serial)}-")
        self._worker_result_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        self._workers_status = []
        # run by _shutdown_workers, or at interpreter exit for an iterator still alive then (a module-level
        # iterator): its workers stopped first, then the batch files nobody will read removed
        self._finalizer = weakref.finalize(self, _shutdown, self._workers_done_event, self._index_queues,
                                           self._workers, self._worker_result_queue, self._shm_prefix)
        self._shutdown = False
        make_fetcher = self._make_fetcher()
        try:
            for i in range(self._num_workers):
                # a SimpleQueue writes in put() itself: a Queue's feeder thread is stopped by the queue's
                # finalizer when a reference cycle holding the iterator is collected, before __del__ could
                # send the workers their stop
                index_queue = ctx.SimpleQueue()
                w = ctx.Process(target=_worker._worker_loop,
                                args=(make_fetcher, self._dataset, index_queue, self._worker_result_queue,
                                      self._workers_done_event, self._base_seed, loader.worker_init_fn, i,
                                      self._num_workers, self._shm_prefix, os.getpid()),
                                daemon=True)
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
                self._workers_status.append(True)
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = self._rcvd_idx = 0
        self._task_info = {}         # batch index -> (worker id,) while out, (worker id, data) once arrived early
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(_worker.ResumeIteration())
            waiting = self._num_workers
            while waiting:
                idx, kind, payload = self._get_data()
                if kind == "resume":
                    waiting -= 1
                elif kind == "batch":
                    _worker.discard(payload)   # left over from an epoch that ended early
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        if self._tasks_outstanding >= self._prefetch_factor * self._num_workers:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_queue_idx_cycle)
            if self._workers_status[wid]:
                break
        else:
            return   # every worker has finished its stream
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _try_get_data(self, timeout=None):
        try:
            if timeout is None:
                timeout = _worker.STATUS_CHECK_INTERVAL
            return True, self._worker_result_queue.get(timeout=timeout)
        except queue.Empty:
            failed = [w for w, on in zip(self._workers, self._workers_status) if on and not w.is_alive()]
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
            return False, None

    def _get_data(self):
        if self._shutdown:
            raise RuntimeError("DataLoader iterator used after its workers were shut down")
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if ok:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            ok, data = self._try_get_data()
            if ok:
                return data

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break   # arrived, or its worker may still answer
                    del self._task_info[self._rcvd_idx]   # sent to a worker whose stream had ended
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process_data(data)
            idx, kind, payload = self._get_data()
            self._tasks_outstanding -= 1
            if kind == "stop":
                if self._persistent_workers:
                    self._workers_status[payload] = False
                else:
                    self._mark_worker_as_unavailable(payload)
                self._try_put_index()
                continue
            if kind in ("batch", "error"):
                kind, payload = self._receive(idx, kind, payload)
            if idx != self._rcvd_idx:
                self._task_info[idx] += ((kind, payload),)
            else:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data((kind, payload))

    def _receive(self, idx, kind, payload):
        """A batch mapped (its shared-memory file is gone at once) and rebuilt, or a worker's error unpickled.
        Either can fail here, in the main process (a sample whose class cannot be rebuilt): the failure then
        takes that batch's place, so it is raised in order and the iterator goes on with the next batch."""
        try:
            if kind == "batch":
                return kind, _worker.unpack(payload)
            return kind, pickle.loads(payload)
        except Exception:
            wid = self._task_info.get(idx, (None,))[0]
            what = "a batch" if kind == "batch" else "an error"
            return "error", _worker.ExceptionWrapper(
                where=f"in the main process while unpickling {what} from DataLoader worker process {wid}")

    def _process_data(self, data):
        self._try_put_index()
        kind, payload = data
        if kind == "error":
            payload.reraise()
        return pin_batch(payload) if self._pin_memory else payload

    def _mark_worker_as_unavailable(self, wid):
        self._index_queues[wid].put(None)
        self._workers_status[wid] = False

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        self._finalizer()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
