"""`torch.distributed.fsdp`: FullyShardedDataParallel (rawdev/distributed/fsdp/fully_sharded_data_parallel.py),
its configuration (api.py), the auto-wrap policies (wrap.py) and FSDP2's fully_shard / FSDPModule /
MixedPrecisionPolicy / OffloadPolicy (_fully_shard/). Any other name this package does not build is refused
(see rawdev.refusals)."""
from ...refusals import refusing_getattr
from ._fully_shard import CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard
from .api import (
    BackwardPrefetch,
    CPUOffload,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    LocalOptimStateDictConfig,
    LocalStateDictConfig,
    MixedPrecision,
    OptimStateDictConfig,
    OptimStateKeyType,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictSettings,
    StateDictType,
)
from .fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = ["FullyShardedDataParallel", "BackwardPrefetch", "CPUOffload", "MixedPrecision", "ShardingStrategy",
           "StateDictType", "StateDictConfig", "FullStateDictConfig", "LocalStateDictConfig",
           "ShardedStateDictConfig", "OptimStateDictConfig", "FullOptimStateDictConfig",
           "LocalOptimStateDictConfig", "ShardedOptimStateDictConfig", "StateDictSettings", "OptimStateKeyType",
           "fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy"]

# the rest of FSDP2's surface (UnshardHandle, register_fsdp_forward_method, ...) is not built
__getattr__ = refusing_getattr("torch.distributed.fsdp", "the rest of FSDP2",
                               "rawdev builds FullyShardedDataParallel and fully_shard / FSDPModule with "
                               "MixedPrecisionPolicy; other FSDP2 names are not built")
