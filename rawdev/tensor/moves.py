"""Moving tensors between host and device: the plan and the commit of module moves, single-tensor moves,
batched state_dict reads and load_state_dict's batched device writes.

Its one job is deciding what moves and switching tensors over; the bytes are moved by
rawdev.runtime.transfer, which never sees a Tensor. A move is all-or-nothing and costs one copy:
  1. plan   : every tensor that must move, its owner tag ("0.weight", "0.weight.grad"), its target dtype,
              the cast of its host bytes, and the tensor its bytes are read from (a strided cuda view is
              first made contiguous on the device);
  2. place  : rawdev.runtime.transfer: host -> device, upload_arena (one pinned staging buffer, one arena,
              one cuMemcpyHtoDAsync); device -> host, download_ranges (one DtoH per source buffer);
  3. commit : only when every allocation and copy has succeeded do the tensors switch storage
              (Tensor._set_cuda / Tensor._set_cpu).
A failure in step 2 frees what step 2 allocated and raises; no tensor has changed.

model.cuda() to the driver's copy call, one job per file: nn/module.py (which tensors a module has) ->
tensor/moves.py (plan and commit) -> runtime/transfer.py (staging, arena, one copy) -> runtime/memory.py
(the copy helper) -> runtime/seam.py (the checked driver call).
"""

import numpy as np

from .. import dtypes as _dt
from ..device import CPU, as_device
from ..runtime import memory, transfer
from ..runtime.trace import fmt_bytes
from .core import Tensor
from .host_alloc import check_host_shape

__all__ = ["move_module", "transfer_tensor", "move_tensors", "to_host_arrays",
           "cuda_available", "NO_GPU_HINT", "stage_load"]

NO_GPU_HINT = ("model.cuda(): no CUDA GPU is available, so the model stays on the cpu. To run on rawdev's "
               "simulated GPU, set RAWDEV_DRIVER=sim (or call rawdev.use_driver('sim') before the first CUDA "
               "call); model.to('cuda') raises NoDeviceError instead of falling back.")


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


def _context(what, items, dev):
    """The error context of a move of items to dev, for rawdev.runtime.transfer (indices into items)."""
    return transfer.move_context(what, dev, [it.nbytes for it in items], lambda i: items[i].describe())


# ----------------------------------------------------------------------------- host -> device
def _upload(items, dev, what):
    """Place items' host arrays (item.host) in one new arena on dev. Returns the arena; sets item.offset."""
    parts = [(it.name, np.ascontiguousarray(it.host).reshape(-1).view(np.uint8)) for it in items]
    arena, offsets = transfer.upload_arena(_rdev(dev), parts, what, describe=lambda i: items[i].describe(),
                                           context=_context(what, items, dev))
    for it, off in zip(items, offsets):
        it.offset = off
    return arena


# ----------------------------------------------------------------------------- device -> host
def _download(items, what, non_blocking):
    """Read the cuda items' bytes (from item.src) into host arrays (item.host). Returns [(event, pinned buffer)]
    per item: non-blocking, item.host is a view of a pinned buffer that the pending event will fill;
    blocking, a private copy and (None, None)."""
    for dev in {it.t.device for it in items}:
        _rdev(dev)  # a missing GPU says so, with the fix
    ranges = [(it.src._buf, it.src._offset, it.src.nbytes, it.name) for it in items]
    got = transfer.download_ranges(ranges, what, non_blocking, describe=lambda i: items[i].describe(),
                                   context=_context(what, items, CPU))
    pending = []
    for it, (arr, ev, pinned) in zip(items, got):
        it.host = arr.view(it.src.dtype.storage).reshape(tuple(it.src.shape))
        pending.append((ev, pinned))
    return pending


