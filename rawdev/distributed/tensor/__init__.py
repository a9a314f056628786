"""`torch.distributed.tensor`: DTensor — a tensor sharded or replicated over a DeviceMesh (placements Shard,
Replicate, Partial), distribute_tensor, distribute_module; tensor parallelism in `.parallel`. See
docs/INTERNALS.md, "DeviceMesh and DTensor"."""
from ..device_mesh import DeviceMesh, init_device_mesh
from ._api import DTensor, distribute_module, distribute_tensor
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "DeviceMesh", "distribute_tensor", "distribute_module", "init_device_mesh", "Shard",
           "Replicate", "Partial", "Placement"]
