"""Moving tensors between host and device: module moves, single-tensor moves, batched loads.

A move is all-or-nothing and costs one copy:
  1. plan   : every tensor that must move, its owner tag ("0.weight", "0.weight.grad") and its target dtype;
  2. place  : host -> device: pack all bytes at ARENA_ALIGN offsets into one pinned staging buffer,
              allocate one device arena (in compute-stream order), one cuMemcpyHtoDAsync on the copy
              stream (after an event marking the allocation), the compute stream waits on an event; device -> host: one pinned buffer, one cuMemcpyDtoHAsync per source
              buffer (one for a module that was moved here as an arena);
  3. commit : only when every allocation and copy has succeeded do the tensors switch storage.
A failure in step 2 frees what step 2 allocated and raises; no tensor has changed.

Lifetimes: the staging buffer, the source arrays and the old device buffers are handed to
memory.keep_alive on the copy stream, so they live until the copy is known complete; that is what
makes non_blocking=True safe.
"""

import os
import weakref

import numpy as np

from .. import dtypes as _dt
from ..device import CPU, as_device
from ..errors import CudaError, IllegalAddressError, OutOfMemoryError
from ..runtime import memory
from ..runtime.trace import fmt_bytes
from .core import Tensor

__all__ = ["move_module", "transfer_tensor", "move_tensors", "to_host_arrays",
           "cuda_available", "release_staging", "NO_GPU_HINT", "load_into_device"]

NO_GPU_HINT = ("model.cuda(): no CUDA GPU is available, so the model stays on the cpu. To run on rawdev's "
               "simulated GPU, set RAWDEV_DRIVER=sim (or call rawdev.use_driver('sim') before the first CUDA "
               "call); model.to('cuda') raises NoDeviceError instead of falling back.")

# Device->host copies of ranges of one buffer are merged when the gap between them is below this:
# copying a little unused memory is cheaper than another driver call.
_MERGE_GAP = 1 << 20


# Pinned staging buffers are reused across moves, as PyTorch's caching host allocator reuses pinned
# blocks: cuMemHostAlloc of a large buffer costs more than the copy it serves. One idle buffer per
# device is kept (the larger one, up to this many bytes) and handed out again only once the event
# after its last copy has completed. release_staging() gives it back to the driver.
STAGING_CACHE_MAX = int(os.environ.get("RAWDEV_STAGING_CACHE_BYTES", str(2 << 30)))
_staging = weakref.WeakKeyDictionary()   # runtime Device -> (PinnedBuffer, Event | None)


def _acquire_staging(rdev, nbytes, owner):
    entry = _staging.get(rdev)
    if entry is not None:
        buf, ev = entry
        if buf.nbytes >= nbytes and (ev is None or ev.query()):
            del _staging[rdev]
            return buf
    return memory.PinnedBuffer(nbytes, owner=owner)


def _offer_staging(rdev, buf, ev=None):
    """Keep buf for the next move (ev: the event after its last copy). A buffer not kept is dropped; one
    still being copied from is held by memory.keep_alive until its copy completes."""
    if not 0 < buf.nbytes <= STAGING_CACHE_MAX:
        return
    entry = _staging.get(rdev)
    if entry is None or entry[0].nbytes <= buf.nbytes:
        _staging[rdev] = (buf, ev)


def release_staging():
    """Drop the cached pinned staging buffers (rawdev.cuda.empty_cache can call this)."""
    _staging.clear()


def cuda_available():
    from ..runtime import is_available
    return is_available()


def _rdev(dev):
    from .cuda_io import runtime_device
    return runtime_device(dev)


class _Item:
    """One tensor of a move: where it is, what it becomes, what the memory tool calls it."""
    __slots__ = ("t", "src", "name", "dst_dtype", "nbytes", "offset", "host")

    def __init__(self, t, name, dst_dtype):
        self.t, self.name, self.dst_dtype = t, name, dst_dtype
        # the tensor whose bytes are read: a strided cuda view is first made contiguous on the device (a
        # moved view becomes a contiguous tensor of its own, as PyTorch's safetensors path saves it)
        self.src = t if not t.is_cuda or t.is_contiguous() else t._contiguous_copy(f"{name} (contiguous copy)")
        self.nbytes = t.numel() * dst_dtype.itemsize
        self.offset, self.host = 0, None

    def describe(self):
        return f"'{self.name}' ({'x'.join(map(str, self.t.shape)) or 'scalar'} {self.dst_dtype.name}, " \
               f"{fmt_bytes(self.nbytes)})"


