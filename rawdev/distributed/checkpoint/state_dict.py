"""`torch.distributed.checkpoint.state_dict`: a model's and its optimizers' state_dicts in the form distributed
checkpoints keep them — keys are parameter names (fully qualified, without the `module.` of a
DistributedDataParallel wrapper or the `_orig_mod.` of a compiled module), the optimizer's state keyed by those
names instead of by position, so a checkpoint survives a change of wrapping or of parameter order."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ...autograd.grad_mode import no_grad
from ...nn.module import Module
from ...optim.optimizer import Optimizer
from ...tensor.core import Tensor

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict", "get_state_dict",
           "set_model_state_dict", "set_optimizer_state_dict", "set_state_dict"]

_WRAPPER_PREFIXES = ("module.", "_orig_mod.")


@dataclasses.dataclass
class StateDictOptions:
    """How the get_*/set_* functions build and apply state_dicts.

    Args:
        full_state_dict: gather full tensors (rawdev's tensors are never sharded, so they always are).
        cpu_offload: return cpu copies of the tensors.
        ignore_frozen_params: leave out parameters with requires_grad=False.
        keep_submodule_prefixes: with `submodules`, keep the submodules' prefixes in the keys.
        strict: set_model_state_dict raises on missing or unexpected keys.
        broadcast_from_rank0: accepted (every rank of a rawdev job holds the full replica already).
        flatten_optimizer_state_dict: optimizer state as one flat dict ("state.<name>.<key>",
            "param_groups.<name>.<key>").
    """
    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


def _unwrapped(model: Module) -> Module:
    """The module whose parameter names a checkpoint keeps: inside DDP (`.module`) and compile (`_orig_mod`)."""
    while True:
        inner = getattr(model, "module", None) if type(model).__name__ == "DistributedDataParallel" else None
        inner = inner if inner is not None else getattr(model, "_orig_mod", None)
        if not isinstance(inner, Module):
            return model
        model = inner


def _strip(key: str) -> str:
    changed = True
    while changed:
        changed = False
        for p in _WRAPPER_PREFIXES:
            if key.startswith(p):
                key, changed = key[len(p):], True
    return key


def _names(model: Module) -> dict[int, str]:
    """id(parameter) -> its fully qualified name in the unwrapped model (the first name of a shared parameter)."""
    out: dict[int, str] = {}
    for name, p in _unwrapped(model).named_parameters(remove_duplicate=False):
        out.setdefault(id(p), name)
    return out


def _opts(options: StateDictOptions | None) -> StateDictOptions:
    return options if options is not None else StateDictOptions()


def _offload(sd: Any) -> Any:
    if isinstance(sd, Tensor):
        return sd.detach().cpu() if sd.device.type != "cpu" else sd.detach()
    if isinstance(sd, dict):
        return {k: _offload(v) for k, v in sd.items()}
    if isinstance(sd, list):
        return [_offload(v) for v in sd]
    return sd


def get_model_state_dict(model: Module, *, submodules: Any = None,
                         options: StateDictOptions | None = None) -> dict[str, Any]:
    """The model's state_dict keyed by fully qualified names, without wrapper prefixes.

    Args:
        model: the model (possibly wrapped in DistributedDataParallel).
        submodules: only the parameters and buffers of these submodules (deprecated in PyTorch).
        options: StateDictOptions.

    Returns:
        {name: tensor}.

    Example:
        >>> from rawdev.distributed.checkpoint.state_dict import get_model_state_dict
        >>> sorted(get_model_state_dict(rawdev.nn.Linear(2, 1)))
        ['bias', 'weight']
    """
    o = _opts(options)
    inner = _unwrapped(model)
    sd = {_strip(k): v for k, v in inner.state_dict().items()}
    if o.ignore_frozen_params:
        frozen = {n for n, p in inner.named_parameters() if not p.requires_grad}
        sd = {k: v for k, v in sd.items() if k not in frozen}
    if submodules is not None:
        prefixes = {name: name + "." for name, m in inner.named_modules() if any(m is s for s in submodules)}
        kept = {}
        for k, v in sd.items():
            for prefix in prefixes.values():
                if k.startswith(prefix):
                    kept[k if o.keep_submodule_prefixes else k[len(prefix):]] = v
        sd = kept
    return _offload(sd) if o.cpu_offload else sd


def _optimizers(optimizers: Optimizer | Iterable[Optimizer]) -> list[Optimizer]:
    return [optimizers] if isinstance(optimizers, Optimizer) else list(optimizers)


def _init_optim_state(optim: Optimizer) -> None:
    """Create an optimizer's state without changing its parameters, as PyTorch does before reading a fresh
    optimizer's state: zero gradients where there are none, one step at learning rate 0, then the gradients unset.
    Nothing happens when the optimizer already has state."""
    if optim.state:
        return
    for group in optim.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                raise RuntimeError("state_dict can only be used if the optimizer states are initialized (usually "
                                   "after one step() with gradients) or gradients are None. For the later case, "
                                   "state_dict will fake the gradients as zero to initialize the optimizer states. "
                                   "However, the gradients are not None.")
            if p.requires_grad:
                p.grad = p.detach().new_zeros(p.shape)
    lrs = [g["lr"] for g in optim.param_groups]
    for g in optim.param_groups:
        g["lr"] = 0.0 if not isinstance(g["lr"], Tensor) else g["lr"].detach().clone().fill_(0.0)
    with no_grad():
        optim.step()
    for g, lr in zip(optim.param_groups, lrs):
        g["lr"] = lr
    optim.zero_grad(set_to_none=True)


def get_optimizer_state_dict(model: Module, optimizers: Optimizer | Iterable[Optimizer], *, submodules: Any = None,
                             options: StateDictOptions | None = None) -> dict[str, Any]:
    """The optimizers' state keyed by parameter names: {"state": {name: {...}}, "param_groups": [{..., "params":
    [names]}]} (one dict for all the optimizers given); a fresh optimizer's state is created first (a step at
    learning rate 0), as PyTorch does.

    Args:
        model: the model the optimizers train.
        optimizers: one optimizer or several.
        submodules: accepted (deprecated in PyTorch).
        options: StateDictOptions (cpu_offload, flatten_optimizer_state_dict).

    Returns:
        The state_dict.
    """
    o = _opts(options)
    names = _names(model)
    state: dict[str, Any] = {}
    groups: list[dict[str, Any]] = []
    for optim in _optimizers(optimizers):
        _init_optim_state(optim)
        for g in optim.param_groups:
            fqns = []
            for p in g["params"]:
                if id(p) not in names:
                    raise KeyError("an optimizer holds a parameter that is not one of the model's parameters")
                fqns.append(names[id(p)])
                if p in optim.state:
                    state[names[id(p)]] = dict(optim.state[p])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": fqns})
    out: dict[str, Any] = {"state": state, "param_groups": groups}
    if o.flatten_optimizer_state_dict:
        flat: dict[str, Any] = {}
        for fqn, st in state.items():
            for k, v in st.items():
                flat[f"state.{fqn}.{k}"] = v
        for g in groups:
            for fqn in g["params"]:
                for k, v in g.items():
                    if k != "params":
                        flat[f"param_groups.{fqn}.{k}"] = v
        out = flat
    return _offload(out) if o.cpu_offload else out


def get_state_dict(model: Module, optimizers: Optimizer | Iterable[Optimizer], *, submodules: Any = None,
                   options: StateDictOptions | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(get_model_state_dict(model), get_optimizer_state_dict(model, optimizers)).

    Example:
        >>> model = rawdev.nn.Linear(2, 1); opt = rawdev.optim.Adam(model.parameters())
        >>> msd, osd = get_state_dict(model, opt)
        >>> sorted(osd["state"])
        ['bias', 'weight']
    """
    return (get_model_state_dict(model, submodules=submodules, options=options),
            get_optimizer_state_dict(model, optimizers, submodules=submodules, options=options))


