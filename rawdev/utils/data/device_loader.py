"""DeviceLoader: batches on the device, the host-to-device copy of the next batch overlapping the current
batch's compute.

Pipeline, per batch k (cuda):
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

from ...device import as_device
from ...tensor.core import Tensor
from ._collate import _from_array
from .dataloader import DataLoader
from .dataset import TensorDataset

__all__ = ["DeviceLoader"]


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
        from ...runtime import memory
        from ...tensor.cuda_io import runtime_device
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
        from ...tensor.cuda_io import runtime_device
        buf = pending[4]
        buf.free(stream=runtime_device(self.device).copy_stream)

    def _hand_out(self, pending):
        from ...tensor.cuda_io import runtime_device
        outs, done, single, as_list, _ = pending
        runtime_device(self.device).compute_stream.wait_event(done)
        if single:
            return outs[0]
        return outs if as_list else tuple(outs)
