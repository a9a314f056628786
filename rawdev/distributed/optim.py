"""`torch.distributed.optim`: DistributedOptimizer, which steps the parameters that RRefs point to on the workers
that own them, with the gradients a distributed autograd context gathered there. ZeroRedundancyOptimizer (sharded
optimizer state) is not built."""
from __future__ import annotations

import threading
from typing import Any

from ..refusals import Refused
from .rpc import RRef
from .rpc import context as dctx
from .rpc.api import remote, rpc_async

__all__ = ["DistributedOptimizer", "ZeroRedundancyOptimizer", "PostLocalSGDOptimizer"]

ZeroRedundancyOptimizer = Refused("torch.distributed.optim.ZeroRedundancyOptimizer",
                                  "sharded optimizer state (ZeroRedundancyOptimizer)")
PostLocalSGDOptimizer = Refused("torch.distributed.optim.PostLocalSGDOptimizer", "post-local SGD")


class _LocalOptimizer:
    """The optimizer on one owner, over the parameters it owns; steps with a context's gradients."""

    def __init__(self, optim_cls: Any, rrefs: list[RRef], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.params = [r.local_value() for r in rrefs]
        self.optim = optim_cls(self.params, *args, **kwargs)
        self.lock = threading.Lock()   # trainers may step concurrently: one step at a time, as PyTorch's lock

    def step(self, context_id: int) -> None:
        grads = dctx.find(context_id).grads
        with self.lock:
            saved = [p.grad for p in self.params]
            try:
                for p in self.params:
                    p.grad = grads.get(p)
                self.optim.step()
            finally:
                for p, g in zip(self.params, saved):
                    p.grad = g


def _new_local(optim_cls: Any, rrefs: list[RRef], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _LocalOptimizer:
    return _LocalOptimizer(optim_cls, rrefs, args, kwargs)


def _local_step(opt_rref: RRef, context_id: int) -> None:
    opt_rref.local_value().step(context_id)


class DistributedOptimizer:
    """An optimizer over parameters spread across workers.

    Args:
        optimizer_class: the local optimizer class (e.g. rawdev.optim.SGD), made on each owner.
        params_rref: RRefs to the parameters (from `rpc.RRef(p)` on their owners).
        *args, **kwargs: the optimizer's arguments (lr=...).

    Example:
        >>> opt = DistributedOptimizer(rawdev.optim.SGD, param_rrefs, lr=0.05)  # doctest: +SKIP
        >>> with dist_autograd.context() as cid:  # doctest: +SKIP
        ...     dist_autograd.backward(cid, [loss]); opt.step(cid)
    """

    def __init__(self, optimizer_class: Any, params_rref: list[RRef], *args: Any, **kwargs: Any) -> None:
        by_owner: dict[Any, list[RRef]] = {}
        for r in params_rref:
            by_owner.setdefault(r.owner(), []).append(r)
        self.remote_optimizers = [remote(owner, _new_local, args=(optimizer_class, rrefs, args, kwargs))
                                  for owner, rrefs in by_owner.items()]

    def step(self, context_id: int) -> None:
        """One step on every owner with the gradients of `context_id`; returns when all are done."""
        dctx.find(context_id)
        futs = [rpc_async(r.owner(), _local_step, args=(r, context_id)) for r in self.remote_optimizers]
        errors = []
        for f in futs:
            try:
                f.wait()
            except Exception as e:   # every owner's step is awaited before the first error is raised
                errors.append(e)
        if errors:
            raise errors[0]
