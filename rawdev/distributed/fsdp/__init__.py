"""`torch.distributed.fsdp`: FullyShardedDataParallel (rawdev/distributed/fsdp/fully_sharded_data_parallel.py),
its configuration (api.py) and the auto-wrap policies (wrap.py). FSDP2's fully_shard / FSDPModule /
MixedPrecisionPolicy are refused (see rawdev.refusals); so is any other name this package does not build."""
from ...refusals import refusing_getattr
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
           "LocalOptimStateDictConfig", "ShardedOptimStateDictConfig", "StateDictSettings", "OptimStateKeyType"]

# FSDP2 (fully_shard, FSDPModule, MixedPrecisionPolicy, OffloadPolicy, ...) is not built
__getattr__ = refusing_getattr("torch.distributed.fsdp", "FSDP2 (fully_shard / FSDPModule)",
                               "rawdev builds FullyShardedDataParallel (FSDP1, flat-parameter units); FSDP2's "
                               "fully_shard, which shards each parameter as a DTensor, is not built")
