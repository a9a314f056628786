"""FSDP2: fully_shard (per-parameter Shard(0) DTensor sharding), FSDPModule and its policies."""
from ._fully_shard import FSDPModule, fully_shard
from ._policies import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy

__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy"]
