"""Distributed autograd: `context()`, `backward(context_id, roots)` and `get_gradients(context_id)`.

backward runs in the FAST mode PyTorch documents: on each worker, gradients flow from the roots (or from the
tensors a message sent, when a peer returns their gradients) to this worker's leaves in one local pass
(`autograd.grad`, graphs retained until the context ends); parameters accumulate into the context, never into
`.grad`; leaves that arrived by RPC send their gradients back to the worker that sent them, which continues
there, synchronously, before backward returns. See rawdev.distributed.rpc.context for what is recorded.
"""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

from ...autograd import grad as _grad
from ...tensor.core import Tensor
from . import context as dctx
from . import state

__all__ = ["context", "backward", "get_gradients"]

_counter = itertools.count(1)


@contextlib.contextmanager
def context() -> Iterator[int]:
    """A distributed autograd context: RPCs inside it record what backward needs; yields its id.

    Example:
        >>> with dist_autograd.context() as context_id:  # doctest: +SKIP
        ...     loss = rpc.rpc_sync("ps", forward, args=(x,)).sum()
        ...     dist_autograd.backward(context_id, [loss])
    """
    agent = state.agent()
    cid = (agent.info.id << 48) + next(_counter)
    ctx = dctx.create(cid)
    prev = dctx.set_current(ctx)
    try:
        yield cid
    finally:
        dctx.set_current(prev)
        dctx.release(cid)
        for peer in sorted(ctx.peers - {agent.info.id}):
            try:
                from .api import rpc_async
                rpc_async(peer, _release, args=(cid,))
            except RuntimeError:   # the peer has gone: nothing of it to free
                pass


def _release(cid: int) -> None:
    dctx.release(cid)


def _leaves(roots: list[Tensor]) -> list[Tensor]:
    """The leaf tensors requiring grad that the roots' graphs reach (parameters and tensors received by RPC)."""
    seen: set[int] = set()
    out: dict[int, Tensor] = {}
    stack = []
    for r in roots:
        if r.grad_fn is None:
            if r.requires_grad:
                out[id(r)] = r
        else:
            stack.append(r.grad_fn)
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            out[id(var)] = var
            continue
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return list(out.values())


def _run(ctx: dctx.DistContext, outputs: list[Tensor], grads: list[Tensor | None]) -> None:
    """One local pass from `outputs` (with `grads`), then the gradients of received leaves back to their senders."""
    pairs = [(o, g) for o, g in zip(outputs, grads) if o is not None and o.requires_grad]
    if not pairs:
        return
    leaves = _leaves([o for o, _ in pairs])
    if not leaves:
        return
    got = _grad([o for o, _ in pairs], leaves, [g for _, g in pairs], retain_graph=True, allow_unused=True)
    back: dict[tuple[int, int], dict[int, Tensor]] = {}
    for leaf, g in zip(leaves, got):
        if g is None:
            continue
        where = ctx.recv.get(id(leaf))
        if where is None:
            ctx.accumulate(leaf, g.detach())
        else:
            sender, mid, pos = where
            back.setdefault((sender, mid), {})[pos] = g.detach()
    from .api import rpc_sync
    for (sender, mid), by_pos in back.items():
        rpc_sync(sender, _backward_from_message, args=(ctx.id, mid, sorted(by_pos.items())))


def _backward_from_message(cid: int, mid: int, grads: list[tuple[int, Tensor]]) -> None:
    """On the worker that sent message `mid`: continue backward from what it sent, with the gradients returned."""
    ctx = dctx.find(cid)
    sent = ctx.sent.get(mid)
    if sent is None:
        raise RuntimeError(f"distributed autograd: message {mid} of context {cid} is unknown on this worker")
    prev = dctx.set_current(None)   # the gradients sent on from here are plain values, not part of a forward
    try:
        _run(ctx, [sent[pos] for pos, _ in grads], [g for _, g in grads])
    finally:
        dctx.set_current(prev)


def backward(context_id: int, roots: list[Tensor], retain_graph: bool = False) -> None:
    """Run backward from `roots` (scalars) across every worker the context's RPCs reached; gradients of leaves land
    in the context of the worker that owns them (get_gradients), not in `.grad`.

    Args:
        context_id: the id `context()` yielded.
        roots: scalar tensors (each gets gradient 1).
        retain_graph: accepted (graphs are kept until the context ends).
    """
    ctx = dctx.find(context_id)
    for r in roots:
        if r.numel() != 1:
            raise RuntimeError("Distributed autograd: all roots must be scalars (one element), got a tensor of size "
                               f"{list(r.shape)}")
        if not r.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    prev = dctx.set_current(None)
    try:
        _run(ctx, list(roots), [r.detach().new_ones(r.shape) for r in roots])
    finally:
        dctx.set_current(prev)


def get_gradients(context_id: int) -> dict[Tensor, Tensor]:
    """{tensor: gradient} accumulated on this worker by backward passes of the context."""
    ctx = dctx.find(context_id)
    with ctx.lock:
        return dict(ctx.grads)
