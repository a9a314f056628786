"""FSDP state dicts: FULL (the units summoned, their original parameters read under the original names), LOCAL
(the flat shards), SHARDED (each rank's dim-0 chunk of every original parameter) and the loads that reshard."""
from collections import OrderedDict

from ...autograd.grad_mode import no_grad
from ...nn import Module
from ...nn.module import _IncompatibleKeys
from ...ops.join import cat
from .. import collectives as C
from . import _names
from .api import ShardingStrategy, StateDictType

FLAT_PARAM = "_flat_param"


def _mark_rank_local(t):
    # a piece that differs between ranks: rawdev's distributed checkpoint (which writes rank 0's tensors) refuses it
    t._rawdev_rank_local = True


def _buffer_dtypes(root):
    prefixes = _names.module_prefixes(root)
    out = {}
    for u in root._units():
        for (mod_id, name), dt in u._buffer_dtypes.items():
            if mod_id in prefixes:
                out[prefixes[mod_id] + name] = dt
    return out


def _param_units(root):
    """clean name -> the unit managing that original parameter."""
    out = {}
    for u in root._units():
        for fqn in _names.all_fqns(root, u):
            out[fqn] = u
    return out


def _chunk_sizes(n, world):
    # torch.chunk along dim 0: ceil(n / world) rows per chunk, fewer chunks when they run out
    step = -(-n // world) if n else 0
    sizes, left = [], n
    for _ in range(world):
        take = min(step, left)
        sizes.append(take)
        left -= take
    return sizes


def state_dict(root):
    kind, cfg = root._state_dict_type, root._state_dict_config
    offload = getattr(cfg, "offload_to_cpu", False)
    if kind is StateDictType.LOCAL_STATE_DICT:
        out = OrderedDict((_names.clean(k), v.cpu() if offload else v) for k, v in root._plain_state_dict().items())
        for k, v in out.items():
            if k.endswith(FLAT_PARAM):
                _mark_rank_local(v)
        return out
    rank0_only = kind is StateDictType.FULL_STATE_DICT and getattr(cfg, "rank0_only", False)
    buffer_dtypes = _buffer_dtypes(root)
    units = _param_units(root) if kind is StateDictType.SHARDED_STATE_DICT else {}
    out = OrderedDict()
    with root.summon_full_params(root, recurse=True, writeback=False, rank0_only=rank0_only):
        if rank0_only and root.rank != 0:
            return out
        with no_grad():
            for k, v in root._plain_state_dict().items():
                name = _names.clean(k)
                v = v.detach()
                if name in buffer_dtypes:
                    v = v.to(buffer_dtypes[name])
                u = units.get(name)
                if u is not None and u.sharding_strategy is not ShardingStrategy.NO_SHARD and u.world_size > 1:
                    sizes = _chunk_sizes(v.shape[0] if v.dim() else 1, u.world_size)
                    start = sum(sizes[:u.rank])
                    v = (v.reshape(1) if v.dim() == 0 else v)[start:start + sizes[u.rank]].clone()
                    _mark_rank_local(v)
                else:
                    v = v.clone()
                out[name] = v.cpu() if offload else v
    return out


def _assemble(u, local, shape):
    """Every rank's SHARDED chunk of one parameter -> the full parameter (each rank calls it, in the same order)."""
    world = u.world_size
    rows = shape[0] if len(shape) else 1
    sizes = _chunk_sizes(rows, world)
    per_row = 1
    for d in shape[1:]:
        per_row *= d
    width = max(sizes) * per_row
    mine = local.detach().reshape(-1).to(device=u._compute_device)
    padded = mine.new_zeros(width)
    padded[:mine.numel()] = mine
    out = padded.new_empty(width * world)
    C.all_gather_into_tensor(out, padded, group=u.process_group)
    parts = [out[r * width:r * width + sizes[r] * per_row] for r in range(world)]
    return cat(parts).reshape(shape)


def load_state_dict(root, sd, strict):
    kind = root._state_dict_type
    if kind is StateDictType.LOCAL_STATE_DICT:
        real = {_names.clean(k): k for k in root._plain_state_dict()}
        res = Module.load_state_dict(root, OrderedDict((real.get(k, k), v) for k, v in sd.items()), strict)
        return _IncompatibleKeys([_names.clean(k) for k in res.missing_keys],
                                 [_names.clean(k) for k in res.unexpected_keys])
    units = _param_units(root) if kind is StateDictType.SHARDED_STATE_DICT else {}
    with root.summon_full_params(root, recurse=True, writeback=True):
        plain = root._plain_state_dict()
        real = {_names.clean(k): k for k in plain}
        mapped = OrderedDict()
        with no_grad():
            for k, v in sd.items():
                u = units.get(k)
                if u is not None and u.sharding_strategy is not ShardingStrategy.NO_SHARD and u.world_size > 1 \
                        and k in real:
                    v = _assemble(u, v, tuple(plain[real[k]].shape))
                mapped[real.get(k, k)] = v
        res = Module.load_state_dict(root, mapped, strict)
    return _IncompatibleKeys([_names.clean(k) for k in res.missing_keys],
                             [_names.clean(k) for k in res.unexpected_keys])
