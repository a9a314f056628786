"""default_collate / default_convert (torch.utils.data._utils.collate) and pin_memory of a batch."""
import collections.abc

import numpy as np

from ... import dtypes as _dt
from ...tensor.core import Tensor

__all__ = ["default_collate", "default_convert", "pin_batch"]


def _from_array(a):
    a = np.ascontiguousarray(a)
    return Tensor._make_cpu(a, _dt.from_numpy_dtype(a.dtype))


def _stack(tensors):
    dt = tensors[0].dtype
    shape = tuple(tensors[0].shape)
    for i, t in enumerate(tensors):
        if tuple(t.shape) != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 and "
                               f"{list(t.shape)} at entry {i}")
    arr = np.stack([t._host_storage() if not t.is_cuda else t.cpu()._host_storage() for t in tensors])
    return Tensor._make_cpu(np.ascontiguousarray(arr), dt)


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_collate(batch):
    """Stack samples: tensors and numpy arrays -> one tensor, numbers -> a tensor (int64 / float64 / bool),
    strings -> a list, dicts/namedtuples keep their type, tuples/lists -> a list of collated fields."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack(batch)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OSUV":
            raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                            f"found {elem.dtype}")
        arr = np.stack(batch)
        return Tensor._make_cpu(np.ascontiguousarray(arr), _dt.from_numpy_dtype(arr.dtype))
    if isinstance(elem, np.generic) and elem.dtype.kind in "biuf":
        arr = np.array(batch)
        return Tensor._make_cpu(arr, _dt.from_numpy_dtype(arr.dtype))
    if isinstance(elem, bool):
        return Tensor._make_cpu(np.array(batch, np.bool_), _dt.bool)
    if isinstance(elem, int):
        return Tensor._make_cpu(np.array(batch, np.int64), _dt.int64)
    if isinstance(elem, float):
        return Tensor._make_cpu(np.array(batch, np.float64), _dt.float64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        out = {k: default_collate([b[k] for b in batch]) for k in elem}
        try:
            return type(elem)(out) if type(elem) is not dict else out
        except TypeError:
            return out
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        n = len(elem)
        if not all(len(b) == n for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]   # a list for tuples too, as PyTorch's
    raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(elem)}")


def default_convert(data):
    """batch_size=None: samples as they are, numpy arrays as tensors, tuples as lists (PyTorch's)."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        return _from_array(data)
    if isinstance(data, np.generic) and data.dtype.kind in "biuf":
        return _from_array(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (tuple, list)):
        return [default_convert(d) for d in data]
    return data


# ----------------------------------------------------------------------------- pin_memory
def _map(x, fn):
    """x with fn applied to every Tensor inside tuples/lists/dicts (types kept; tuples of a batch stay tuples)."""
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, collections.abc.Mapping):
        return {k: _map(v, fn) for k, v in x.items()}
    if _is_namedtuple(x):
        return type(x)(*(_map(v, fn) for v in x))
    if isinstance(x, tuple):
        return tuple(_map(v, fn) for v in x)
    if isinstance(x, list):
        return [_map(v, fn) for v in x]
    if hasattr(x, "pin_memory") and callable(x.pin_memory):   # a custom batch type, as PyTorch
        return x.pin_memory()
    return x


def _tensors(x, out):
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, collections.abc.Mapping):
        for v in x.values():
            _tensors(v, out)
    elif isinstance(x, (tuple, list)):
        for v in x:
            _tensors(v, out)
    return out


def pinned_views(arrays, owner="DataLoader pinned batch"):
    """Copies of host arrays in ONE page-locked buffer (cuMemHostAlloc): [array view of it]. Each view keeps
    the buffer alive; it is freed when the last one goes."""
    from ...runtime import memory
    offs, total = [], 0
    for a in arrays:
        offs.append(total)
        total = memory.align(total + a.nbytes)
    buf = memory.PinnedBuffer(max(total, 1), owner=owner)
    out = []
    for a, off in zip(arrays, offs):
        v = buf.array[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
        v[...] = a
        out.append(v)
    return out


def pin_batch(batch):
    """The batch with every cpu tensor copied into pinned host memory (one buffer per batch), so that
    `.to('cuda', non_blocking=True)` copies it asynchronously. cuda tensors and non-tensors are kept."""
    host = [t for t in _tensors(batch, []) if not t.is_cuda]
    if not host:
        return _map(batch, lambda t: t)
    arrays = [np.ascontiguousarray(t._host_storage()) for t in host]
    views = dict(zip((id(t) for t in host), pinned_views(arrays)))

    def pin(t):
        v = views.get(id(t))
        return t if v is None else Tensor._make_cpu(v, t.dtype)
    return _map(batch, pin)


def is_pinned(t):
    """Whether a cpu tensor's storage is page-locked host memory (cuPointerGetAttributes says HOST)."""
    from ...runtime import memory
    if t.is_cuda:
        return False
    arr = t._host_storage()
    if arr.size == 0:
        return False
    return memory.pointer_attributes(arr.ctypes.data)["MEMORY_TYPE"] == 1