def _context(what, items, dev, step):
    total = sum(memory.align(i.nbytes) for i in items)
    names = ", ".join(i.describe() for i in items[:4]) + (f", … {len(items) - 4} more" if len(items) > 4 else "")
    return f"moving {what} to {dev} ({len(items)} tensors, {fmt_bytes(total)}: {names}): {step}"


def _reraise(e, context):
    """Re-raise a driver error with what the move was doing; other errors get a note."""
    if type(e) in (CudaError, OutOfMemoryError, IllegalAddressError):
        inner = f"; {e.context}" if e.context else ""
        raise type(e)(e.call, e.code, e.name, e.description, context + inner, e.detail) from e
    if isinstance(e, CudaError):
        raise e
    e.add_note(context)
    raise e


# ----------------------------------------------------------------------------- host -> device
def _upload(items, dev, what):
    """Place items' host arrays (item.host) in one new arena on dev. Returns the arena; sets item.offset.

    Nothing outside this function sees the arena until it returns; on failure it frees what it made.
    """
    rdev = _rdev(dev)
    off = 0
    for it in items:
        it.offset = off
        off += memory.align(it.nbytes)
    total = off
    staging = arena = None
    copied = False
    step = "allocating the pinned staging buffer"
    try:
        staging = _acquire_staging(rdev, total, f"staging for {what}")
        step = "packing the staging buffer"
        arr = staging.array
        for it in items:
            if it.nbytes:
                step = it  # described only if something fails (a move can have thousands of tensors)
                arr[it.offset:it.offset + it.nbytes] = it.host.reshape(-1).view(np.uint8)
        step = f"allocating the {fmt_bytes(total)} device arena"
        # Allocated in the compute stream's order, so that its eventual free is ordered after the
        # kernels that use it; the copy stream then waits for that point before writing into it.
        arena = memory.DeviceBuffer.alloc(rdev, total, stream=rdev.compute_stream, owner=what)
        for it in items:
            arena.tag(it.offset, it.nbytes, it.name)
        step = "ordering the copy after the arena's allocation"
        rdev.copy_stream.wait_event(rdev.compute_stream.record_event())
        if total:
            step = "copying the staging buffer to the device arena"
            memory.copy_htod(arena.ptr, staging.ptr, total, stream=rdev.copy_stream, owner=what)
            copied = True
        step = "ordering the compute stream after the copy"
        copied_ev = rdev.copy_stream.record_event()
        rdev.compute_stream.wait_event(copied_ev)
        memory.keep_alive(rdev.copy_stream, staging, *[it.host for it in items], event=copied_ev)
        _offer_staging(rdev, staging, copied_ev)
        return arena
    except BaseException as e:
        _undo_upload(rdev, staging, arena, copied)
        if isinstance(step, _Item):
            step = f"packing {step.describe()} into the staging buffer"
        _reraise(e, _context(what, items, dev, step))


def _undo_upload(rdev, staging, arena, copied):
    if copied:  # the copy may still be reading the staging buffer
        try:
            rdev.copy_stream.synchronize()
        except Exception:
            pass
    if arena is not None:
        try:
            arena.free()
        except Exception:
            pass
    if staging is not None:
        staging.free()


# ----------------------------------------------------------------------------- device -> host
def _download(items, what, non_blocking):
    """Read the cuda items' bytes into host arrays (item.host). Non-blocking: item.host are views of one
    pinned buffer that a pending event will fill; returns (event, staging). Blocking: private copies."""
    by_dev = {}
    for it in items:
        by_dev.setdefault(it.t.device, []).append(it)
    pending = []
    for dev, its in by_dev.items():
        pending.append(_download_one_device(dev, its, what, non_blocking))
    return pending


