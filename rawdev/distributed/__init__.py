"""`rawdev.distributed`: torch.distributed — process groups with a TCPStore rendezvous (init_process_group,
new_group), the collectives (NCCL for cuda tensors on a real GPU, rawdev's simulated communicator with NCCL's
ordering rules elsewhere), and the `rawdev run` launcher (rawdev.distributed.run). See docs/INTERNALS.md,
"Distributed"."""
from .collectives import *  # noqa: F401,F403
from .collectives import __all__ as _collectives_all
from .collectives import _make_nccl_premul_sum  # noqa: F401  (private in PyTorch too)
from .device_mesh import DeviceMesh, init_device_mesh  # noqa: F401
from .process_group import (  # noqa: F401
    Work,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
    is_torchelastic_launched,
    new_group,
)
from .store import Store, TCPStore  # noqa: F401

__all__ = ["is_available", "is_initialized", "init_process_group", "get_rank", "get_world_size",
           "is_torchelastic_launched", "destroy_process_group", "new_group", "get_backend", "get_global_rank",
           "get_group_rank", "get_process_group_ranks", "get_node_local_rank", "Store",
           "TCPStore", "DeviceMesh", "init_device_mesh"] + list(_collectives_all)


def is_available() -> bool:
    """True: rawdev has a communicator (simulated, across processes through a TCPStore)."""
    return True
