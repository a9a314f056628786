"""The public RPC functions: init_rpc, rpc_sync, rpc_async, remote, get_worker_info, shutdown."""
from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import urlparse

from ...futures import Future
from ..store import TCPStore
from . import state
from .agent import Agent, WorkerInfo
from .options import BackendType, RpcBackendOptions, TensorPipeRpcBackendOptions
from .rref import RRef
from .wire import function_ref

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info"]


def _rendezvous(options: RpcBackendOptions, rank: int, world_size: int) -> TCPStore:
    method = options.init_method or "env://"
    if method.startswith("env://"):
        host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if not host or not port:
            raise ValueError("Error initializing torch.distributed using env:// rendezvous: environment variable "
                             f"{'MASTER_ADDR' if not host else 'MASTER_PORT'} expected, but not set")
    elif method.startswith("tcp://"):
        u = urlparse(method)
        host, port = u.hostname, str(u.port)
    elif method.startswith("file://") and world_size == 1:
        # one worker meets nobody: its store is its own (the single-process form Pipe's tutorials use)
        import socket
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            host, port = "127.0.0.1", str(sock.getsockname()[1])
    else:
        raise ValueError(f"RPC: init_method {method!r} is not supported (env://, tcp://host:port, or file:// for a "
                         f"single worker)")
    return TCPStore(host, int(port), world_size, is_master=(rank == 0), timeout=max(options.rpc_timeout, 1.0))


def init_rpc(name: str, backend: Any = None, rank: int = -1, world_size: int | None = None,
             rpc_backend_options: RpcBackendOptions | None = None) -> None:
    """Join the RPC group as worker `name` with id `rank`, meeting the others through MASTER_ADDR/MASTER_PORT (or
    the options' init_method); returns when all `world_size` workers have joined.

    Args:
        name: this worker's unique name.
        backend: BackendType.TENSORPIPE or None.
        rank: this worker's id, 0..world_size-1 (RANK when -1).
        world_size: the number of workers (WORLD_SIZE when None).
        rpc_backend_options: TensorPipeRpcBackendOptions (rpc_timeout, num_worker_threads, init_method).

    Example:
        >>> rpc.init_rpc("worker0", rank=0, world_size=2)  # doctest: +SKIP
    """
    if backend is not None and backend != BackendType.TENSORPIPE:
        raise ValueError(f"RPC: backend {backend} is not supported (BackendType.TENSORPIPE)")
    if state._agent[0] is not None:
        raise RuntimeError("RPC is already initialized")
    rank = int(os.environ.get("RANK", -1)) if rank is None or rank < 0 else int(rank)
    world_size = int(os.environ.get("WORLD_SIZE", 0)) if world_size is None else int(world_size)
    if rank < 0 or world_size <= 0 or rank >= world_size:
        raise ValueError(f"RPC: rank {rank} and world_size {world_size} do not make a group (0 <= rank < world_size)")
    if not isinstance(name, str) or not name:
        raise ValueError("RPC: a worker needs a non-empty name")
    options = rpc_backend_options or TensorPipeRpcBackendOptions()
    threads = getattr(options, "num_worker_threads", 16)
    store = _rendezvous(options, rank, world_size)
    agent = Agent(name, rank, world_size, store, options.rpc_timeout, threads)
    try:
        agent.join()
    except BaseException:
        agent.close()
        if store._server is not None:   # the others read the names too: let them see the same error
            store._server.wait_clients_gone(1, 10.0)
        store.close()
        raise
    state.set_agent(agent)


def get_worker_info(worker_name: str | None = None) -> WorkerInfo:
    """The WorkerInfo of `worker_name` (this worker's when None)."""
    agent = state.agent()
    return agent.info if worker_name is None else agent.worker(worker_name)


def _call(kind: str, to: Any, func: Any, args: Any, kwargs: Any, timeout: float,
          extra: dict[str, Any] | None = None) -> Future[Any]:
    agent = state.agent()
    dest = agent.worker(to)
    fields = {"func": function_ref(func, "the function")}
    fields.update(extra or {})
    return agent.request(dest, kind, fields, (tuple(args or ()), dict(kwargs or {})), timeout)


def rpc_async(to: Any, func: Any, args: Any = None, kwargs: Any = None, timeout: float = -1.0) -> Future[Any]:
    """Run func(*args, **kwargs) on worker `to`; a Future of its result.

    Args:
        to: the worker (name, id or WorkerInfo).
        func: a module-level function or class (sent by reference; the worker imports it).
        args, kwargs: its arguments (tensors, RRefs, plain values; no pickle).
        timeout: seconds (the backend's rpc_timeout when negative; 0: none).

    Returns:
        A torch.futures.Future; wait() returns the result or raises the remote error.
    """
    return _call("call", to, func, args, kwargs, timeout)


def rpc_sync(to: Any, func: Any, args: Any = None, kwargs: Any = None, timeout: float = -1.0) -> Any:
    """Run func(*args, **kwargs) on worker `to` and return its result (or raise its error), as rpc_async().wait().

    Example:
        >>> rpc.rpc_sync("worker1", rawdev.add, args=(rawdev.ones(2), 3))  # doctest: +SKIP
        tensor([4., 4.])
    """
    return rpc_async(to, func, args, kwargs, timeout).wait()


def remote(to: Any, func: Any, args: Any = None, kwargs: Any = None, timeout: float = -1.0) -> RRef:
    """Run func(*args, **kwargs) on worker `to` and keep the result there; an RRef to it, at once.

    Errors of the call surface when the value is used (to_here, local_value).
    """
    agent = state.agent()
    dest = agent.worker(to)
    key = (dest.id, agent.info.id, next(agent.ids))
    _call("remote", dest, func, args, kwargs, timeout, {"key": list(key)})
    return RRef._existing(agent, dest, key)


def shutdown(graceful: bool = True, timeout: float = 0) -> None:
    """Leave the RPC group. Graceful (the default): wait until every worker has called shutdown, so no worker
    stops serving while others still call it, then close.

    Args:
        graceful: wait for the other workers first.
        timeout: accepted for PyTorch's signature (the rendezvous' timeout applies).
    """
    agent = state.agent()
    store = agent.store
    try:
        if graceful:
            store.add("rpc/shutdown", 1)
            deadline = time.monotonic() + max(agent.timeout, 60.0) * 10
            while int(store.add("rpc/shutdown", 0)) < agent.world_size:
                if time.monotonic() > deadline:
                    raise RuntimeError("RPC: shutdown timed out waiting for the other workers to reach shutdown()")
                time.sleep(0.02)
            store.add("rpc/left", 1)
            if agent.info.id == 0:   # the store's server lives here: the others must be done with it first
                while int(store.add("rpc/left", 0)) < agent.world_size and time.monotonic() < deadline:
                    time.sleep(0.02)
    finally:
        agent.close()
        state.set_agent(None)
        if store._server is not None:
            store._server.wait_clients_gone(1, 10.0)
        store.close()