def _download_one_device(dev, items, what, non_blocking):
    rdev = _rdev(dev)
    # Group by source buffer; merge nearby ranges so an arena comes back in one copy.
    by_buf = {}
    for it in items:
        by_buf.setdefault(id(it.src._buf), (it.src._buf, []))[1].append(it)
    spans = []  # (buf, lo, hi, items)
    for buf, its in by_buf.values():
        its.sort(key=lambda i: i.src._offset)
        cur = None
        for it in its:
            lo, hi = it.src._offset, it.src._offset + it.src.nbytes
            if cur and lo - cur[2] <= _MERGE_GAP:
                cur[2] = max(cur[2], hi)
                cur[3].append(it)
            else:
                cur = [buf, lo, hi, [it]]
                spans.append(cur)
    off, layout = 0, []
    for span in spans:
        layout.append(off)
        off += memory.align(span[2] - span[1])
    total = off
    staging, step = None, "allocating the pinned staging buffer"
    try:
        # Non-blocking: the tensors will live in this buffer, so it is their own (never a cached one).
        staging = memory.PinnedBuffer(total, owner=f"{what} on the host") if non_blocking else \
            _acquire_staging(rdev, total, f"staging for {what}")
        step = "ordering the copy stream after the compute stream"
        rdev.copy_stream.wait_event(rdev.compute_stream.record_event())
        for (buf, lo, hi, its), soff in zip(spans, layout):
            if hi > lo:
                step = f"copying {fmt_bytes(hi - lo)} holding {', '.join(i.describe() for i in its[:3])} to the host"
                memory.copy_dtoh(staging.ptr + soff, buf.ptr + lo, hi - lo, stream=rdev.copy_stream,
                                 owner=its[0].name if len(its) == 1 else what)
        step = "recording the copy's completion event"
        done = rdev.copy_stream.record_event()
        # The old device buffers must outlive the copy even when their tensors move on.
        memory.keep_alive(rdev.copy_stream, *[s[0] for s in spans], event=done)
    except BaseException as e:
        if staging is not None:
            try:
                rdev.copy_stream.synchronize()
            except Exception:
                pass
            staging.free()
        _reraise(e, _context(what, items, CPU, step))
    if non_blocking:
        block = staging.array     # the tensors live in pinned memory; reads wait for `done`
    else:
        # One host copy of the whole block frees the pinned buffer at once; the tensors are views of it,
        # as they were views of the arena on the device.
        done.synchronize()
        block = np.array(staging.array[:total], copy=True)
        _offer_staging(rdev, staging)
    for (buf, lo, hi, its), soff in zip(spans, layout):
        for it in its:
            start = soff + it.src._offset - lo
            it.host = block[start:start + it.src.nbytes].view(it.src.dtype.storage).reshape(tuple(it.src.shape))
    return (done, staging) if non_blocking else (None, None)


# ----------------------------------------------------------------------------- the move itself
def _prepare(items, dev, non_blocking, what):
    """Do every allocation and copy of the move; return a commit function. Raises with nothing changed."""
    to_cuda = dev.type == "cuda"
    cuda_src = [it for it in items if it.t.is_cuda]
    pending = {}
    if cuda_src:
        # Device -> host first (to the cpu, to another device, or for a cast: no cast kernel yet).
        blocking = to_cuda or not non_blocking
        for it, (ev, staging) in zip(cuda_src, _expand(cuda_src, _download(cuda_src, what, not blocking))):
            if ev is not None:
                pending[id(it)] = (ev, staging)
    for it in items:
        src_dt = it.t.dtype
        if it.host is None:
            it.host = it.t._host_storage()
        if src_dt is not it.dst_dtype:
            if id(it) in pending:  # a cast needs the bytes now
                pending.pop(id(it))[0].synchronize()
            it.host = _dt.convert_storage(it.host, src_dt, it.dst_dtype)
    if to_cuda:
        arena = _upload(items, dev, what)

        def commit():
            for it in items:
                it.t._set_cuda(arena, it.offset, it.t.shape, it.dst_dtype, dev)
        return commit

    def commit():
        for it in items:
            ev, staging = pending.get(id(it), (None, None))
            it.t._set_cpu(it.host if it.host.flags.c_contiguous else np.ascontiguousarray(it.host), it.dst_dtype,
                          buf=staging, pending=ev)
    return commit


def _expand(cuda_src, per_device):
    """Per-item (event, staging) from _download's per-device results (same device order)."""
    by_dev = {}
    for it in cuda_src:
        by_dev.setdefault(it.t.device, []).append(it)
    result = {}
    for (dev, its), res in zip(by_dev.items(), per_device):
        for it in its:
            result[id(it)] = res
    return [result[id(it)] for it in cuda_src]


def move_tensors(named, device, dtype=None, non_blocking=False, what="tensors"):
    """Move tensors in place: [(name, tensor)] -> device (and dtype for floating ones). One copy."""
    dev = as_device(device)
    items, seen = [], set()
    for name, t in named:
        if t is None or id(t) in seen:
            continue
        seen.add(id(t))
        dst = dtype if (dtype is not None and t.dtype.is_floating_point) else t.dtype
        if t.device != dev or t.dtype is not dst:
            items.append(_Item(t, name, dst))
    if not items:
        if dev.type == "cuda":
            _rdev(dev)  # an explicit move to a missing GPU still raises, even with nothing to move
        return
    _prepare(items, dev, non_blocking, what)()


def module_tensors(module):
    """(owner tag, tensor) for every parameter, buffer and grad: state_dict order, grads last."""
    out, grads = [], []
    for prefix, m in module.named_modules():
        p = prefix + "." if prefix else ""
        for name, param in m._parameters.items():
            if param is not None:
                out.append((p + name, param))
                if param.grad is not None:
                    grads.append((p + name + ".grad", param.grad))
        for name, buf in m._buffers.items():
            if buf is not None:
                out.append((p + name, buf))
    return out + grads


