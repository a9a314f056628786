"""fully_shard (FSDP2): each parameter of a module becomes an nn.Parameter holding a DTensor sharded Shard(0)
over a 1-d DeviceMesh; the module's class becomes a subclass of FSDPModule and its own class. A forward pre-hook
all-gathers the parameters into plain tensors the forward computes with (put in the module's parameter slots for
the forward); the forward hook puts the DTensor parameters back (reshard). The gathered tensors stay referenced
by the autograd graph until backward, which reduce-scatters each full gradient (averaged) into the DTensor's
local shard gradient, so `param.grad` is a Shard(0) DTensor."""
from typing import Any

from .... import distributed as dist
from ....autograd.grad_mode import no_grad
from ....nn import Module
from ....tensor.core import Tensor
from ... import collectives as C
from ...device_mesh import DeviceMesh, init_device_mesh
from ...tensor._api import DTensor, _DTensorParameter, distribute_tensor
from ...tensor.placement_types import Shard
from ._param import AllGather, ShardedParam, _padded
from ._policies import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy


def _map_float(obj, dtype):
    if isinstance(obj, Tensor) and not isinstance(obj, DTensor):
        return obj.to(dtype) if obj.is_floating_point() and obj.dtype != dtype else obj
    if isinstance(obj, tuple):
        return tuple(_map_float(o, dtype) for o in obj)
    if isinstance(obj, list):
        return [_map_float(o, dtype) for o in obj]
    if isinstance(obj, dict):
        return {k: _map_float(v, dtype) for k, v in obj.items()}
    return obj


class _FSDPState:
    """What fully_shard keeps for one module: its mesh, policies, managed parameters and sync flags."""

    def __init__(self, module, mesh, reshard_after_forward, mp_policy):
        self.module, self.mesh = module, mesh
        self.group = mesh.get_group(0)
        self.world = mesh.size(0)
        self.reshard_after_forward = reshard_after_forward
        self.mp_policy = mp_policy
        self.param_dtype = mp_policy.param_dtype
        self.params: list[ShardedParam] = []
        self.sync = True
        self.unsharded = False
        self.pending: dict[int, Tensor] = {}
        self.reduced = 0

    def unshard(self):
        if self.unsharded:
            return
        self.reduced = 0
        for sp in self.params:
            local = sp.dparam.to_local()
            full = AllGather.apply(local, sp)
            sp.module._parameters[sp.name] = full
        self.unsharded = True

    def reshard(self):
        if not self.unsharded:
            return
        for sp in self.params:
            sp.module._parameters[sp.name] = sp.dparam
        self.unsharded = False

    def reduce_grad(self, sp, grad):
        """The full gradient of one parameter -> its local shard's gradient (averaged over the mesh); without
        gradient sync it is kept unsharded and added into the next synchronized backward's."""
        grad = grad.detach()
        local = sp.dparam.to_local()
        key = id(sp)
        self.reduced += 1
        if self.reduced >= sum(1 for q in self.params if q.dparam.requires_grad):
            self.reduced = 0
            self.reshard()         # every gradient of this module is in: the gathered parameters are done
        if not self.sync:
            g = grad.to(local.dtype)
            self.pending[key] = g.clone() if key not in self.pending else self.pending[key] + g
            return None
        if key in self.pending:
            grad = grad.to(local.dtype) + self.pending.pop(key)
        rdt = self.mp_policy.reduce_dtype or self.param_dtype
        if rdt is not None and grad.dtype != rdt:
            grad = grad.to(rdt)
        if self.world == 1:
            return grad.to(local.dtype)
        with no_grad():
            full = _padded(grad, sp.rows * self.world)
            out = full.new_empty((sp.rows,) + tuple(full.shape[1:]))
            C.reduce_scatter_tensor(out, full, op=dist.ReduceOp.AVG, group=self.group)
            out = out[: local.shape[0]].contiguous()
        return out.to(local.dtype)


def _pre_forward(module, args, kwargs):
    st = module._fsdp_state
    st.reshard()        # parameters left gathered (reshard_after_forward=False) may be older than the shards
    st.unshard()
    if st.param_dtype is not None and st.mp_policy.cast_forward_inputs:
        args, kwargs = _map_float(args, st.param_dtype), _map_float(kwargs, st.param_dtype)
    return args, kwargs


def _post_forward(module, args, output):
    st = module._fsdp_state
    if st.reshard_after_forward:
        st.reshard()
    if st.mp_policy.output_dtype is not None:
        output = _map_float(output, st.mp_policy.output_dtype)
    return output


class FSDPModule:
    """torch.distributed.fsdp.FSDPModule: the mixin a module's class gets from fully_shard (its class becomes
    `FSDP<Name>(FSDPModule, <Name>)`).

    Example:
        >>> fully_shard(model)
        >>> isinstance(model, FSDPModule)
        True
    """

    _fsdp_state: Any        # set by fully_shard; `modules` comes from the nn.Module the class is mixed into
    modules: Any

    def reshard(self) -> None:
        """Free the all-gathered parameters: the module's parameters are the sharded DTensors again."""
        self._fsdp_state.reshard()

    def unshard(self, async_op: bool = False) -> None:
        """All-gather the parameters (the module's parameter slots hold the full tensors until reshard()).

        Args:
            async_op: accepted for PyTorch's signature; the all-gather is done when this returns.
        """
        self._fsdp_state.unshard()

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse: bool = True) -> None:
        """Whether backward reduce-scatters gradients (False: they accumulate unsharded until a synced backward).

        Args:
            requires_gradient_sync: the flag.
            recurse: also set it on every FSDPModule below this one.
        """
        mods = self.modules() if recurse else [self]
        for m in mods:
            if isinstance(m, FSDPModule):
                m._fsdp_state.sync = requires_gradient_sync

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True) -> None:
        """Whether the forward hook reshards the parameters.

        Args:
            reshard_after_forward: the flag.
            recurse: also set it on every FSDPModule below this one.
        """
        if not isinstance(reshard_after_forward, bool):
            raise ValueError(f"reshard_after_forward should be a bool, got {type(reshard_after_forward)}")
        mods = self.modules() if recurse else [self]
        for m in mods:
            if isinstance(m, FSDPModule):
                m._fsdp_state.reshard_after_forward = reshard_after_forward


