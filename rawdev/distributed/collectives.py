"""torch.distributed's collectives on rawdev's simulated communicator (rawdev.distributed.process_group), or on
NCCL for cuda tensors where the group's cuda backend serves them (ProcessGroup.cuda_backend: the real driver, or
RAWDEV_COMMUNICATOR=nccl): each collective checks its arguments here, then hands them to that backend.

Tensors cross processes through the host: each call reads its input tensors with `.detach().cpu().numpy()` when
it is made, and writes results with `copy_` when its Work is waited on (at once for async_op=False), so cuda
tensors on the simulated GPU and cpu tensors both work. Before init_process_group every call raises PyTorch's
"Default process group has not been initialized" ValueError.
"""
import enum

import numpy as np

from . import objects
from .process_group import GroupMember, Work, group, resolve_group

__all__ = ["ReduceOp", "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "barrier",
           "broadcast", "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather",
           "scatter", "send", "recv", "isend", "irecv", "all_to_all", "gather_object", "scatter_object_list",
           "get_default_backend_for_device", "is_nccl_available", "is_gloo_available", "is_mpi_available",
           "monitored_barrier", "Backend", "GroupMember", "group", "Work"]

# not in __all__: PyTorch's name is private too (torch.distributed._make_nccl_premul_sum)


class ReduceOp(enum.Enum):
    """torch.distributed.ReduceOp's members (PREMUL_SUM takes its factor from _make_nccl_premul_sum)."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"
    PREMUL_SUM = "premul_sum"


class Backend(str):
    """torch.distributed.Backend: the backend names."""
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UNDEFINED = "undefined"


_REDUCE = {ReduceOp.SUM: np.add, ReduceOp.AVG: np.add, ReduceOp.PRODUCT: np.multiply, ReduceOp.MIN: np.minimum,
           ReduceOp.MAX: np.maximum, ReduceOp.BAND: np.bitwise_and, ReduceOp.BOR: np.bitwise_or,
           ReduceOp.BXOR: np.bitwise_xor}


class _PremulSum:
    """ReduceOp.PREMUL_SUM with its factor: each rank's input times `factor`, summed."""
    name = "PREMUL_SUM"

    def __init__(self, factor):
        self.factor = float(factor)

    def __repr__(self):
        return f"_PremulSum({self.factor!r})"


def _make_nccl_premul_sum(factor):
    """torch.distributed._make_nccl_premul_sum: a reduce op that multiplies every rank's input by `factor`
    before summing (DDP's gradient averaging, folded into the reduction).

    Args:
        factor: a Python number (a tensor factor is not supported).

    Returns:
        The op, for all_reduce / reduce / reduce_scatter(_tensor).

    Example:
        >>> dist.all_reduce(t, op=dist._make_nccl_premul_sum(1 / dist.get_world_size()))
    """
    if not isinstance(factor, (int, float)):
        raise TypeError(f"_make_nccl_premul_sum: rawdev takes a Python number as the factor, got "
                        f"{type(factor).__name__}")
    return _PremulSum(factor)


def _reduce(arrays, op):
    """Reduce in rank order 0, 1, 2 ... in the arrays' own dtype: the same bits on every rank, every run."""
    if isinstance(op, _PremulSum):
        if arrays[0].dtype.kind not in "fc":
            raise TypeError(f"ReduceOp.PREMUL_SUM needs a floating point tensor, got {arrays[0].dtype}")
        factor = np.asarray(op.factor, dtype=arrays[0].dtype)
        return _reduce([(a * factor).astype(a.dtype, copy=False) for a in arrays], ReduceOp.SUM)
    fn = _REDUCE.get(op)
    if fn is None:
        raise ValueError(f"rawdev.distributed: {op} is not supported by the simulated communicator")
    acc = arrays[0].copy()
    for a in arrays[1:]:
        acc = fn(acc, a).astype(acc.dtype, copy=False)
    if op is ReduceOp.AVG:
        if acc.dtype.kind not in "fc":
            raise TypeError(f"ReduceOp.AVG needs a floating point tensor, got {acc.dtype}")
        acc = (acc / np.asarray(len(arrays), dtype=acc.dtype)).astype(acc.dtype, copy=False)
    return acc