def move_module(module, device, dtype=None, non_blocking=False):
    """Module.to(): parameters, buffers and grads in place, one copy; Parameter objects keep living."""
    dev = as_device(device) if device is not None else None
    named = module_tensors(module)
    if dev is None:  # a dtype-only .to(): each tensor stays where it is
        for d in {t.device for _, t in named}:
            move_tensors([(n, t) for n, t in named if t.device == d], d, dtype, non_blocking,
                         what=type(module).__name__)
        return
    move_tensors(named, dev, dtype, non_blocking, what=type(module).__name__)


def transfer_tensor(t, device, dtype, non_blocking=False):
    """Tensor.to(): a new tensor on device/dtype; t is untouched."""
    dev = as_device(device)
    shadow = Tensor.__new__(Tensor)
    shadow._assign(t)
    shadow._vc, shadow._base, shadow._requires_grad, shadow._grad, shadow.grad_fn = [0], None, False, None, None
    if dev.type == "cuda" and t.is_cpu and not non_blocking:
        # One tensor, blocking: straight from (a private copy of) the host bytes, no pinned staging.
        from .cuda_io import upload
        host = _dt.convert_storage(t._host_storage(), t.dtype, dtype)
        return upload(host, dtype, dev)
    it = _Item(shadow, "tensor", dtype)
    if t.device == dev and t.dtype is dtype:  # copy=True on the same device and dtype
        return t._copy_storage()
    _prepare([it], dev, non_blocking, "tensor")()
    return shadow


def to_host_arrays(named):
    """{name: host storage array} for [(name, tensor)], cuda ones read back in one batched copy."""
    items = [_Item(t, n, t.dtype) for n, t in named if t.is_cuda]
    if items:
        _download(items, "state_dict", non_blocking=False)
    host = {id(it.t): it.host for it in items}
    return [(n, host[id(t)] if t.is_cuda else t._host_storage()) for n, t in named]


# ----------------------------------------------------------------------------- load_state_dict
def load_into_device(dev, entries):
    """Write sources into existing cuda storage: one pinned staging buffer, one HtoD per run of adjacent
    targets (one in all for a model moved here as an arena), on the copy stream between events."""
    rdev = _rdev(dev)
    direct, host_entries, hosts = [], [], []
    for entry in entries:
        target, src, _ = entry
        if src.is_cuda and src.device == target.device and src.dtype is target.dtype:
            direct.append(entry)  # already on the device: a device-side copy
        else:
            host_entries.append(entry)
    named = [(key, src) for _, src, key in host_entries]
    for (target, src, key), (_, arr) in zip(host_entries, to_host_arrays(named)):
        if src.dtype is not target.dtype:
            arr = _dt.convert_storage(arr, src.dtype, target.dtype)
        hosts.append((target, np.ascontiguousarray(arr).reshape(-1).view(np.uint8), key))
    # Runs: targets in one buffer whose gaps are only alignment padding.
    hosts.sort(key=lambda h: (id(h[0]._buf), h[0]._offset))
    runs = []
    for h in hosts:
        t = h[0]
        if runs and runs[-1][0] is t._buf and runs[-1][2] <= t._offset <= memory.align(runs[-1][2]):
            runs[-1][2] = t._offset + t.nbytes
            runs[-1][3].append(h)
        else:
            runs.append([t._buf, t._offset, t._offset + t.nbytes, [h]])
    total = sum(memory.align(r[2] - r[1]) for r in runs)
    if runs:
        staging = _acquire_staging(rdev, total, "staging for load_state_dict")
        rdev.copy_stream.wait_event(rdev.compute_stream.record_event())  # kernels using the old values first
        soff = 0
        for buf, lo, hi, hs in runs:
            for target, data, key in hs:
                start = soff + target._offset - lo
                staging.array[start:start + data.nbytes] = data
            if hi > lo:
                memory.copy_htod(buf.ptr + lo, staging.ptr + soff, hi - lo, stream=rdev.copy_stream,
                                 owner=hs[0][2] if len(hs) == 1 else "load_state_dict")
            soff += memory.align(hi - lo)
        copied_ev = rdev.copy_stream.record_event()
        rdev.compute_stream.wait_event(copied_ev)
        memory.keep_alive(rdev.copy_stream, staging, event=copied_ev)
        _offer_staging(rdev, staging, copied_ev)
    for target, src, key in direct:
        if target.nbytes:
            memory.copy_dtod(target.data_ptr(), src.data_ptr(), target.nbytes, stream=rdev.compute_stream, owner=key)
    for target, _, _ in entries:
        target._bump_version()
