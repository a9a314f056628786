"""The configuration of torch.distributed.fsdp: how units shard (ShardingStrategy), mixed precision, cpu offload,
the scheduling hints (BackwardPrefetch) and the state-dict kinds with their configs."""
import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["ShardingStrategy", "BackwardPrefetch", "MixedPrecision", "CPUOffload", "StateDictType",
           "StateDictConfig", "FullStateDictConfig", "LocalStateDictConfig", "ShardedStateDictConfig",
           "OptimStateDictConfig", "FullOptimStateDictConfig", "LocalOptimStateDictConfig",
           "ShardedOptimStateDictConfig", "StateDictSettings", "OptimStateKeyType"]


class ShardingStrategy(enum.Enum):
    """How a unit shards: FULL_SHARD (parameters, gradients and optimizer state sharded; parameters gathered for
    forward and again for backward), SHARD_GRAD_OP (gathered parameters kept from forward to backward),
    NO_SHARD (every rank holds everything; gradients all-reduced, as DistributedDataParallel). HYBRID_SHARD and
    _HYBRID_SHARD_ZERO2 (shard within a node, replicate across nodes) are refused by rawdev."""
    FULL_SHARD = enum.auto()
    SHARD_GRAD_OP = enum.auto()
    NO_SHARD = enum.auto()
    HYBRID_SHARD = enum.auto()
    _HYBRID_SHARD_ZERO2 = enum.auto()


class BackwardPrefetch(enum.Enum):
    """When PyTorch issues the next unit's all-gather in backward. rawdev accepts it as a scheduling hint: it
    gathers each unit when the unit runs."""
    BACKWARD_PRE = enum.auto()
    BACKWARD_POST = enum.auto()


@dataclass
class MixedPrecision:
    """Mixed precision for FullyShardedDataParallel.

    Args:
        param_dtype: dtype the gathered parameters (and so forward/backward) compute in; the shards stay in their
            own dtype (float32). None: no cast.
        reduce_dtype: dtype gradients are reduced in (None: param_dtype's, or the parameters' own).
        buffer_dtype: dtype buffers are cast to (None: unchanged).
        keep_low_precision_grads: keep the sharded gradient in param_dtype (rawdev refuses True).
        cast_forward_inputs: cast every unit's floating point forward inputs to param_dtype.
        cast_root_forward_inputs: cast the root unit's floating point forward inputs to param_dtype.
        _module_classes_to_ignore: with an auto_wrap_policy, modules of these classes (default: the BatchNorm
            layers) become units of their own without mixed precision.

    Example:
        >>> FSDP(model, mixed_precision=MixedPrecision(param_dtype=rawdev.bfloat16))
    """
    param_dtype: Any | None = None
    reduce_dtype: Any | None = None
    buffer_dtype: Any | None = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: tuple = field(default_factory=lambda: (_batch_norm(),))


def _batch_norm():
    from ...nn.layers.batchnorm import _BatchNorm
    return _BatchNorm


@dataclass
class CPUOffload:
    """CPUOffload(offload_params=False): keep the parameter shards (and their gradients) in host memory; a unit
    copies its shard to the compute device to gather it.

    Example:
        >>> FSDP(model, device_id=0, cpu_offload=CPUOffload(offload_params=True))
    """
    offload_params: bool = False


class StateDictType(enum.Enum):
    """What `state_dict()` of an FSDP model returns: FULL_STATE_DICT (the unsharded tensors under the original
    names), LOCAL_STATE_DICT (each unit's flat shard), SHARDED_STATE_DICT (each rank's dim-0 chunk of every
    original parameter, as a plain tensor)."""
    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


class OptimStateKeyType(enum.Enum):
    """How an optimizer state dict is keyed: by parameter name or by parameter id."""
    PARAM_NAME = enum.auto()
    PARAM_ID = enum.auto()


@dataclass
class StateDictConfig:
    """Base of the state-dict configs. Args: offload_to_cpu: move the returned tensors to the cpu."""
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    """FULL_STATE_DICT's config. Args: offload_to_cpu; rank0_only: only rank 0 gets the dict (others get {})."""
    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    """LOCAL_STATE_DICT's config."""


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    """SHARDED_STATE_DICT's config (rawdev returns plain tensors, never DTensor/ShardedTensor)."""
    _use_dtensor: bool = False


@dataclass
class OptimStateDictConfig:
    """Base of the optimizer-state-dict configs. Args: offload_to_cpu: move the state tensors to the cpu."""
    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    """FULL optimizer state dict config. Args: offload_to_cpu; rank0_only: only rank 0 gets the dict."""
    rank0_only: bool = False


@dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    """LOCAL optimizer state dict config."""
    offload_to_cpu: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    """SHARDED optimizer state dict config."""
    _use_dtensor: bool = False


class StateDictSettings(NamedTuple):
    """The state-dict type and configs an FSDP module is set to (what set_state_dict_type returns)."""
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig
