"""torch.distributed.fsdp.FullyShardedDataParallel: sharded data parallelism over a rawdev process group.

A unit (one FullyShardedDataParallel instance) flattens the parameters it manages into one flat parameter and
keeps only this rank's shard (rawdev/distributed/fsdp/_flat.py). Forward all-gathers the full flat parameter
through an autograd Function and points the original parameter attributes at views of it; backward of that
Function reduce-scatters (averages) the full gradient into the shard's .grad. See docs/INTERNALS.md, "FSDP"."""
import contextlib
import functools
import threading

from ... import distributed as dist
from ...autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ...autograd.graph import saved_tensors_hooks
from ...nn import Module, Parameter
from ...tensor.core import Tensor
from .. import collectives as _coll
from . import _flat, _names
from . import _optim_state as _osd
from . import _state_dict as _sd
from .api import (  # noqa: F401  (PyTorch's module exposes the config classes too; programs import them from here)
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
from .wrap import _or_policy, _recursive_wrap, _wrap_module_cls_individually

__all__ = ["FullyShardedDataParallel"]

FSDP_WRAPPED_MODULE = "_fsdp_wrapped_module"
FSDP_PREFIX = FSDP_WRAPPED_MODULE + "."
FLAT_PARAM = "_flat_param"

_IDLE, _FORWARD, _BACKWARD, _SUMMON = "IDLE", "FORWARD_BACKWARD", "BACKWARD", "SUMMON_FULL_PARAMS"
_local = threading.local()     # set while a unit's state_dict walks its subtree (nested units act as modules)

_DEFAULT_CONFIGS = {StateDictType.FULL_STATE_DICT: (FullStateDictConfig, FullOptimStateDictConfig),
                    StateDictType.LOCAL_STATE_DICT: (LocalStateDictConfig, LocalOptimStateDictConfig),
                    StateDictType.SHARDED_STATE_DICT: (ShardedStateDictConfig, ShardedOptimStateDictConfig)}


def clean_tensor_name(name: str) -> str:
    """A state-dict or parameter name without FSDP's `_fsdp_wrapped_module.` segments (nor an activation
    checkpoint wrapper's `_checkpoint_wrapped_module.`), as PyTorch's."""
    return _names.clean(name)


def _tensors(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)


def _map_tensors(obj, fn):
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[_map_tensors(o, fn) for o in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    return obj


def _cast_inputs(obj, dtype):
    return _map_tensors(obj, lambda t: t.to(dtype) if t.dtype.is_floating_point and t.dtype != dtype else t)


class _FullView:
    """What a FULL_SHARD unit's saved-tensor hook keeps for a view of its gathered flat parameter."""
    __slots__ = ("unit", "shape", "stride", "offset")

    def __init__(self, unit, shape, stride, offset):
        self.unit, self.shape, self.stride, self.offset = unit, shape, stride, offset


def _as_device(device_id):
    from ...device import device as _device
    if isinstance(device_id, int):
        return _device("cuda", device_id)
    return _device(device_id)


class FullyShardedDataParallel(Module):
    """torch.distributed.fsdp.FullyShardedDataParallel: shards a module's parameters, gradients and optimizer
    state across the ranks of a process group.

    `auto_wrap_policy` wraps submodules bottom-up into nested units. Each unit flattens the parameters it manages
    (those not inside a nested unit) into one flat parameter, padded to a multiple of the world size, and keeps
    only this rank's shard: `parameters()` yields the shards, so an optimizer steps on shards. A unit's forward
    all-gathers the full flat parameter and points the original parameters at views of it; FULL_SHARD drops the
    gathered copy after forward (not on the root unit, whose backward comes first) and gathers it again before
    the unit's backward; SHARD_GRAD_OP keeps it from forward to backward; after backward the gradient is
    reduce-scattered, averaged over the ranks, into the shard's `.grad`. NO_SHARD keeps everything on every rank
    and all-reduces gradients, as DistributedDataParallel. Under FULL_SHARD the weights the unit's ops save for
    backward are kept (through saved-tensor hooks) as their places in the gathered parameter, so the gathered
    tensor is freed after forward and backward reads them from the re-gathered one.

    Args:
        module: the module to shard (available as `.module`).
        process_group: the group to shard over (None: the default group).
        sharding_strategy: a ShardingStrategy (None: FULL_SHARD); HYBRID_SHARD and _HYBRID_SHARD_ZERO2 raise
            NotImplementedError.
        cpu_offload: CPUOffload(offload_params=True) keeps the shards and their gradients in host memory.
        auto_wrap_policy: a policy from rawdev.distributed.fsdp.wrap (or ModuleWrapPolicy) choosing nested units.
        backward_prefetch, forward_prefetch, limit_all_gathers: accepted scheduling hints; rawdev gathers each
            unit when it runs.
        mixed_precision: a MixedPrecision: compute in param_dtype, reduce gradients in reduce_dtype, keep the
            shards in their own dtype.
        ignored_modules, ignored_states: modules (or parameters) left out of sharding: they stay plain
            parameters on every rank, not synchronized.
        param_init_fn: called on the module when it has parameters on the meta device (which rawdev does not
            have, so it is accepted and not called).
        device_id: a cuda device (int or device) the module is moved to first. On cuda the root unit moves its
            tensor inputs to that device, as PyTorch's.
        sync_module_states: broadcast rank 0's parameters and buffers first.
        use_orig_params: False only (True raises NotImplementedError).
        device_mesh: an object with `.get_group()` giving the group (instead of process_group).

    Example:
        >>> dist.init_process_group("gloo")
        >>> model = FSDP(Net(), auto_wrap_policy=ModuleWrapPolicy({Block}))
        >>> opt = rawdev.optim.Adam(model.parameters())      # the shards
        >>> model(x).sum().backward(); opt.step()
    """

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=BackwardPrefetch.BACKWARD_PRE, mixed_precision=None,
                 ignored_modules=None, param_init_fn=None, device_id=None, sync_module_states=False,
                 forward_prefetch=False, limit_all_gathers=True, use_orig_params=False, ignored_states=None,
                 device_mesh=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"FullyShardedDataParallel expects an nn.Module, got {type(module).__name__}")
        if use_orig_params:
            raise NotImplementedError(
                "rawdev's FullyShardedDataParallel builds use_orig_params=False only (parameters() yields each "
                "unit's flat shard); pass use_orig_params=False")
        if device_mesh is not None:
            if process_group is not None:
                raise ValueError("Cannot pass both process_group and device_mesh at the same time. "
                                 "Please just pass only one of them.")
            if not hasattr(device_mesh, "get_group"):
                raise TypeError("device_mesh must have get_group() (rawdev builds 1-D meshes' groups only)")
            process_group = device_mesh.get_group()
        strategy = ShardingStrategy.FULL_SHARD if sharding_strategy is None else sharding_strategy
        if strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
            raise NotImplementedError(
                f"rawdev's FullyShardedDataParallel does not build {strategy} (sharding within a node and "
                "replicating across nodes): use FULL_SHARD, SHARD_GRAD_OP or NO_SHARD")
        if not isinstance(strategy, ShardingStrategy):
            raise TypeError(f"sharding_strategy must be a ShardingStrategy, got {strategy!r}")
        if mixed_precision is not None and mixed_precision.keep_low_precision_grads:
            raise NotImplementedError("rawdev's FullyShardedDataParallel keeps sharded gradients in the "
                                      "parameters' dtype: keep_low_precision_grads=True is not built")
        self.process_group = process_group
        self.rank = dist.get_rank(process_group)
        self.world_size = dist.get_world_size(process_group)
        self.sharding_strategy = strategy
        self.cpu_offload = cpu_offload
        self.mixed_precision = mixed_precision
        self.backward_prefetch, self.forward_prefetch = backward_prefetch, forward_prefetch
        self.limit_all_gathers = limit_all_gathers
        self.training_state = _IDLE
        self._is_root = None
        self._sync_gradients = True
        self._full = None            # the gathered flat parameter while the unit is unsharded
        self._pending_grad = None    # the unsharded gradient no_sync accumulated
        self._needs_regather = False  # FULL_SHARD resharded after a forward that recorded a graph
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config = FullStateDictConfig()
        self._optim_state_dict_config = FullOptimStateDictConfig()

        ignored_mods, ignored_params = self._ignored(module, ignored_modules, ignored_states)
        if device_id is not None:
            module.to(_as_device(device_id))
        if param_init_fn is not None and any(p.device.type == "meta" for p in module.parameters()):
            param_init_fn(module)
        if auto_wrap_policy is not None:
            kwargs = dict(process_group=process_group, sharding_strategy=strategy, cpu_offload=cpu_offload,
                          backward_prefetch=backward_prefetch, mixed_precision=mixed_precision,
                          param_init_fn=param_init_fn, device_id=device_id, sync_module_states=sync_module_states,
                          forward_prefetch=forward_prefetch, limit_all_gathers=limit_all_gathers,
                          ignored_states=[p for m in (ignored_modules or ()) for p in m.parameters()]
                          + [p for p in (ignored_states or ()) if not isinstance(p, Module)] or None)
            ignore_cls = tuple(mixed_precision._module_classes_to_ignore) if mixed_precision is not None else ()
            if ignore_cls:
                # as PyTorch: those modules (BatchNorm by default) become units of their own, in full precision
                for m in module.modules():
                    if isinstance(m, ignore_cls):
                        m._wrap_overrides = {"mixed_precision": None}
                auto_wrap_policy = functools.partial(
                    _or_policy, policies=[auto_wrap_policy, functools.partial(_wrap_module_cls_individually,
                                                                              module_classes=ignore_cls)])
            _recursive_wrap(module, auto_wrap_policy, FullyShardedDataParallel, ignored_mods, ignored_params,
                            only_wrap_children=True, **kwargs)
        self._fsdp_wrapped_module = module
        self._init_flat_param(module, ignored_mods, ignored_params, sync_module_states)

    @staticmethod
    def _ignored(module, ignored_modules, ignored_states):
        mods, params = set(), set()
        for m in list(ignored_modules or ()) + [s for s in (ignored_states or ()) if isinstance(s, Module)]:
            if isinstance(m, FullyShardedDataParallel):
                raise ValueError("`ignored_modules` should not include FSDP modules")
            mods.update(id(s) for s in m.modules())
            params.update(id(p) for p in m.parameters())
        for s in ignored_states or ():
            if not isinstance(s, Module):
                params.add(id(s))
        return mods, params

    def _init_flat_param(self, module, ignored_mods, ignored_params, sync_module_states):
        entries = _flat.collect(module, lambda m: isinstance(m, FullyShardedDataParallel), ignored_mods,
                                ignored_params)
        self._buffer_owners = []
        self._managed_buffers(module, ignored_mods)
        if sync_module_states:
            src = dist.get_global_rank(self.process_group, 0) if self.process_group is not None else 0
            for _, _, p in entries:
                dist.broadcast(p.detach(), src=src, group=self.process_group)
            for mod, name in self._buffer_owners:
                dist.broadcast(mod._buffers[name].detach(), src=src, group=self.process_group)
        mp = self.mixed_precision
        self._buffer_dtypes = {}
        if mp is not None and mp.buffer_dtype is not None:
            with no_grad():
                for mod, name in self._buffer_owners:
                    b = mod._buffers[name]
                    if b.dtype.is_floating_point:
                        self._buffer_dtypes[(id(mod), name)] = b.dtype
                        mod._buffers[name] = b.to(mp.buffer_dtype)
        self._infos = []
        self._numel = 0
        self._compute_device = next((p.device for _, _, p in entries), None)
        if not entries:
            return
        world = 1 if self.sharding_strategy is ShardingStrategy.NO_SHARD else self.world_size
        full, self._infos, self._numel = _flat.flatten(entries, world)
        self._compute_device = full.device
        shard_size = full.numel() // world
        self._shard_size = shard_size
        me = 0 if world == 1 else self.rank
        with no_grad():
            shard = full[me * shard_size:(me + 1) * shard_size].clone()
            if self.cpu_offload is not None and self.cpu_offload.offload_params:
                shard = shard.cpu()
        flat = _flat.make_flat_param(shard, entries[0][2].requires_grad)
        for info in self._infos:
            for mod, name in info.owners:
                del mod._parameters[name]
        module.register_parameter(FLAT_PARAM, flat)
        self.__dict__["_flat_owner"] = module      # where the flat parameter lives, whatever wraps it later
        self._point_params_at(None)

    def _managed_buffers(self, mod, ignored_mods):
        for name, b in mod._buffers.items():
            if b is not None:
                self._buffer_owners.append((mod, name))
        for child in mod._modules.values():
            if child is None or isinstance(child, FullyShardedDataParallel) or id(child) in ignored_mods:
                continue
            self._managed_buffers(child, ignored_mods)

    # ------------------------------------------------------------------ properties
    @property
    def module(self) -> Module:
        """The wrapped module."""
        return self._fsdp_wrapped_module

    @property
    def _flat_param(self):
        owner = self.__dict__.get("_flat_owner")
        return None if owner is None else owner._parameters.get(FLAT_PARAM)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == FSDP_WRAPPED_MODULE or FSDP_WRAPPED_MODULE not in self.__dict__.get("_modules", {}):
                raise
            return getattr(self._fsdp_wrapped_module, name)

    def __getitem__(self, key):
        return self._fsdp_wrapped_module.__getitem__(key)

    def named_parameters(self, *args, **kwargs):
        """named_parameters with FSDP's `_fsdp_wrapped_module.` segments removed from the names.

        Example:
            >>> [n for n, _ in model.named_parameters()]     # ["_flat_param", "blocks.0._flat_param", ...]
        """
        for name, p in super().named_parameters(*args, **kwargs):
            yield clean_tensor_name(name), p

    def named_buffers(self, *args, **kwargs):
        """named_buffers with FSDP's `_fsdp_wrapped_module.` segments removed from the names.

        Example:
            >>> [n for n, _ in model.named_buffers()]        # the original names: ["bn.running_mean", ...]
        """
        for name, b in super().named_buffers(*args, **kwargs):
            yield clean_tensor_name(name), b

    @staticmethod
    def fsdp_modules(module, root_only=False):
        """The FullyShardedDataParallel instances in `module` (itself included); root_only: the outermost ones.

        Args:
            module: the module to search.
            root_only: only the units not nested in another.

        Returns:
            A list of FullyShardedDataParallel.

        Example:
            >>> len(FSDP.fsdp_modules(model))
        """
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if not root_only:
            return units
        nested = {id(n) for u in units for n in u.modules() if n is not u and isinstance(n, FullyShardedDataParallel)}
        return [u for u in units if id(u) not in nested]

    def check_is_root(self) -> bool:
        """Whether this unit is the root (outermost) one: found at its first forward, or now.

        Returns:
            True for the outermost unit.

        Example:
            >>> model.check_is_root(), model.blocks[0].check_is_root()     # (True, False)
        """
        self._lazy_init()
        return bool(self._is_root)

    def _lazy_init(self):
        if self._is_root is not None:
            return
        self._is_root = True
        for m in self.modules():
            if m is not self and isinstance(m, FullyShardedDataParallel):
                m._is_root = False

    def _units(self):
        return [m for m in self.modules() if isinstance(m, FullyShardedDataParallel)]

    # ------------------------------------------------------------------ gather / reduce
    def _world(self):
        return 1 if self.sharding_strategy is ShardingStrategy.NO_SHARD else self.world_size

    def _gather(self, shard, for_compute):
        """The full padded flat tensor (a fresh one) on the compute device; cast to param_dtype for compute."""
        src = shard.to(self._compute_device) if shard.device != self._compute_device else shard
        mp = self.mixed_precision
        if for_compute and mp is not None and mp.param_dtype is not None and src.dtype != mp.param_dtype:
            src = src.to(mp.param_dtype)
        return _flat.all_gather_flat(src, self._world(), self.process_group)

    def _reduce_grad(self, grad):
        """The full flat gradient -> this rank's shard gradient (averaged over the ranks); under no_sync it is
        kept unsharded and added to the next synchronized backward's."""
        grad = grad.detach()
        flat = self._flat_param
        self.training_state = _IDLE
        if not self._sync_gradients:
            g = grad.to(flat.dtype)
            self._pending_grad = g.clone() if self._pending_grad is None else self._pending_grad + g
            self._reshard()
            return None
        if self._pending_grad is not None:
            grad = grad.to(flat.dtype) + self._pending_grad
            self._pending_grad = None
        mp = self.mixed_precision
        reduce_dtype = None if mp is None else (mp.reduce_dtype or mp.param_dtype)
        if reduce_dtype is not None and grad.dtype != reduce_dtype:
            grad = grad.to(reduce_dtype)
        grad = grad.contiguous()
        world = self._world()
        if self.sharding_strategy is ShardingStrategy.NO_SHARD:
            if self.world_size > 1:
                grad = grad.clone()
                _coll.all_reduce(grad, op=dist.ReduceOp.AVG, group=self.process_group)
            out = grad
        elif world == 1:
            out = grad
        else:
            out = grad.new_empty(self._shard_size)
            _coll.reduce_scatter_tensor(out, grad, op=dist.ReduceOp.AVG, group=self.process_group)
        self._reshard()
        return out.to(dtype=flat.dtype, device=flat.device)

    def _point_params_at(self, full):
        """Set every original parameter attribute to its view of `full` (None: an empty placeholder)."""
        for info in self._infos:
            if full is None:
                view = self._flat_param.new_empty(0)
            else:
                view = full[info.offset:info.offset + info.numel].view(info.shape)
            for mod, name in info.owners:
                setattr(mod, name, view)

    def _unshard(self):
        flat = self._flat_param
        if flat is None:
            return
        if is_grad_enabled() and flat.requires_grad:
            full = _flat.Unshard.apply(flat, self)
        else:
            with no_grad():
                full = self._gather(flat.detach(), for_compute=True)
        self._full = full
        self._point_params_at(full)

    def _reshard(self):
        if self._full is not None:
            self._full = None
            self._point_params_at(None)

    def _pre_backward(self, grad):
        # FULL_SHARD dropped the gathered parameter after forward: gather it again before this unit's backward
        if self._full is None and self._flat_param is not None and self._needs_regather:
            self._needs_regather = False
            self.training_state = _BACKWARD
            # through Unshard again: an activation-checkpointed module recomputes its forward from these views,
            # and its gradients must reach the shard the same way
            with enable_grad():
                full = _flat.Unshard.apply(self._flat_param, self)
                self._full = full
                self._point_params_at(full)
        return None

    def _pack(self, t):
        # saved-tensor hook while a FULL_SHARD unit runs forward: a view of the gathered flat parameter is kept
        # as where it lies in it, so the gathered tensor itself can be freed after forward
        full = self._full
        if full is not None and (t._root is full._root if full._root is not None else t._buf is full._buf):
            return _FullView(self, tuple(t.shape), tuple(t.stride()), t.storage_offset())
        return t

    @staticmethod
    def _unpack(packed):
        if not isinstance(packed, _FullView):
            return packed
        unit = packed.unit
        if unit._full is None:      # its output carried no hook (e.g. backward reached it another way)
            unit._pre_backward(None)
            if unit._full is None:
                with no_grad():
                    unit._full = unit._gather(unit._flat_param.detach(), for_compute=True)
        return unit._full.detach().as_strided(packed.shape, packed.stride, packed.offset)

    # ------------------------------------------------------------------ forward
    def forward(self, *args, **kwargs):
        """Gather this unit's parameters, run the wrapped module, and (FULL_SHARD, not the root) drop them again.

        Args:
            *args, **kwargs: the wrapped module's inputs.

        Returns:
            The wrapped module's output.
        """
        self._lazy_init()
        if self._is_root and self._flat_param is not None and self._compute_device.type == "cuda":
            # as PyTorch's root pre-forward: the inputs go to the compute device
            dev = self._compute_device
            args, kwargs = (_map_tensors(a, lambda t: t.to(dev) if t.device != dev else t) for a in (args, kwargs))
        mp = self.mixed_precision
        if mp is not None and mp.param_dtype is not None and (
                mp.cast_forward_inputs or (self._is_root and mp.cast_root_forward_inputs)):
            args, kwargs = _cast_inputs(args, mp.param_dtype), _cast_inputs(kwargs, mp.param_dtype)
        grad = is_grad_enabled() and self._flat_param is not None and self._flat_param.requires_grad
        free_after = self.sharding_strategy is ShardingStrategy.FULL_SHARD and not self._is_root
        self.training_state = _FORWARD
        try:
            self._unshard()
            if grad and free_after:
                with saved_tensors_hooks(self._pack, self._unpack):
                    out = self._fsdp_wrapped_module(*args, **kwargs)
            else:
                out = self._fsdp_wrapped_module(*args, **kwargs)
        finally:
            self.training_state = _IDLE
        if not grad or free_after:
            self._reshard()
        self._needs_regather = grad
        if grad and free_after:
            for t in _tensors(out):
                if t.requires_grad:
                    t.register_hook(self._pre_backward)
        return out

    # ------------------------------------------------------------------ no_sync / summon / clip
    @contextlib.contextmanager
    def no_sync(self):
        """Inside the block gradients accumulate unsharded on each rank, with no communication; the first
        backward after it reduces the sum. Call it on the root unit.

        Example:
            >>> with model.no_sync():
            ...     model(x1).sum().backward()
            >>> model(x2).sum().backward()        # shard grads: the average over ranks of both batches' sum
        """
        self._lazy_init()
        if not self._is_root:
            raise RuntimeError("`no_sync()` on inner FSDP instances is not supported. Please call `no_sync()` "
                               "on root FSDP module.")
        units = self._units()
        old = [u._sync_gradients for u in units]
        for u in units:
            u._sync_gradients = False
        try:
            yield
        finally:
            for u, o in zip(units, old):
                u._sync_gradients = o

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse=True, writeback=True, rank0_only=False, offload_to_cpu=False,
                           with_grads=False):
        """Inside the block the FSDP units in `module` hold their full parameters, registered as parameters under
        their original names; with writeback, changes made to them are written back into the shards on exit.

        Args:
            module: an FSDP module, or a module containing some.
            recurse: also the nested units (False: only the outermost).
            writeback: copy the (possibly modified) full parameters back into the shards on exit.
            rank0_only: only rank 0 sees the full parameters (the others still take part in the gather).
            offload_to_cpu: accepted; the gathered parameters stay where the compute happens.
            with_grads: needs use_orig_params=True, which rawdev does not build.

        Example:
            >>> with FSDP.summon_full_params(model):
            ...     w = model.module.fc.weight.clone()
        """
        if with_grads:
            raise ValueError("`with_grads=True` requires `use_orig_params=True`")
        if rank0_only and writeback:
            raise ValueError("writeback=True and rank0_only=True is not supported, as model parameter shapes "
                             "will be different across ranks, and writing to them can lead to inconsistencies "
                             "across ranks when the context is exited.")
        units = FullyShardedDataParallel.fsdp_modules(module, root_only=not recurse)
        for u in units:
            if u.training_state != _IDLE:
                raise AssertionError(f"Expects the FSDP module to be in state IDLE but got {u.training_state}: "
                                     "summon_full_params cannot run inside forward or backward, or nested")
        exposed = []
        try:
            for u in units:
                u.training_state = _SUMMON
                full = u._summon(expose=not rank0_only or u.rank == 0)
                exposed.append((u, full))
            yield
        finally:
            for u, full in reversed(exposed):
                u._unsummon(full, writeback)
                u.training_state = _IDLE

    def _summon(self, expose):
        flat = self._flat_param
        if flat is None:
            return None
        with no_grad():
            full = self._gather(flat.detach(), for_compute=False)
        if not expose:
            return None
        del self.__dict__["_flat_owner"]._parameters[FLAT_PARAM]
        self.__dict__["_hidden_flat"] = flat
        for info in self._infos:
            p = Parameter(full[info.offset:info.offset + info.numel].view(info.shape),
                          requires_grad=info.requires_grad)
            for mod, name in info.owners:
                mod.__dict__.pop(name, None)
                mod._parameters[name] = p
        return full

    def _unsummon(self, full, writeback):
        if full is None:
            return
        flat = self.__dict__.pop("_hidden_flat")
        with no_grad():
            for info in self._infos:
                mod, name = info.owners[0]
                p = mod._parameters[name]
                if writeback:
                    full[info.offset:info.offset + info.numel].copy_(p.detach().reshape(-1))
            for info in self._infos:
                for mod, name in info.owners:
                    mod._parameters.pop(name, None)
            if writeback:
                me = 0 if self._world() == 1 else self.rank
                flat.detach().copy_(full[me * self._shard_size:(me + 1) * self._shard_size])
        self.__dict__["_flat_owner"].register_parameter(FLAT_PARAM, flat)
        self._point_params_at(None)

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clip the gradients of all the parameters (every rank's shards together) to a total norm of
        `max_norm`, as torch.nn.utils.clip_grad_norm_ would on the unsharded model. Call it on the root unit.

        Args:
            max_norm: the largest total norm.
            norm_type: the p of the p-norm (inf for the largest magnitude).

        Returns:
            The total norm of the unsharded gradients (a tensor).

        Example:
            >>> model.clip_grad_norm_(1.0)
        """
        from ._clip import clip_grad_norm
        self._lazy_init()
        if not self._is_root:
            raise RuntimeError("`clip_grad_norm_()` should only be called on the root FSDP instance")
        return clip_grad_norm(self, max_norm, norm_type)

    # ------------------------------------------------------------------ state dicts
    @staticmethod
    def set_state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
        """Set the state-dict type (and configs) of every FSDP unit in `module`; returns the previous settings.

        Args:
            module: the model (an FSDP root, or a module containing FSDP units).
            state_dict_type: a StateDictType.
            state_dict_config: its config (None: the type's default).
            optim_state_dict_config: the optimizer state dict config (None: the type's default).

        Returns:
            A StateDictSettings of the previous type and configs.

        Example:
            >>> FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT)
        """
        if not isinstance(state_dict_type, StateDictType):
            raise ValueError(f"Expected a StateDictType, got {state_dict_type!r}")
        cfg_cls, optim_cls = _DEFAULT_CONFIGS[state_dict_type]
        cfg = cfg_cls() if state_dict_config is None else state_dict_config
        ocfg = optim_cls() if optim_state_dict_config is None else optim_state_dict_config
        if not isinstance(cfg, cfg_cls):
            raise RuntimeError(f"Expected state_dict_config of type {cfg_cls} but got {type(cfg)}")
        if not isinstance(ocfg, optim_cls):
            raise RuntimeError(f"Expected optim_state_dict_config of type {optim_cls} but got {type(ocfg)}")
        units = FullyShardedDataParallel.fsdp_modules(module)
        if not units:
            raise ValueError("set_state_dict_type: the module has no FullyShardedDataParallel unit")
        prev = FullyShardedDataParallel.get_state_dict_type(module)
        for u in units:
            u._state_dict_type, u._state_dict_config, u._optim_state_dict_config = state_dict_type, cfg, ocfg
        return prev

    @staticmethod
    def get_state_dict_type(module):
        """The StateDictSettings every FSDP unit in `module` is set to (they must agree).

        Args:
            module: the model.

        Returns:
            A StateDictSettings.

        Example:
            >>> FSDP.get_state_dict_type(model).state_dict_type
        """
        units = FullyShardedDataParallel.fsdp_modules(module)
        if not units:
            raise ValueError("get_state_dict_type: the module has no FullyShardedDataParallel unit")
        u = units[0]
        settings = StateDictSettings(u._state_dict_type, u._state_dict_config, u._optim_state_dict_config)
        for v in units[1:]:
            if (v._state_dict_type, v._state_dict_config, v._optim_state_dict_config) != tuple(settings):
                raise AssertionError("All FSDP modules should have the same state_dict settings.")
        return settings

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
        """Inside the block, every FSDP unit in `module` uses this state-dict type (and configs).

        Args:
            module: the model.
            state_dict_type: a StateDictType.
            state_dict_config: its config (None: the type's default).
            optim_state_dict_config: the optimizer state dict config (None: the type's default).

        Example:
            >>> cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
            >>> with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
            ...     sd = model.state_dict()
        """
        prev = FullyShardedDataParallel.set_state_dict_type(module, state_dict_type, state_dict_config,
                                                            optim_state_dict_config)
        try:
            yield
        finally:
            FullyShardedDataParallel.set_state_dict_type(module, *prev)

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """The state dict of the kind state_dict_type set: FULL (unsharded, original names; rank0_only: {} on
        other ranks), LOCAL (each unit's flat shard under `<unit>._flat_param`), SHARDED (each rank's dim-0
        chunk of every original parameter, as a plain tensor; buffers whole).

        Returns:
            An ordered dict name -> tensor.

        Example:
            >>> with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
            ...     sd = model.state_dict()          # {"fc.weight": <unsharded>, ...}
        """
        if getattr(_local, "walking", False):
            return super().state_dict(*args, destination=destination, prefix=prefix, keep_vars=keep_vars)
        out = _sd.state_dict(self)
        if destination is None:
            return out
        for k, v in out.items():
            destination[prefix + k] = v
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Load a state dict of the kind state_dict_type set (FULL: resharded into every rank's shards).

        Args:
            state_dict: what state_dict() returned under the same type.
            strict: the keys must match exactly.
            assign: not supported (the shards keep their storage).

        Returns:
            (missing_keys, unexpected_keys), with the original names.

        Example:
            >>> with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
            ...     model.load_state_dict(sd)        # every rank keeps its shard of the loaded values
        """
        return _sd.load_state_dict(self, state_dict, strict)

    def _plain_state_dict(self):
        _local.walking = True
        try:
            return super().state_dict()
        finally:
            _local.walking = False

    # ------------------------------------------------------------------ optimizer state dicts
    @staticmethod
    def optim_state_dict(model, optim, optim_state_dict=None, group=None):
        """The optimizer's state keyed by the original parameter names, the sharded state gathered into full
        tensors (as state_dict_type's optim config says: rank0_only gives {} on other ranks).

        Args:
            model: the FSDP root the optimizer was built on.
            optim: the optimizer (over model.parameters()).
            optim_state_dict: optim.state_dict() (None: taken now).
            group: accepted; the units' own groups are used.

        Returns:
            {"state": {name: {...}}, "param_groups": [{..., "params": [names]}]}.

        Example:
            >>> osd = FSDP.optim_state_dict(model, opt)
        """
        return _osd.optim_state_dict(model, optim, optim_state_dict)

    @staticmethod
    def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer=False, load_directly=False,
                                 group=None):
        """Turn a name-keyed optimizer state dict (from optim_state_dict) into the one `optim.load_state_dict`
        takes on this rank (its shards).

        Args:
            model: the FSDP root.
            optim: the optimizer over model.parameters().
            optim_state_dict: what optim_state_dict returned (the same on every rank).
            is_named_optimizer, group: accepted.
            load_directly: also load it into `optim`.

        Returns:
            The optimizer state dict for this rank.

        Example:
            >>> opt.load_state_dict(FSDP.optim_state_dict_to_load(model, opt, osd))
        """
        out = _osd.to_load(model, optim, optim_state_dict)
        if load_directly:
            optim.load_state_dict(out)
        return out

    @staticmethod
    def full_optim_state_dict(model, optim, optim_input=None, rank0_only=True, group=None):
        """The legacy full optimizer state dict: the optimizer's state keyed by the original parameter names,
        gathered into full tensors (as optim_state_dict under FULL_STATE_DICT); rank0_only: {} on other ranks.

        Args:
            model: the FSDP root.
            optim: the optimizer over model.parameters().
            optim_input: accepted (must be None or model.parameters()).
            rank0_only: only rank 0 gets the dict.
            group: accepted.

        Returns:
            {"state": {name: {...}}, "param_groups": [{..., "params": [names]}]}.

        Example:
            >>> full = FSDP.full_optim_state_dict(model, opt)
        """
        return _osd.full_optim_state_dict(model, optim, rank0_only)

    @staticmethod
    def scatter_full_optim_state_dict(full_optim_state_dict, model, optim_input=None, optim=None, group=None):
        """Rank 0's full optimizer state dict (from full_optim_state_dict; None on the other ranks) -> each
        rank's sharded one, for `optim.load_state_dict`.

        Args:
            full_optim_state_dict: the dict on rank 0 (ignored elsewhere).
            model: the FSDP root.
            optim_input, optim, group: accepted.

        Returns:
            This rank's optimizer state dict.

        Example:
            >>> opt.load_state_dict(FSDP.scatter_full_optim_state_dict(full if rank == 0 else None, model))
        """
        return _osd.scatter_full_optim_state_dict(full_optim_state_dict, model)

    def extra_repr(self) -> str:
        return f"sharding_strategy={self.sharding_strategy}, world_size={self.world_size}"
