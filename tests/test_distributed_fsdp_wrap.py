"""The FSDP auto-wrap policies choose the units PyTorch's would: they are pure functions of modules, so they are
checked in-process with a recording wrapper in place of FullyShardedDataParallel (no process group needed).
Also: enable_wrap / wrap, and FSDP2's names other than fully_shard & co. stay refused."""
import functools

import pytest
import rawdev
from rawdev import nn
from rawdev.distributed import fsdp
from rawdev.distributed.fsdp.wrap import (
    ModuleWrapPolicy,
    _recursive_wrap,
    always_wrap_policy,
    enable_wrap,
    lambda_auto_wrap_policy,
    size_based_auto_wrap_policy,
    transformer_auto_wrap_policy,
    wrap,
)


class Rec(nn.Module):
    """Stands in for FullyShardedDataParallel: wraps, records its kwargs."""

    def __init__(self, module, **kwargs):
        super().__init__()
        self.module, self.kwargs = module, kwargs


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.Linear(4, 4)
        self.mlp = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 4))


def wrapped(root, policy, **kwargs):
    """The names (in root) of the modules the policy wraps; the root itself is wrapped by FSDP's own call."""
    _recursive_wrap(root, policy, Rec, set(), set(), only_wrap_children=True, **kwargs)
    return [name for name, m in root.named_modules() if isinstance(m, Rec)]


def mlp():
    rawdev.manual_seed(0)   # 110 + (110 + 110) + 22 parameters
    return nn.Sequential(nn.Linear(10, 10), nn.Sequential(nn.Linear(10, 10), nn.Linear(10, 10)), nn.Linear(10, 2))


def test_size_based_policy_wraps_where_the_unwrapped_parameters_reach_the_threshold():
    assert wrapped(mlp(), functools.partial(size_based_auto_wrap_policy, min_num_params=100)) == \
        ["0", "1.0", "1.1"]
    # the inner linears (110 each) stay below 200; their parent then holds 220 unwrapped elements
    assert wrapped(mlp(), functools.partial(size_based_auto_wrap_policy, min_num_params=200)) == ["1"]
    assert wrapped(mlp(), functools.partial(size_based_auto_wrap_policy, min_num_params=1000)) == []
    # MultiheadAttention (288 elements) is a forced leaf: never descended into, so never a unit on its own; its
    # parameters stay with its parent's unit
    root = nn.Sequential(nn.Sequential(nn.MultiheadAttention(8, 2)), nn.Linear(2, 2))
    assert wrapped(root, functools.partial(size_based_auto_wrap_policy, min_num_params=250)) == ["0"]
    # ModuleList is never a unit itself (its children may be)
    root = nn.Sequential(nn.ModuleList([nn.Linear(10, 10), nn.Linear(10, 10)]), nn.Linear(2, 2))
    assert wrapped(root, functools.partial(size_based_auto_wrap_policy, min_num_params=200)) == []
    assert size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES == {nn.ModuleList, nn.ModuleDict}
    assert size_based_auto_wrap_policy.FORCE_LEAF_MODULES == {nn.MultiheadAttention}


def test_class_lambda_and_always_policies():
    def model():
        return nn.Sequential(nn.Linear(4, 4), nn.ModuleList([Block(), Block()]), nn.Linear(4, 2))
    by_class = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    assert wrapped(model(), by_class) == ["1.0", "1.1"]
    assert wrapped(model(), ModuleWrapPolicy({Block})) == ["1.0", "1.1"]
    linears = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: isinstance(m, nn.Linear))
    assert wrapped(model(), linears) == ["0", "1.0.attn", "1.0.mlp.0", "1.0.mlp.1", "1.1.attn", "1.1.mlp.0",
                                         "1.1.mlp.1", "2"]
    # every module but the root, bottom-up: a parent wraps its already wrapped children
    root = nn.Sequential(nn.Sequential(nn.Linear(2, 2)))
    assert wrapped(root, always_wrap_policy) == ["0", "0.module.0"]
    # the kwargs reach every unit
    root = model()
    _recursive_wrap(root, ModuleWrapPolicy({Block}), Rec, set(), set(), only_wrap_children=True, tag=3)
    assert root[1][0].kwargs == {"tag": 3}


def test_ignored_modules_are_not_wrapped_nor_counted():
    root = mlp()
    ignored = {id(m) for m in root[1].modules()}
    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=100)
    _recursive_wrap(root, policy, Rec, ignored, {id(p) for p in root[1].parameters()}, only_wrap_children=True)
    assert [n for n, m in root.named_modules() if isinstance(m, Rec)] == ["0"]


def test_enable_wrap_and_wrap():
    lin = nn.Linear(2, 2)
    assert wrap(lin) is lin                      # outside enable_wrap: unchanged
    with enable_wrap(wrapper_cls=Rec, a=1, b=2):
        w = wrap(lin, b=5)
        assert isinstance(w, Rec) and w.module is lin and w.kwargs == {"a": 1, "b": 5}
        with pytest.raises(NotImplementedError, match="already within an autowrap context"):
            with enable_wrap(wrapper_cls=Rec):
                pass
    assert wrap(lin) is lin


def test_fsdp_names_and_the_rest_of_fsdp2_refused():
    assert fsdp.ShardingStrategy.FULL_SHARD.name == "FULL_SHARD"
    assert fsdp.MixedPrecision(param_dtype=rawdev.bfloat16).cast_root_forward_inputs is True
    assert fsdp.FullStateDictConfig(rank0_only=True).offload_to_cpu is False
    assert fsdp.FullOptimStateDictConfig().offload_to_cpu is True
    assert not hasattr(fsdp, "__rawdev_refused__")
    assert fsdp.MixedPrecisionPolicy().cast_forward_inputs is True     # FSDP2 (tests/test_distributed_fully_shard.py)
    assert callable(fsdp.fully_shard) and isinstance(fsdp.FSDPModule, type)
    for name in ("UnshardHandle", "register_fsdp_forward_method"):
        with pytest.raises(NotImplementedError, match=rf"torch\.distributed\.fsdp\.{name}: the rest of FSDP2 "
                                                      r"is not supported by rawdev"):
            getattr(fsdp, name)(nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="HYBRID_SHARD"):
        fsdp.FullyShardedDataParallel(nn.Linear(2, 2), sharding_strategy=fsdp.ShardingStrategy.HYBRID_SHARD)
