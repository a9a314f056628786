"""RPC backend options as PyTorch names them. rawdev's agent speaks TCP itself (PyTorch's is TensorPipe); the
options that mean something to it are the timeout, the worker threads and the rendezvous address."""
from __future__ import annotations

import enum
from typing import Any

__all__ = ["BackendType", "TensorPipeRpcBackendOptions", "RpcBackendOptions"]


class BackendType(enum.Enum):
    TENSORPIPE = "TENSORPIPE"


class RpcBackendOptions:
    """The base class of backend options."""

    def __init__(self, rpc_timeout: float = 60.0, init_method: str = "env://") -> None:
        self.rpc_timeout, self.init_method = float(rpc_timeout), init_method


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """torch.distributed.rpc.TensorPipeRpcBackendOptions.

    Args:
        num_worker_threads: threads that run incoming calls (16).
        rpc_timeout: seconds a call may take before it fails (60).
        init_method: "env://" (MASTER_ADDR/MASTER_PORT) or "tcp://host:port".
        device_maps, devices: cuda device maps; rawdev's RPC carries cpu tensors only, so a non-empty map is
            refused with a message.
        _transports, _channels: accepted (TensorPipe's internals).
    """

    def __init__(self, *, num_worker_threads: int = 16, rpc_timeout: float = 60.0, init_method: str = "env://",
                 device_maps: dict[str, Any] | None = None, devices: list[Any] | None = None,
                 _transports: Any = None, _channels: Any = None) -> None:
        super().__init__(rpc_timeout, init_method)
        self.num_worker_threads = int(num_worker_threads)
        self.device_maps: dict[str, Any] = {}
        self.devices = list(devices or [])
        for to, mapping in (device_maps or {}).items():
            self.set_device_map(to, mapping)

    def set_device_map(self, to: str, device_map: dict[Any, Any]) -> None:
        """Refused: rawdev's RPC moves cpu tensors only (send cuda tensors as .cpu())."""
        raise NotImplementedError("rawdev's RPC carries cpu tensors only: device maps (cuda tensors sent directly "
                                  "between GPUs) are not supported; send .cpu() copies")

    def set_devices(self, devices: list[Any]) -> None:
        self.devices = list(devices)