# ----------------------------------------------------------------------------- the move itself
def _prepare(items, dev, non_blocking, what):
    """Do every allocation and copy of the move; return a commit function. Raises with nothing changed."""
    to_cuda = dev.type == "cuda"
    cuda_src = [it for it in items if it.t.is_cuda]
    pending = {}
    for it in cuda_src:   # before any allocation: a cpu copy numpy cannot hold fails with nothing to undo
        check_host_shape(it.t.shape, it.t.dtype.storage)
    if cuda_src:
        # Device -> host first (to the cpu, to another device, or for a cast: no cast kernel yet).
        blocking = to_cuda or not non_blocking
        for it, (ev, staging) in zip(cuda_src, _download(cuda_src, what, not blocking)):
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
def stage_load(dev, entries):
    """Stage load_state_dict's incoming tensors for cuda targets on dev: [(target, source, key)].

    Every source is placed, in the target's dtype, in one new arena on dev (host sources through one pinned
    staging buffer and one HtoD copy; sources already on dev in the target's dtype by device-to-device
    copies into the arena). Nothing a caller can see changes here; on failure the arena is freed and the
    error names the step and the tensor. Returns commit(): switches every target to its staged bytes
    (Parameter objects keep living; the old storage is freed when nothing else holds it); commit.abort()
    frees the staged arena instead.
    """
    rdev = _rdev(dev)
    host_named = [(key, src) for target, src, key in entries if not _same_place(target, src)]
    host_arrays = dict(zip((id(src) for _, src in host_named), (a for _, a in to_host_arrays(host_named))))
    parts = []
    for target, src, key in entries:
        if _same_place(target, src):
            src = src if src.is_contiguous() else src._contiguous_copy(f"{key} (contiguous copy)")
            parts.append((key, transfer.DeviceSource(src.data_ptr(), target.nbytes), src))
            continue
        arr = host_arrays[id(src)]
        if src.dtype is not target.dtype:
            arr = _dt.convert_storage(arr, src.dtype, target.dtype)
        parts.append((key, np.ascontiguousarray(arr).reshape(-1).view(np.uint8), src))

    def describe(i):
        t = entries[i][0]
        return f"'{entries[i][2]}' ({'x'.join(map(str, t.shape)) or 'scalar'} {t.dtype.name}, {fmt_bytes(t.nbytes)})"
    context = transfer.move_context("load_state_dict", dev, [t.nbytes for t, _, _ in entries], describe)
    arena, offsets = transfer.upload_arena(rdev, [(k, d) for k, d, _ in parts], "load_state_dict",
                                           describe=describe, context=context)

    def swap(target, off):
        target._set_cuda(arena, off, target.shape, target.dtype, dev)

    def commit():
        # In place, as PyTorch's copy_ (pointers a captured graph or a view holds stay valid): one device copy
        # per run of targets laid out as they were staged (one in all for a model moved here as an arena).
        runs, in_place = _copy_runs(entries, offsets), set()
        try:
            for dst, src_off, nbytes, members in runs:
                memory.copy_dtod(dst, arena.ptr + src_off, nbytes, stream=rdev.compute_stream,
                                 owner=members[0][2] if len(members) == 1 else "load_state_dict")
                in_place.update(id(m[0]) for m in members)
        except Exception as e:   # the targets not yet written switch to their staged bytes: the load completes
            import warnings
            warnings.warn(f"load_state_dict: copying into the model's storage failed ({e}); the tensors not yet "
                          f"written now use the staged copy (their data_ptr changes)", RuntimeWarning, stacklevel=3)
        for (target, _, _), off in zip(entries, offsets):
            if id(target) not in in_place:
                swap(target, off)
            target._bump_version()
        if len(in_place) == len(entries):
            try:
                arena.free(stream=rdev.compute_stream)   # after the copies, in stream order
            except Exception:
                pass   # stays owned by its finalizer

    def abort():
        arena.free()
    commit.abort = abort
    return commit


def _copy_runs(entries, offsets):
    """[(device pointer, staged byte offset, nbytes, members)]: contiguous targets grouped into runs whose
    spacing in their buffer equals their spacing in the staging arena, so each run is one copy."""
    order = sorted(((t, off, key) for (t, _, key), off in zip(entries, offsets) if t.is_contiguous() and t.nbytes),
                   key=lambda e: (id(e[0]._buf), e[0].data_ptr()))
    runs = []
    for t, off, key in order:
        ptr = t.data_ptr()
        if runs:
            dst, soff, n, members = runs[-1]
            last = members[-1][0]
            if last._buf is t._buf and ptr - dst == off - soff and ptr >= dst + n:
                runs[-1] = (dst, soff, ptr + t.nbytes - dst, members + [(t, off, key)])
                continue
        runs.append((ptr, off, t.nbytes, [(t, off, key)]))
    return runs


def _same_place(target, src):
    return src.is_cuda and src.device == target.device and src.dtype is target.dtype
