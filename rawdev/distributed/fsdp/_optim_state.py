"""FSDP optimizer state dicts. An optimizer built on an FSDP model holds state per flat shard; these functions
gather that state into full tensors keyed by the original parameter names (or, legacy, by their ids), and turn
such a dict back into each rank's shard state for optim.load_state_dict."""
import numpy as np

from ... import distributed as dist
from ...autograd.grad_mode import no_grad
from ...ops.join import cat
from ...tensor.core import Tensor
from ...tensor.factory import tensor as _tensor
from . import _flat, _names


def _is_shard_state(key, v, unit):
    return (key != "step" and isinstance(v, Tensor) and v.dim() == 1
            and v.shape[0] == unit._flat_param.shape[0])


def _layout(model):
    """(id(flat param) -> unit, id(plain param) -> its clean name, the original names in model.parameters()
    order with each unit's flat parameter expanded)."""
    by_flat, plain, order = {}, {}, []
    for u in model._units():
        if u._flat_param is not None:
            by_flat[id(u._flat_param)] = u
    fqns = {id(u): _names.unit_fqns(model, u) for u in by_flat.values()}
    for name, p in model.named_parameters():
        u = by_flat.get(id(p))
        if u is None:
            plain[id(p)] = name
            order.append(name)
        else:
            order.extend(fqns[id(u)])
    return by_flat, plain, order, fqns


def _copy(v, offload):
    if isinstance(v, Tensor):
        v = v.detach().clone()
        return v.cpu() if offload else v
    return v


def _full_state(model, optim, osd, offload):
    """{"state": {name: {...}}, "param_groups": [...]} with full tensors; every rank runs the gathers."""
    osd = optim.state_dict() if osd is None else osd
    by_flat, plain, _, fqns = _layout(model)
    params = [p for g in optim.param_groups for p in g["params"]]
    state, names_of = {}, []
    with no_grad():
        for i, p in enumerate(params):
            u = by_flat.get(id(p))
            names = fqns[id(u)] if u is not None else [plain.get(id(p), str(i))]
            names_of.append(names)
            s = osd["state"].get(i)
            if s is None:
                continue
            if u is None:
                state[names[0]] = {k: _copy(v, offload) for k, v in s.items()}
                continue
            per = [dict() for _ in names]
            for k, v in s.items():
                if _is_shard_state(k, v, u):
                    full = _flat.all_gather_flat(v.detach().to(u._compute_device), u._world(), u.process_group)
                    for d, info in zip(per, u._infos):
                        d[k] = _copy(full[info.offset:info.offset + info.numel].view(info.shape), offload)
                else:
                    for d in per:
                        d[k] = _copy(v, offload)
            state.update(zip(names, per))
    groups = []
    for g in osd["param_groups"]:
        ng = {k: v for k, v in g.items() if k != "params"}
        ng["params"] = [n for i in g["params"] for n in names_of[i]]
        groups.append(ng)
    return {"state": state, "param_groups": groups}


def optim_state_dict(model, optim, osd):
    cfg = model._optim_state_dict_config
    out = _full_state(model, optim, osd, getattr(cfg, "offload_to_cpu", True))
    if getattr(cfg, "rank0_only", False) and model.rank != 0:
        return {}
    return out


def _shard_state(model, params, named_state, group_params):
    """Name-keyed full state -> this rank's state for an optimizer over `params` (flat shards and plain params)."""
    by_flat, plain, _, fqns = _layout(model)
    state = {}
    with no_grad():
        for i, p in enumerate(params):
            u = by_flat.get(id(p))
            if u is None:
                s = named_state.get(plain.get(id(p)))
                if s is not None:
                    state[i] = {k: _copy(v, False) for k, v in s.items()}
                continue
            entries = [named_state.get(n) for n in fqns[id(u)]]
            if all(e is None for e in entries):
                continue
            if any(e is None for e in entries):
                missing = [n for n, e in zip(fqns[id(u)], entries) if e is None]
                raise ValueError(f"optimizer state is missing for {missing}, but present for the other "
                                 "parameters of their FSDP unit")
            s = {}
            for k, v in entries[0].items():
                tensors = [e[k] for e in entries]
                if k != "step" and all(isinstance(t, Tensor) and tuple(t.shape) == info.shape
                                       for t, info in zip(tensors, u._infos)):
                    world = u._world()
                    flat = cat([t.detach().reshape(-1).to(device=p.device) for t in tensors])
                    size = p.shape[0]
                    pad = size * world - flat.numel()
                    if pad:
                        flat = cat([flat, flat.new_zeros(pad)])
                    me = 0 if world == 1 else u.rank
                    s[k] = flat[me * size:(me + 1) * size].clone()
                else:
                    s[k] = _copy(v, False)
            state[i] = s
    return state


def to_load(model, optim, fosd):
    if not fosd:
        raise ValueError("optim_state_dict_to_load needs the name-keyed optimizer state dict on every rank "
                         "(one saved with rank0_only=True must be loaded and passed on every rank)")
    params = [p for g in optim.param_groups for p in g["params"]]
    state = _shard_state(model, params, fosd["state"], None)
    groups, start = [], 0
    for g, saved in zip(optim.param_groups, fosd["param_groups"]):
        ng = {k: v for k, v in saved.items() if k != "params"}
        ng["params"] = list(range(start, start + len(g["params"])))
        start += len(g["params"])
        groups.append(ng)
    return {"state": state, "param_groups": groups}


def full_optim_state_dict(model, optim, rank0_only):
    named = _full_state(model, optim, None, True)
    if rank0_only and model.rank != 0:
        return {}
    return named


def _to_wire(obj):
    if isinstance(obj, Tensor):
        return {"__tensor__": obj.detach().cpu().float().numpy() if str(obj.dtype) == "rawdev.bfloat16"
                else obj.detach().cpu().numpy()}
    if isinstance(obj, dict):
        return {k: _to_wire(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_wire(v) for v in obj)
    return obj


def _from_wire(obj):
    if isinstance(obj, dict):
        if set(obj) == {"__tensor__"}:
            return _tensor(np.asarray(obj["__tensor__"]))
        return {k: _from_wire(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_from_wire(v) for v in obj)
    return obj


def scatter_full_optim_state_dict(full, model):
    box = [None]
    if model.rank == 0:
        if full is None:
            raise ValueError("scatter_full_optim_state_dict: rank 0 must pass the full optimizer state dict")
        box[0] = _to_wire(full)
    src = dist.get_global_rank(model.process_group, 0) if model.process_group is not None else 0
    dist.broadcast_object_list(box, src=src, group=model.process_group)
    full = _from_wire(box[0])
    params = list(model.parameters())
    state = _shard_state(model, params, full["state"], None)
    # each saved group names original parameters: its flat parameters are those holding them
    by_flat, plain, _, fqns = _layout(model)
    where = {}
    for i, p in enumerate(params):
        for n in (fqns[id(by_flat[id(p)])] if id(p) in by_flat else [plain[id(p)]]):
            where[n] = i
    groups = []
    for g in full["param_groups"]:
        idx = []
        for name in g["params"]:
            i = where[name]
            if i not in idx:
                idx.append(i)
        groups.append(dict({k: v for k, v in g.items() if k != "params"}, params=idx))
    return {"state": state, "param_groups": groups}
