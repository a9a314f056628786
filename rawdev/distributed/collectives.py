"""torch.distributed's collectives and group queries as PyTorch answers them before init_process_group: each
raises PyTorch's "Default process group has not been initialized" ValueError, so a program's single-process
path (guarded by dist.is_initialized()) runs and a multi-process one stops with the message it would get."""
import enum
from typing import Any

__all__ = ["ReduceOp", "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "barrier",
           "broadcast", "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather",
           "scatter", "send", "recv", "isend", "irecv", "all_to_all", "new_group", "get_backend",
           "get_default_backend_for_device", "is_nccl_available", "is_gloo_available", "is_mpi_available",
           "monitored_barrier", "Backend", "GroupMember", "group"]


class ReduceOp(enum.Enum):
    """torch.distributed.ReduceOp's members."""
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
    """torch.distributed.Backend: the backend names (rawdev has none of them)."""
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UNDEFINED = "undefined"


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:  # noqa: N801  (PyTorch's name)
    WORLD = None


def _uninit(*args: Any, **kwargs: Any) -> Any:
    raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")


all_reduce = all_gather = all_gather_into_tensor = all_gather_object = barrier = broadcast = _uninit
broadcast_object_list = reduce = reduce_scatter = reduce_scatter_tensor = gather = scatter = _uninit
send = recv = isend = irecv = all_to_all = new_group = get_backend = monitored_barrier = _uninit


def get_default_backend_for_device(device: Any) -> str:
    """PyTorch's default backend name for a device type ("nccl" for cuda, "gloo" for cpu); rawdev can
    initialize neither, but programs ask it to build their init_process_group call."""
    kind = device if isinstance(device, str) else getattr(device, "type", str(device))
    kind = kind.split(":")[0]
    if kind == "cuda":
        return "nccl"
    if kind == "cpu":
        return "gloo"
    raise ValueError(f"Default backend not registered for device : {kind}")


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    return False


def is_mpi_available() -> bool:
    return False