_CLASSES: dict[type, type] = {}


def _fsdp_class(cls):
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    return _CLASSES[cls]


def _managed(module, ignored):
    """(owner module, attribute name, param) of every parameter not under a nested FSDPModule (shared ones
    once)."""
    found, seen = [], set()

    def visit(mod):
        for name, p in mod._parameters.items():
            if p is None or id(p) in ignored or id(p) in seen:
                continue
            seen.add(id(p))
            found.append((mod, name, p))
        for child in mod._modules.values():
            if child is not None and not isinstance(child, FSDPModule):
                visit(child)

    visit(module)
    return found


def fully_shard(module: Module, *, mesh: DeviceMesh | None = None, reshard_after_forward: bool = True,
                shard_placement_fn: Any = None, mp_policy: MixedPrecisionPolicy | None = None,
                offload_policy: OffloadPolicy | None = None, ignored_params: Any = None) -> Module:
    """torch.distributed.fsdp.fully_shard: shard `module`'s parameters (those not under a nested fully_shard)
    as Shard(0) DTensors over a 1-d mesh; forward all-gathers them, backward reduce-scatters the gradients.

    Args:
        module: the module (call fully_shard on the blocks first, then on the root).
        mesh: a 1-d DeviceMesh (default: one over the default process group on the current device type).
        reshard_after_forward: free the gathered parameters after forward.
        shard_placement_fn: None, or a function of a parameter returning None or Shard(0) (other placements are
            not built).
        mp_policy: the MixedPrecisionPolicy (None: MixedPrecisionPolicy(), PyTorch's default).
        offload_policy: None or OffloadPolicy() (CPUOffloadPolicy is not built).
        ignored_params: parameters left as they are (not sharded, not synchronized).

    Returns:
        The same module, its class now a subclass of FSDPModule.

    Example:
        >>> for block in model.blocks:
        ...     fully_shard(block)
        >>> fully_shard(model)
    """
    if not isinstance(module, Module):
        raise ValueError(f"fully_shard does not support containers that do not implement forward: {module}")
    mp_policy = MixedPrecisionPolicy() if mp_policy is None else mp_policy
    if isinstance(module, FSDPModule):
        raise ValueError("fully_shard has already been applied to this module")
    if isinstance(offload_policy, CPUOffloadPolicy):
        raise NotImplementedError("fully_shard: CPUOffloadPolicy is not built in rawdev (the shards stay on the "
                                  "mesh's device)")
    if not isinstance(reshard_after_forward, bool):
        raise ValueError(f"reshard_after_forward should be a bool, got {type(reshard_after_forward)}")
    if mesh is None:
        if not dist.is_initialized():
            raise ValueError("fully_shard: the default process group is not initialized; call "
                             "init_process_group or pass a mesh")
        dev = next((p.device.type for p in module.parameters()), "cpu")
        mesh = init_device_mesh(dev, (dist.get_world_size(),))
    if mesh.ndim != 1:
        raise ValueError(f"fully_shard expects a 1D DeviceMesh in rawdev (2D HSDP is not built) but got {mesh}")
    ignored = {id(p) for p in (ignored_params or ())}
    st = _FSDPState(module, mesh, reshard_after_forward, mp_policy)
    world, rank = mesh.size(0), mesh.get_local_rank(0)
    by_id: dict[int, Any] = {}
    for owner, name, p in _managed(module, ignored):
        if isinstance(p, DTensor):
            raise ValueError(f"fully_shard: parameter {name} is already a DTensor (tensor parallelism with "
                             "FSDP2 is not built)")
        if p.ndim == 0:
            raise ValueError(f"fully_shard: parameter {name} is 0-dim; Shard(0) needs a dimension")
        if shard_placement_fn is not None:
            pl = shard_placement_fn(p)
            if pl is not None and pl != Shard(0):
                raise NotImplementedError(f"fully_shard: shard placement {pl} is not built (only Shard(0))")
        d = distribute_tensor(p.detach(), mesh, [Shard(0)])
        dp = _DTensorParameter._wrap(d, p.requires_grad)
        rows = -(-p.shape[0] // world)
        sp = ShardedParam(owner, name, dp, rows * rank, rows, st)
        owner._parameters[name] = dp
        by_id[id(p)] = dp
        st.params.append(sp)
    # a parameter shared with another attribute of the module points at the same DTensor
    for mod in module.modules():
        if isinstance(mod, FSDPModule) and mod is not module:
            continue
        for name, p in list(mod._parameters.items()):
            if p is not None and id(p) in by_id:
                mod._parameters[name] = by_id[id(p)]
    module._fsdp_state = st
    module.register_forward_pre_hook(_pre_forward, with_kwargs=True)
    module.register_forward_hook(_post_forward)
    module.__class__ = _fsdp_class(type(module))
    return module