def _np(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def _sig(t, **extra):
    if isinstance(extra.get("op"), _PremulSum):
        extra["op"] = f"PREMUL_SUM({extra['op'].factor!r})"
    elif isinstance(extra.get("op"), ReduceOp):
        extra["op"] = extra["op"].name
    return dict(shape=list(t.shape), dtype=str(t.dtype).replace("rawdev.", ""), **extra)


def _write(t, arr):
    t.copy_(t.new_tensor(np.ascontiguousarray(arr).reshape(tuple(t.shape))))


def _op(op):
    if isinstance(op, _PremulSum):
        return op
    if not isinstance(op, ReduceOp):
        raise ValueError(f"op must be a rawdev.distributed.ReduceOp, got {op!r}")
    if op is ReduceOp.PREMUL_SUM:
        raise ValueError("ReduceOp.PREMUL_SUM needs its factor: pass rawdev.distributed._make_nccl_premul_sum(factor)")
    return op


def _run(pg, op, sig, arrays, finish, async_op):
    work = Work(pg.submit(op, sig, arrays), finish)
    if async_op:
        return work
    work.wait()
    return None


def _skip(async_op):
    # a rank outside `group` does nothing (PyTorch warns and returns)
    return Work(_done(None)) if async_op else None


def _done(value):
    from concurrent.futures import Future
    f = Future()
    f.set_result(value)
    return f


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """torch.distributed.all_reduce: every rank's `tensor` becomes the reduction of all ranks' tensors.

    Args:
        tensor: input and output, the same shape and dtype on every rank.
        op: a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR).
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> t = rawdev.ones(4) * (dist.get_rank() + 1)
        >>> dist.all_reduce(t)        # on 2 ranks: tensor([3., 3., 3., 3.])
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    op = _op(op)
    nccl = pg.cuda_backend([tensor])
    if nccl is not None:
        return nccl.all_reduce(tensor, op, async_op)
    return _run(pg, "all_reduce", _sig(tensor, op=op), [_np(tensor)],
                lambda posts: _write(tensor, _reduce([p[0] for p in posts], op)), async_op)


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """torch.distributed.reduce: rank `dst`'s `tensor` becomes the reduction of all ranks' tensors.

    Args:
        tensor: input on every rank; output on `dst`.
        dst: the global rank that receives the result.
        op: a ReduceOp.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    op = _op(op)
    root = group_dst if group_dst is not None else pg.group_rank(dst, "dst")
    mine = pg.rank() == root
    nccl = pg.cuda_backend([tensor])
    if nccl is not None:
        return nccl.reduce(tensor, root, op, async_op)
    return _run(pg, "reduce", _sig(tensor, op=op, dst=pg.ranks[root]), [_np(tensor)],
                lambda posts: _write(tensor, _reduce([p[0] for p in posts], op)) if mine else None, async_op)


def broadcast(tensor, src=0, group=None, async_op=False, group_src=None):
    """torch.distributed.broadcast: every rank's `tensor` becomes rank `src`'s.

    Args:
        tensor: the data on `src`; the output elsewhere (same shape and dtype on every rank).
        src: the global rank that sends.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> dist.broadcast(t, src=0)
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    root = group_src if group_src is not None else pg.group_rank(src, "src")
    mine = pg.rank() == root
    nccl = pg.cuda_backend([tensor])
    if nccl is not None:
        return nccl.broadcast(tensor, root, async_op)
    return _run(pg, "broadcast", _sig(tensor, src=pg.ranks[root]), [_np(tensor)] if mine else [],
                lambda posts: None if mine else _write(tensor, posts[root][0]), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """torch.distributed.all_gather: tensor_list[i] becomes rank i's `tensor`, on every rank.

    Args:
        tensor_list: world_size output tensors shaped like `tensor`.
        tensor: this rank's input.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> out = [rawdev.empty(3) for _ in range(dist.get_world_size())]
        >>> dist.all_gather(out, t)
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a group of {pg.size()} ranks")
    nccl = pg.cuda_backend([tensor, *tensor_list])
    if nccl is not None:
        return nccl.all_gather(list(tensor_list), tensor, async_op)

    def finish(posts):
        for out, p in zip(tensor_list, posts):
            _write(out, p[0])
    return _run(pg, "all_gather", _sig(tensor), [_np(tensor)], finish, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """torch.distributed.all_gather_into_tensor: `output_tensor` becomes the ranks' inputs concatenated along dim 0
    (or stacked, when output has one more dimension).

    Args:
        output_tensor: world_size times the input's size.
        input_tensor: this rank's input.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> out = rawdev.empty(2 * dist.get_world_size()); dist.all_gather_into_tensor(out, rawdev.ones(2))
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError(f"all_gather_into_tensor: output has {output_tensor.numel()} elements, expected "
                         f"{input_tensor.numel()} x {pg.size()} ranks")
    nccl = pg.cuda_backend([output_tensor, input_tensor])
    if nccl is not None:
        return nccl.all_gather_into_tensor(output_tensor, input_tensor, async_op)
    return _run(pg, "all_gather_into_tensor", _sig(input_tensor), [_np(input_tensor)],
                lambda posts: _write(output_tensor, np.concatenate([p[0].reshape(-1) for p in posts])), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """torch.distributed.reduce_scatter_tensor: rank i's `output` becomes chunk i (along dim 0) of the reduction
    of all ranks' `input`.

    Args:
        output: this rank's chunk (input's size / world_size).
        input: world_size chunks, on every rank.
        op: a ReduceOp.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> out = rawdev.empty(2); dist.reduce_scatter_tensor(out, rawdev.ones(2 * dist.get_world_size()))
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    op = _op(op)
    n = output.numel()
    if input.numel() != n * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input has {input.numel()} elements, expected {n} x {pg.size()} ranks")
    nccl = pg.cuda_backend([output, input])
    if nccl is not None:
        return nccl.reduce_scatter_tensor(output, input, op, async_op)
    me = pg.rank()
    return _run(pg, "reduce_scatter_tensor", _sig(input, op=op), [_np(input)],
                lambda posts: _write(output, _reduce([p[0].reshape(-1)[me * n:(me + 1) * n] for p in posts], op)),
                async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """torch.distributed.reduce_scatter: rank i's `output` becomes the reduction of every rank's input_list[i].

    Args:
        output: this rank's result.
        input_list: world_size tensors shaped like `output`.
        op: a ReduceOp.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> dist.reduce_scatter(out, [rawdev.ones(2) for _ in range(dist.get_world_size())])
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    op = _op(op)
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors for a group of {pg.size()} ranks")
    nccl = pg.cuda_backend([output, *input_list])
    if nccl is not None:
        return nccl.reduce_scatter(output, list(input_list), op, async_op)
    me = pg.rank()
    return _run(pg, "reduce_scatter", _sig(output, op=op), [_np(t) for t in input_list],
                lambda posts: _write(output, _reduce([p[me] for p in posts], op)), async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False, group_dst=None):
    """torch.distributed.gather: on rank `dst`, gather_list[i] becomes rank i's `tensor`.

    Args:
        tensor: this rank's input.
        gather_list: world_size outputs on `dst`; None elsewhere.
        dst: the global rank that receives.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> dist.gather(t, [rawdev.empty(3) for _ in range(2)] if dist.get_rank() == 0 else None, dst=0)
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    root = group_dst if group_dst is not None else pg.group_rank(dst, "dst")
    mine = pg.rank() == root
    if mine and (gather_list is None or len(gather_list) != pg.size()):
        raise ValueError(f"gather: the destination rank needs a gather_list of {pg.size()} tensors")
    if not mine and gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    nccl = pg.cuda_backend([tensor, *(gather_list or [])])
    if nccl is not None:
        return nccl.gather(tensor, gather_list if mine else None, root, async_op)

    def finish(posts):
        if mine:
            for out, p in zip(gather_list, posts):
                _write(out, p[0])
    return _run(pg, "gather", _sig(tensor, dst=pg.ranks[root]), [_np(tensor)], finish, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False, group_src=None):
    """torch.distributed.scatter: rank i's `tensor` becomes scatter_list[i] of rank `src`.

    Args:
        tensor: this rank's output.
        scatter_list: world_size inputs on `src`; None elsewhere.
        src: the global rank that sends.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> dist.scatter(out, [rawdev.ones(2) * i for i in range(2)] if dist.get_rank() == 0 else None, src=0)
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    root = group_src if group_src is not None else pg.group_rank(src, "src")
    mine = pg.rank() == root
    if mine and (scatter_list is None or len(scatter_list) != pg.size()):
        raise ValueError(f"scatter: the source rank needs a scatter_list of {pg.size()} tensors")
    if not mine and scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    nccl = pg.cuda_backend([tensor, *(scatter_list or [])])
    if nccl is not None:
        return nccl.scatter(tensor, scatter_list if mine else None, root, async_op)
    me = pg.rank()
    return _run(pg, "scatter", _sig(tensor, src=pg.ranks[root]), [_np(t) for t in scatter_list] if mine else [],
                lambda posts: _write(tensor, posts[root][me]), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """torch.distributed.all_to_all: output_tensor_list[j] on rank i becomes input_tensor_list[i] of rank j.

    Args:
        output_tensor_list: world_size outputs.
        input_tensor_list: world_size inputs.
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> dist.all_to_all(outs, ins)
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    nccl = pg.cuda_backend([*output_tensor_list, *input_tensor_list])
    if nccl is not None:
        return nccl.all_to_all(list(output_tensor_list), list(input_tensor_list), async_op)
    me = pg.rank()

    def finish(posts):
        for out, p in zip(output_tensor_list, posts):
            _write(out, p[me])
    return _run(pg, "all_to_all", {"n": len(input_tensor_list)}, [_np(t) for t in input_tensor_list], finish,
                async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """torch.distributed.barrier: return once every rank of the group has called it.

    Args:
        group: the process group (None: the default).
        async_op: return a Work instead of waiting.

    Returns:
        A Work when async_op, else None.

    Example:
        >>> dist.barrier()
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(async_op)
    nccl = pg.cuda_backend(None)
    if nccl is not None:
        return nccl.barrier(async_op, device_ids)
    return _run(pg, "barrier", {}, [], None, async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """torch.distributed.monitored_barrier: a barrier whose timeout error names the ranks that did not arrive
    (every rawdev barrier does)."""
    return barrier(group)


def isend(tensor, dst, group=None, tag=0, group_dst=None):
    """torch.distributed.isend: send `tensor` to rank `dst` without waiting; returns a Work.

    Sends are buffered in the store: a send completes without waiting for the matching recv, which checks
    shape and dtype and raises, naming both, when they differ.

    Args:
        tensor: the data.
        dst: the global rank that receives.
        group: the process group (None: the default).
        tag: matches sends with recvs of the same tag.

    Returns:
        A Work.

    Example:
        >>> dist.isend(t, dst=1).wait()
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(True)
    peer = group_dst if group_dst is not None else pg.group_rank(dst, "dst")
    nccl = pg.cuda_backend([tensor])
    if nccl is not None:
        return nccl.send(tensor, peer)
    return Work(pg.submit_send(peer, tag, _sig(tensor), [_np(tensor)]))


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """torch.distributed.irecv: receive into `tensor` from rank `src` without waiting.

    Args:
        tensor: the output; its shape and dtype must be the sender's (else the recv raises naming both).
        src: the global rank that sends (required: receiving from any rank is not supported).
        group: the process group (None: the default).
        tag: matches sends with recvs of the same tag.

    Returns:
        A Work; its result() is the sender's rank.

    Example:
        >>> dist.irecv(t, src=0).wait()
    """
    pg = resolve_group(group)
    if pg is None:
        return _skip(True)
    if src is None and group_src is None:
        raise ValueError("rawdev.distributed.recv needs src: receiving from any rank is not supported")
    peer = group_src if group_src is not None else pg.group_rank(src, "src")
    nccl = pg.cuda_backend([tensor])
    if nccl is not None:
        return nccl.recv(tensor, peer)
    return Work(pg.submit_recv(peer, tag, _sig(tensor)), lambda arrays: (_write(tensor, arrays[0]), pg.ranks[peer])[1])


def send(tensor, dst, group=None, tag=0, group_dst=None):
    """torch.distributed.send: isend(...).wait() (buffered: returns without waiting for the recv).

    Args:
        tensor: the data.
        dst: the global rank that receives.
        group: the process group (None: the default).
        tag: matches sends with recvs of the same tag.

    Returns:
        None.

    Example:
        >>> dist.send(t, dst=1)
    """
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """torch.distributed.recv: irecv(...) waited.

    Args:
        tensor: the output, shaped and typed like the sent tensor.
        src: the global rank that sends.
        group: the process group (None: the default).
        tag: matches sends with recvs of the same tag.

    Returns:
        The sender's rank.

    Example:
        >>> dist.recv(t, src=0)
        0
    """
    work = irecv(tensor, src, group, tag, group_src)
    work.wait()
    return work.result()


def broadcast_object_list(object_list, src=0, group=None, device=None, group_src=None):
    """torch.distributed.broadcast_object_list: object_list's items on every rank become those of rank `src`.

    Objects travel as tagged JSON, not pickle: see rawdev.distributed.objects for what is accepted (plain data
    and numpy arrays; a TypeError names anything else).

    Args:
        object_list: the objects on `src`; a list of the same length elsewhere, filled in place.
        src: the global rank that sends.
        group: the process group (None: the default).

    Example:
        >>> objs = [{"lr": 0.1}] if dist.get_rank() == 0 else [None]
        >>> dist.broadcast_object_list(objs, src=0)
    """
    pg = resolve_group(group)
    if pg is None:
        return
    root = group_src if group_src is not None else pg.group_rank(src, "src")
    mine = pg.rank() == root
    payload = [np.frombuffer(objects.encode(list(object_list)), np.uint8)] if mine else []
    posts = pg.submit("broadcast_object_list", {"n": len(object_list), "src": pg.ranks[root]}, payload).result()
    if not mine:
        object_list[:] = objects.decode(posts[root][0].tobytes())


def all_gather_object(object_list, obj, group=None):
    """torch.distributed.all_gather_object: object_list[i] becomes rank i's `obj` (plain data and numpy arrays,
    no pickle: see rawdev.distributed.objects).

    Args:
        object_list: a list of world_size items, filled in place.
        obj: this rank's object.
        group: the process group (None: the default).

    Returns:
        None.

    Example:
        >>> out = [None] * dist.get_world_size(); dist.all_gather_object(out, {"rank": dist.get_rank()})
    """
    pg = resolve_group(group)
    if pg is None:
        return
    posts = pg.submit("all_gather_object", {}, [np.frombuffer(objects.encode(obj), np.uint8)]).result()
    object_list[:len(posts)] = [objects.decode(p[0].tobytes()) for p in posts]


def gather_object(obj, object_gather_list=None, dst=0, group=None, group_dst=None):
    """torch.distributed.gather_object: on `dst`, object_gather_list[i] becomes rank i's `obj` (plain data, see
    rawdev.distributed.objects).

    Args:
        obj: this rank's object.
        object_gather_list: a list of world_size items on `dst`, filled in place; None elsewhere.
        dst: the global rank that receives.
        group: the process group (None: the default).

    Returns:
        None.

    Example:
        >>> out = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
        >>> dist.gather_object({"loss": 0.5}, out, dst=0)
    """
    pg = resolve_group(group)
    if pg is None:
        return
    root = group_dst if group_dst is not None else pg.group_rank(dst, "dst")
    posts = pg.submit("gather_object", {"dst": pg.ranks[root]}, [np.frombuffer(objects.encode(obj), np.uint8)]).result()
    if pg.rank() == root:
        object_gather_list[:len(posts)] = [objects.decode(p[0].tobytes()) for p in posts]


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0, group=None,
                        group_src=None):
    """torch.distributed.scatter_object_list: scatter_object_output_list[0] on rank i becomes item i of `src`'s
    scatter_object_input_list (plain data, see rawdev.distributed.objects).

    Args:
        scatter_object_output_list: a list whose first item is set.
        scatter_object_input_list: world_size objects on `src`; None elsewhere.
        src: the global rank that sends.
        group: the process group (None: the default).

    Returns:
        None.

    Example:
        >>> out = [None]
        >>> dist.scatter_object_list(out, [{"shard": i} for i in range(2)] if dist.get_rank() == 0 else None)
    """
    pg = resolve_group(group)
    if pg is None:
        return
    root = group_src if group_src is not None else pg.group_rank(src, "src")
    mine = pg.rank() == root
    payload = [np.frombuffer(objects.encode(o), np.uint8) for o in scatter_object_input_list] if mine else []
    posts = pg.submit("scatter_object_list", {"src": pg.ranks[root]}, payload).result()
    scatter_object_output_list[0] = objects.decode(posts[root][pg.rank()].tobytes())


def get_default_backend_for_device(device):
    """PyTorch's default backend name for a device type ("nccl" for cuda, "gloo" for cpu)."""
    kind = device if isinstance(device, str) else getattr(device, "type", str(device))
    kind = kind.split(":")[0]
    if kind == "cuda":
        return "nccl"
    if kind == "cpu":
        return "gloo"
    raise ValueError(f"Default backend not registered for device : {kind}")


def is_nccl_available() -> bool:
    """True: the "nccl" backend name runs NCCL for cuda tensors on a real GPU (libnccl from the distributed
    extra, loaded at the first cuda collective) and rawdev's simulated communicator elsewhere."""
    return True


def is_gloo_available() -> bool:
    """True: the "gloo" backend name runs rawdev's communicator."""
    return True


def is_mpi_available() -> bool:
    return False
