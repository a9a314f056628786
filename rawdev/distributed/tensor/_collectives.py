"""The local-shard transitions a DTensor's redistribution is made of, per mesh dimension: Shard→Replicate
(all_gather_into_tensor), Partial→Replicate (all_reduce), Partial→Shard (reduce_scatter_tensor), Replicate→Shard
(take this rank's chunk, no communication), Replicate→Partial (split the value), and the autograd Functions that
carry gradients back through them. Uneven shards follow torch.chunk's sizes and are padded for the collectives.

Gradient convention (what makes the backward of every transition its matching collective): the gradient of a
DTensor's local tensor is that of a DTensor with the same placements, Partial read as Replicate."""
from __future__ import annotations

from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...ops.join import cat
from .. import collectives as dist
from .placement_types import Partial, Replicate, Shard

_OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}


def chunk_bounds(length, n, k):
    """[start, end) of chunk k of n along a dimension of `length`, as torch.chunk cuts it."""
    c = -(-length // n) if length else 0
    start = min(k * c, length)
    return start, min(start + c, length)


def _pad_front_dim(x, c):
    """x (moved so the sharded dim is 0) padded with zeros to c rows, contiguous."""
    if x.shape[0] < c:
        pad = x.new_zeros((c - x.shape[0],) + tuple(x.shape[1:]))
        x = cat([x, pad], 0)
    return x.contiguous()


def gather(local, dim, length, n, group):
    """Shard(dim) → Replicate: all ranks' chunks along `dim`, concatenated (global size `length`)."""
    c = -(-length // n)
    x = _pad_front_dim(local.movedim(dim, 0), c)
    out = x.new_empty((n * c,) + tuple(x.shape[1:]))
    dist.all_gather_into_tensor(out, x, group=group)
    return out[:length].movedim(0, dim).contiguous()


def take_chunk(full, dim, n, k):
    """Replicate → Shard(dim): this rank's chunk (a copy)."""
    start, end = chunk_bounds(full.shape[dim], n, k)
    return full.narrow(dim, start, end - start).contiguous()


def all_reduce(local, reduce_op, group):
    """Partial → Replicate."""
    out = local.contiguous().clone()
    dist.all_reduce(out, op=_OPS[reduce_op], group=group)
    return out


def reduce_scatter(local, dim, reduce_op, n, k, group):
    """Partial → Shard(dim): the reduction, of which this rank keeps its chunk."""
    length = local.shape[dim]
    c = -(-length // n)
    x = _pad_front_dim(local.movedim(dim, 0), n * c)
    out = x.new_empty((c,) + tuple(x.shape[1:]))
    dist.reduce_scatter_tensor(out, x, op=_OPS[reduce_op], group=group)
    start, end = chunk_bounds(length, n, k)
    return out[:end - start].movedim(0, dim).contiguous()


def partition(local, reduce_op, n):
    """Replicate → Partial: terms whose reduction is the value (a sum splits evenly)."""
    return local / n if reduce_op == "sum" else local.clone()


def transition(local, mesh, src, dst, shape):
    """The local tensor of placements `dst` from that of placements `src` (global `shape`), one mesh dimension at
    a time; no autograd (the caller records it)."""
    coord = mesh.get_coordinate()
    for i, (a, b) in enumerate(zip(src, dst)):
        if a == b:
            continue
        group, n, k = mesh.get_group(i), mesh.size(i), coord[i]
        if isinstance(a, Partial):
            if isinstance(b, Replicate):
                local = all_reduce(local, a.reduce_op, group)
            elif isinstance(b, Shard):
                local = reduce_scatter(local, b.dim, a.reduce_op, n, k, group)
            else:
                raise NotImplementedError(f"redistribute from {a!r} to {b!r} is not supported by rawdev's DTensor: "
                                          f"redistribute to Replicate() first")
            continue
        if isinstance(a, Shard):
            local = gather(local, a.dim, shape[a.dim], n, group)
        if isinstance(b, Shard):
            local = take_chunk(local, b.dim, n, k)
        elif isinstance(b, Partial):
            local = partition(local, b.reduce_op, n)
    return local


def grad_placements(placements):
    """The placements a gradient of `placements` is taken to have: Partial read as Replicate."""
    return tuple(Replicate() if isinstance(p, Partial) else p for p in placements)


class Redistribute(Function):
    """transition() with its backward: the gradient goes from the target's placements back to the source's."""

    @staticmethod
    def forward(ctx, local, mesh, src, dst, shape):
        ctx.mesh, ctx.src, ctx.dst, ctx.shape = mesh, src, dst, shape
        out = transition(local, mesh, src, dst, shape)
        return out.clone() if out is local else out

    @staticmethod
    def backward(ctx, grad):
        with no_grad():
            g = transition(grad, ctx.mesh, grad_placements(ctx.dst), grad_placements(ctx.src), ctx.shape)
            for i, (a, b) in enumerate(zip(ctx.src, ctx.dst)):
                if not isinstance(a, Partial) or a == b:
                    continue
                if a.reduce_op == "avg":      # each term weighs 1/n in the mean
                    g = g / ctx.mesh.size(i)
                elif a.reduce_op in ("max", "min"):
                    raise NotImplementedError(f"the gradient of redistributing {a!r} is not supported by rawdev's "
                                              f"DTensor (it would flow to the rank holding the extreme only)")
        return g, None, None, None, None


class GradAllReduce(Function):
    """Identity forward; backward sums the gradient over the mesh dimensions `dims`. A replicated operand used
    alongside shards gets a different partial gradient on each rank: this makes it the whole one again."""

    @staticmethod
    def forward(ctx, local, mesh, dims):
        ctx.mesh, ctx.dims = mesh, dims
        return local.clone()

    @staticmethod
    def backward(ctx, grad):
        with no_grad():
            g = grad.contiguous().clone()
            for i in ctx.dims:
                dist.all_reduce(g, group=ctx.mesh.get_group(i))
        return g, None, None
