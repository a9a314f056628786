"""FSDP2's configuration: MixedPrecisionPolicy and the offload policies."""
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """torch.distributed.fsdp.MixedPrecisionPolicy: the dtypes fully_shard computes and reduces in.

    Args:
        param_dtype: dtype the parameters are all-gathered in and the forward/backward compute in (None: the
            sharded parameters' dtype, which stays as it is).
        reduce_dtype: dtype gradients are reduce-scattered in (None: param_dtype's).
        output_dtype: dtype the module's floating outputs are cast to (None: left as computed).
        cast_forward_inputs: cast the module's floating forward inputs to param_dtype.

    Example:
        >>> fully_shard(block, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))
    """
    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """torch.distributed.fsdp.OffloadPolicy: the default, no offloading (the shards stay on the mesh's device).

    Example:
        >>> fully_shard(block, offload_policy=OffloadPolicy())
    """


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """torch.distributed.fsdp.CPUOffloadPolicy: keep the shards on cpu. rawdev's fully_shard refuses it (it
    raises NotImplementedError when passed); the class exists so programs can name it.

    Args:
        pin_memory: PyTorch's pinned-memory flag.
    """
    pin_memory: bool = True
