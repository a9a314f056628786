"""Data to the device: TensorDataset, DataLoader (batching, shuffling with a generator, drop_last) and
DeviceLoader, which overlaps the host-to-device copy of the next batch with the current batch's compute.

DeviceLoader pipeline, per batch k (cuda):
  1. the batch's tensors are packed into a pinned staging buffer (two, used in turn),
  2. one device buffer is allocated for the whole batch, ordered on the compute stream (so it is freed
     there too, after the kernels that read it); the copy stream waits for that allocation,
  3. one cuMemcpyHtoDAsync on the copy stream, then an event on the copy stream,
  4. batch k+1 is issued (steps 1-3) before batch k is handed out; handing out batch k makes the
     compute stream wait on batch k's event (cuStreamWaitEvent: no host synchronization).
  5. leaving the loop early frees the batch issued but not handed out on the copy stream, after its copy
     (freed on the compute stream, the pool could hand it to the next allocation there at once).
A staging buffer is refilled only after the event of the copy that last read it has completed.
"""
import numpy as np

from .. import dtypes as _dt
from .. import random as _random
from ..device import as_device
from ..tensor.core import Tensor

__all__ = ["Dataset", "TensorDataset", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "DataLoader", "DeviceLoader", "default_collate", "default_convert"]


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class TensorDataset(Dataset):
    """Samples are tuples of tensors[i] (each tensor indexed along its first dimension)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].size(0)
        if any(t.size(0) != n for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tuple(tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class Sampler:
    def __init__(self, data_source=None):
        pass


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation each epoch, drawn from `generator` (a rawdev.Generator; default: the global one)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = generator

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        g = (self.generator or _random.default_generator).np
        n = len(self.data_source)
        if self.replacement:
            return iter(g.integers(0, n, self.num_samples).tolist())
        reps, rem = divmod(self.num_samples, n)
        idx = [g.permutation(n) for _ in range(reps)] + ([g.permutation(n)[:rem]] if rem else [])
        return iter(np.concatenate(idx).tolist() if idx else [])

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


def _stack(tensors):
    dt = tensors[0].dtype
    arr = np.stack([t._host_storage() if not t.is_cuda else t.cpu()._host_storage() for t in tensors])
    return Tensor._make_cpu(np.ascontiguousarray(arr), dt)


def default_collate(batch):
    """Stack samples: tensors -> one tensor, numbers -> a tensor, tuples/lists/dicts recursively."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack(batch)
    if isinstance(elem, np.ndarray):
        arr = np.stack(batch)
        return Tensor._make_cpu(np.ascontiguousarray(arr), _dt.from_numpy_dtype(arr.dtype))
    if isinstance(elem, bool):
        return Tensor._make_cpu(np.array(batch, np.bool_), _dt.bool)
    if isinstance(elem, (int, np.integer)):
        return Tensor._make_cpu(np.array(batch, np.int64), _dt.int64)
    if isinstance(elem, (float, np.floating)):
        return Tensor._make_cpu(np.array(batch, np.float64), _dt.float64)
    if isinstance(elem, dict):
        return {k: default_collate([b[k] for b in batch]) for k in elem}
    if isinstance(elem, (tuple, list)):
        return [default_collate(list(s)) for s in zip(*batch)]   # a list for tuples too, as PyTorch's
    return batch


def default_convert(data):
    """batch_size=None: samples as they are, numpy arrays as tensors, tuples as lists (PyTorch's)."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        return _from_array(data)
    if isinstance(data, dict):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, (tuple, list)):
        return [default_convert(d) for d in data]
    return data


class DataLoader:
    """Batches of a dataset on the host. shuffle draws a permutation per epoch from `generator`."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 generator=None, **kwargs):
        if num_workers:
            raise NotImplementedError("rawdev's DataLoader loads in the main process (num_workers=0)")
        self.dataset, self.batch_size, self.drop_last, self.generator = dataset, batch_size, drop_last, generator
        self.pin_memory = pin_memory
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            self.batch_size, self.drop_last = None, False
        elif sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.collate_fn = collate_fn or default_collate
        self._user_collate = collate_fn is not None
        self._fast = isinstance(dataset, TensorDataset) and collate_fn is None

    def __len__(self):
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)

    def __iter__(self):
        if self.batch_sampler is None:
            convert = self.collate_fn if self._user_collate else default_convert
            for i in self.sampler:
                yield convert(self.dataset[i])
            return
        for idx in self.batch_sampler:
            if self._fast:   # TensorDataset: one gather per tensor instead of stacking samples
                ix = np.asarray(idx, dtype=np.int64)
                yield [_gather(t, ix) for t in self.dataset.tensors]
            else:
                yield self.collate_fn([self.dataset[i] for i in idx])


def _gather(t, ix):
    if t.is_cuda:
        raise NotImplementedError("DataLoader over cuda tensors: keep the dataset on the host and use DeviceLoader")
    return Tensor._make_cpu(np.ascontiguousarray(t._host_storage()[ix]), t.dtype)


class DeviceLoader:
    """Batches on `device`, the copy of batch k+1 overlapping the compute on batch k.

    DeviceLoader(X, Y, batch_size=128, shuffle=True, device=dev)   # arrays or cpu tensors
    DeviceLoader(data_loader, device=dev)                           # any iterable of host batches
    """

    def __init__(self, *data, batch_size=1, shuffle=False, drop_last=False, generator=None, device=None,
                 names=None):
        if len(data) == 1 and not isinstance(data[0], (Tensor, np.ndarray)):
            self.loader = data[0]
        else:
            tensors = [d if isinstance(d, Tensor) else _from_array(d) for d in data]
            self.loader = DataLoader(TensorDataset(*tensors), batch_size=batch_size, shuffle=shuffle,
                                     drop_last=drop_last, generator=generator)
        self.device = as_device(device) if device is not None else as_device("cpu")
        self.names = names
        self._staging = [None, None]      # pinned buffers, used in turn
        self._staging_done = [None, None]  # event of the copy that last read each one

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        if self.device.type != "cuda":
            yield from self.loader
            return
        it = iter(self.loader)
        try:
            nxt = self._issue(next(it), 0)
        except StopIteration:
            return
        k = 0
        try:
            while nxt is not None:
                cur = nxt
                try:
                    nxt = self._issue(next(it), k + 1)     # batch k+1's copy is queued before batch k is used
                except StopIteration:
                    nxt = None
                yield self._hand_out(cur)
                k += 1
        finally:
            if nxt is not None:   # left early: a batch was issued and never handed out
                self._drop(nxt)

    def _issue(self, batch, k):
        from ..runtime import memory
        from ..tensor.cuda_io import runtime_device
        single = isinstance(batch, Tensor)
        items = [batch] if single else list(batch)
        rdev = runtime_device(self.device)
        layout, total = [], 0
        for t in items:
            if not isinstance(t, Tensor):
                t = _from_array(np.asarray(t))
            if t.is_cuda:
                raise ValueError("DeviceLoader expects host batches")
            src = t._host_storage()
            layout.append((t, src, total))
            total = memory.align(total + src.nbytes)
        slot = k % 2
        if self._staging_done[slot] is not None:
            self._staging_done[slot].synchronize()        # the copy that last read this buffer is done
        if self._staging[slot] is None or self._staging[slot].nbytes < total:
            self._staging[slot] = memory.PinnedBuffer(max(total, 1), owner=f"DeviceLoader staging {slot}")
        stage = self._staging[slot].array
        for _t, src, off in layout:
            stage[off:off + src.nbytes] = src.reshape(-1).view(np.uint8)
        names = self.names or (["input", "target"] if len(items) == 2 else [f"[{i}]" for i in range(len(items))])
        buf = memory.DeviceBuffer.alloc(rdev, max(total, 1), stream=rdev.compute_stream, owner=f"batch {k}")
        for (_t, src, off), name in zip(layout, names):
            buf.tag(off, src.nbytes, f"batch {k} {name}")
        rdev.copy_stream.wait_event(rdev.compute_stream.record_event())   # the allocation is ordered on compute
        if total:
            memory.copy_htod(buf.ptr, self._staging[slot].ptr, total, stream=rdev.copy_stream, owner=f"batch {k}")
        done = rdev.copy_stream.record_event()
        self._staging_done[slot] = done
        outs = [Tensor._make_cuda(buf, off, t.shape, t.dtype, self.device) for t, _, off in layout]
        return outs, done, single, isinstance(batch, list), buf

    def _drop(self, pending):
        """Free a batch that was never handed out. Its copy may still be writing into it, so the free goes on the
        copy stream, after that copy: on the compute stream the pool could hand the memory to the next
        allocation there while the copy stream still writes it."""
        from ..tensor.cuda_io import runtime_device
        buf = pending[4]
        buf.free(stream=runtime_device(self.device).copy_stream)

    def _hand_out(self, pending):
        from ..tensor.cuda_io import runtime_device
        outs, done, single, as_list, _ = pending
        runtime_device(self.device).compute_stream.wait_event(done)
        if single:
            return outs[0]
        return outs if as_list else tuple(outs)


def _from_array(a):
    a = np.ascontiguousarray(a)
    return Tensor._make_cpu(a, _dt.from_numpy_dtype(a.dtype))
