"""`torch.distributed._tensor`: the older path of torch.distributed.tensor (the same names)."""
from ..tensor import (  # noqa: F401
    DeviceMesh,
    DTensor,
    Partial,
    Placement,
    Replicate,
    Shard,
    distribute_module,
    distribute_tensor,
    init_device_mesh,
)

__all__ = ["DTensor", "DeviceMesh", "distribute_tensor", "distribute_module", "init_device_mesh", "Shard",
           "Replicate", "Partial", "Placement"]
