"""torch.nn.parallel.DistributedDataParallel on rawdev.distributed: one process per rank, each with a replica of
the module; gradients are averaged across ranks during backward, bucket by bucket, as each bucket's last
gradient is accumulated (post-accumulate-grad hooks), so every replica steps with the same gradients."""
import contextlib

from ... import distributed as dist
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...ops.join import cat
from ...tensor.factory import tensor, zeros_like
from ..module import Module

__all__ = ["DistributedDataParallel"]

_MiB = 1024 * 1024
_FIRST_BUCKET_BYTES = 1 * _MiB      # PyTorch's: a small first bucket starts communication early in backward


def _tensors(obj):
    if hasattr(obj, "grad_fn"):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)


def _used_parameters(outputs):
    """ids of the leaf tensors the outputs' autograd graph reaches (their AccumulateGrad nodes)."""
    stack = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
    used = {id(t) for t in _tensors(outputs) if t.grad_fn is None and t.requires_grad}
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            used.add(id(var))
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return used


def _nbytes(p):
    return p.numel() * p.element_size()


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel: data parallel training across the ranks of a process group.

    At wrap, rank 0's parameters and buffers are broadcast to every rank. In backward each gradient, once
    accumulated, marks its parameter ready; the parameters are grouped in buckets (reverse registration order,
    capped at bucket_cap_mb; with the default cap the first bucket is capped at 1 MiB) and a bucket whose
    gradients are all ready is all-reduced (averaged) asynchronously, buckets in order; the last one's hook waits
    for all and writes the averaged gradients back. Buffers are broadcast from rank 0 before each forward
    (broadcast_buffers).

    Args:
        module: the module to replicate (available as .module).
        device_ids, output_device, dim: accepted for PyTorch's signature; the module stays where it is.
        broadcast_buffers: broadcast rank 0's buffers at each forward.
        process_group: the group to average over (None: the default group).
        bucket_cap_mb: the bucket size in MiB (default 25).
        find_unused_parameters: walk the forward's autograd graph to find parameters that will get no gradient
            and count them as ready (without it, such parameters make the next forward raise naming them).
        gradient_as_bucket_view, static_graph: accepted; gradients are written back into .grad.

    Example:
        >>> dist.init_process_group("gloo")
        >>> model = nn.parallel.DistributedDataParallel(Net())
        >>> model(x).sum().backward()          # .grad is the average over the ranks
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None):
        super().__init__()
        self.world_size = dist.get_world_size(process_group)
        self.module = module
        self.process_group = process_group
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap_default = bucket_cap_mb is None
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * _MiB)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._buckets = self._make_buckets()
        self._bucket_of = {i: b for b, idxs in enumerate(self._buckets) for i in idxs}
        self._prepared = False       # a forward set up a reduction
        self._started = False        # ... and backward has made at least one gradient ready
        self._sync_params_and_buffers()
        self._handles = [p.register_post_accumulate_grad_hook(lambda _p, i=i: self._on_grad(i))
                         for i, p in enumerate(self._params)]

    def _make_buckets(self):
        buckets, cur, size = [], [], 0
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            # as PyTorch: the small first bucket only with the default cap; a given bucket_cap_mb caps every bucket
            first = not buckets and self.bucket_bytes_cap_default
            cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap) if first else self.bucket_bytes_cap
            if cur and (size + _nbytes(p) > cap or p.dtype != self._params[cur[0]].dtype
                        or p.device != self._params[cur[0]].device):
                buckets.append(cur)
                cur, size = [], 0
            cur.append(i)
            size += _nbytes(p)
        if cur:
            buckets.append(cur)
        return buckets

    def _sync_params_and_buffers(self):
        src = dist.get_global_rank(self.process_group, 0) if self.process_group is not None else 0
        for p in self.module.parameters():
            dist.broadcast(p.detach(), src=src, group=self.process_group)
        self._sync_buffers()

    def _sync_buffers(self):
        src = dist.get_global_rank(self.process_group, 0) if self.process_group is not None else 0
        for b in self.module.buffers():
            dist.broadcast(b.detach(), src=src, group=self.process_group)

    def _unfinished_error(self):
        rank = dist.get_rank(self.process_group)
        missing = [i for i in range(len(self._params)) if i not in self._ready]
        return RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new one. This error "
            "indicates that your module has parameters that were not used in producing loss. You can enable unused "
            "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
            "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
            "participate in calculating loss.\n"
            f"Parameter indices which did not receive grad for rank {rank}: {' '.join(map(str, missing))}\n"
            f"Parameters which did not receive grad for rank {rank}: "
            f"{', '.join(self._names[i] for i in missing)}")

    def forward(self, *inputs, **kwargs):
        if self._started:
            raise self._unfinished_error()
        if self.broadcast_buffers and self.world_size > 1:
            self._sync_buffers()
        out = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare(out)
        return out

    def _prepare(self, out):
        # as PyTorch's reducer: only a reduction that backward has started must finish before the next forward
        # (a forward whose output is never backpropagated, e.g. evaluation with grad enabled, is dropped)
        self._prepared = True
        self._ready = set()
        self._next_bucket = 0
        self._works = []
        self._locally_used = None
        if self.find_unused_parameters:
            used = _used_parameters(out)
            self._locally_used = [id(p) in used for p in self._params]
            self._ready = {i for i, u in enumerate(self._locally_used) if not u}

    def _on_grad(self, i):
        if not self._prepared or not self.require_backward_grad_sync:
            return
        self._started = True
        self._ready.add(i)
        self._launch_ready()

    def _launch_ready(self):
        while self._next_bucket < len(self._buckets):
            idxs = self._buckets[self._next_bucket]
            if not all(i in self._ready for i in idxs):
                break
            flat = cat([(self._params[i].grad if self._params[i].grad is not None
                         else zeros_like(self._params[i])).detach().reshape(-1) for i in idxs])
            self._works.append((idxs, flat, dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,
                                                            async_op=True)))
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets):
            self._finish()

    def _finish(self):
        globally_used = None
        if self._locally_used is not None:
            mask = tensor([1.0 if u else 0.0 for u in self._locally_used])
            dist.all_reduce(mask, group=self.process_group)
            globally_used = [v > 0 for v in mask.tolist()]
        with no_grad():
            for idxs, flat, work in self._works:
                work.wait()
                off = 0
                for i in idxs:
                    p = self._params[i]
                    n = p.numel()
                    avg = flat[off:off + n].view_as(p)
                    off += n
                    if p.grad is not None:
                        p.grad.copy_(avg)
                    elif globally_used is None or globally_used[i]:
                        p.grad = avg.clone()
        self._works = []
        self._prepared = self._started = False

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside the block; the first backward after it averages the sum.

        Example:
            >>> with ddp.no_sync():
            ...     ddp(x1).sum().backward()
            >>> ddp(x2).sum().backward()      # averages the gradients of both batches
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
