"""`torch.distributed.rpc`: remote calls between the workers of a job — `init_rpc`, `rpc_sync`, `rpc_async`,
`remote` with `RRef`s, `get_worker_info`, `shutdown`, `functions.async_execution` — and, through
`rawdev.distributed.autograd` and `rawdev.distributed.optim.DistributedOptimizer`, training across them.

rawdev's agent speaks TCP itself and never pickles: arguments and results are data (tensors as raw bytes,
numbers, strings, containers, RRefs) and functions and classes travel by reference, as pickle sends them; the
receiver imports them from its own copy of the program. Tensors travel as cpu tensors. See docs/INTERNALS.md,
"RPC".
"""
from . import functions  # noqa: F401
from .agent import RemoteError, WorkerInfo
from .api import get_worker_info, init_rpc, remote, rpc_async, rpc_sync, shutdown
from .options import BackendType, RpcBackendOptions, TensorPipeRpcBackendOptions
from .rref import RRef

PyRRef = RRef

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info", "RRef", "PyRRef",
           "WorkerInfo", "BackendType", "RpcBackendOptions", "TensorPipeRpcBackendOptions", "RemoteError",
           "functions", "is_available"]


def is_available() -> bool:
    """True: rawdev's RPC is built in."""
    return True