def set_model_state_dict(model: Module, model_state_dict: dict[str, Any], *,
                         options: StateDictOptions | None = None) -> Any:
    """Load a state_dict keyed by fully qualified names into the model (wrapped or not).

    Returns:
        The missing and unexpected keys (strict=False), as Module.load_state_dict.
    """
    o = _opts(options)
    return _unwrapped(model).load_state_dict({_strip(k): v for k, v in model_state_dict.items()}, strict=o.strict)


def _unflatten_optim(flat: dict[str, Any], names: list[str]) -> dict[str, Any]:
    state: dict[str, dict[str, Any]] = {}
    hyper: dict[str, dict[str, Any]] = {}
    for key, v in flat.items():
        kind, _, rest = key.partition(".")
        fqn = next((n for n in sorted(names, key=len, reverse=True) if rest.startswith(n + ".")), None)
        if fqn is None or kind not in ("state", "param_groups"):
            raise KeyError(f"{key!r} is not a flattened optimizer state_dict key of this model")
        (state if kind == "state" else hyper).setdefault(fqn, {})[rest[len(fqn) + 1:]] = v
    return {"state": state, "hyper": hyper}


def set_optimizer_state_dict(model: Module, optimizers: Optimizer | Iterable[Optimizer],
                             optim_state_dict: dict[str, Any], *, options: StateDictOptions | None = None) -> None:
    """Load a name-keyed optimizer state_dict (what get_optimizer_state_dict returns) into the optimizers."""
    names = _names(model)
    osd = optim_state_dict
    if "state" not in osd or "param_groups" not in osd:
        un = _unflatten_optim(osd, list(names.values()))
        osd = {"state": un["state"], "param_groups": None, "hyper": un["hyper"]}
    saved_groups = osd["param_groups"]
    gi = 0
    for optim in _optimizers(optimizers):
        groups, packed_state = [], {}
        index = 0
        for g in optim.param_groups:
            fqns = [names[id(p)] for p in g["params"]]
            if saved_groups is not None:
                match = next((sg for sg in saved_groups if list(sg["params"]) == fqns), None)
                if match is None:
                    match = saved_groups[gi] if gi < len(saved_groups) else None
                if match is None:
                    raise ValueError("the optimizer state_dict has no parameter group for the parameters "
                                     f"{fqns[:3]}{'...' if len(fqns) > 3 else ''}")
                hyper = {k: v for k, v in match.items() if k != "params"}
            else:
                hyper = dict(osd["hyper"].get(fqns[0], {})) if fqns else {}
            gi += 1
            ids = list(range(index, index + len(fqns)))
            index += len(fqns)
            groups.append({**{k: v for k, v in g.items() if k != "params"}, **hyper, "params": ids})
            for i, fqn in zip(ids, fqns):
                if fqn in osd["state"]:
                    packed_state[i] = osd["state"][fqn]
        optim.load_state_dict({"state": packed_state, "param_groups": groups})


def set_state_dict(model: Module, optimizers: Optimizer | Iterable[Optimizer], *, model_state_dict: dict[str, Any],
                   optim_state_dict: dict[str, Any], options: StateDictOptions | None = None) -> Any:
    """set_model_state_dict and set_optimizer_state_dict together; returns the model's missing/unexpected keys."""
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys
