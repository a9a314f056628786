"""optim.Optimizer: param groups, per-parameter state, zero_grad, state_dict/load_state_dict (PyTorch's format).

On cuda, state tensors are allocated on the parameter's device, laid out like the parameters (a group whose
parameters share one arena gets state arenas with the same offsets, so one kernel launch updates the group),
and tagged for the memory tool: "exp_avg of 0.weight", "momentum_buffer of 0.weight".
"""
from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import dtypes as _dt
from ..autograd.engine import zero_grads
from ..autograd.grad_mode import enable_grad, no_grad
from ..ops.dispatch import backend_of
from ..runtime import phases as _phases
from ..tensor.core import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    _host_state: tuple[str, ...] = ()
    # True where the update reads the step count on the host (bias corrections, lr decay): such a step captured
    # in a CUDA graph would replay the capture step's count forever, so capturing it is refused (as PyTorch
    # refuses it without capturable=True)
    _step_count_on_host = False

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            from ..nn.module import typename
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got {typename(params)}")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for g in param_groups:
            self.add_param_group(g)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(map(id, params))):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", stacklevel=3)
        param_set: set[int] = set()
        for group in self.param_groups:
            param_set.update(map(id, group["params"]))
        if not param_set.isdisjoint(set(map(id, param_group["params"]))):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    # ------------------------------------------------------------------ state_dict
    def state_dict(self) -> dict[str, Any]:
        index, start = {}, 0

        def pack_group(group):
            nonlocal start
            index.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in index})
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack_group(g) for g in self.param_groups]
        state = {index[id(k)]: v for k, v in self.state.items() if id(k) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        state_dict = dict(state_dict)
        groups, saved_groups = self.param_groups, state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                             "group")
        id_map = {old: p for g, s in zip(groups, saved_groups) for old, p in zip(s["params"], g["params"])}
        state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                state[p] = {key: self._cast_state(p, key, val) for key, val in v.items()}
        self.state = state
        new_groups = []
        for g, s in zip(groups, saved_groups):
            ng = {k: copy.deepcopy(v) for k, v in s.items() if k != "params"}
            ng["params"] = g["params"]
            new_groups.append(ng)
        self.param_groups = new_groups
        self._after_load()

    def _cast_state(self, p, key, value):
        """State tensors go to the parameter's device (floats also to its dtype); host scalars (`step`, and what a
        subclass lists in _host_state, e.g. NAdam's mu_product) stay as saved."""
        if not isinstance(value, Tensor):
            return copy.deepcopy(value)
        if key == "step" or key in self._host_state:
            return value.detach().clone()
        with no_grad():
            out = self._alloc_state(p, key)
            out.copy_(value.detach())
        return out

    def _after_load(self):
        pass

    def _alloc_state(self, p, key):
        if hasattr(type(p), "_as_parameter"):     # a sharded (DTensor) parameter's state is its local shard's
            p = p.to_local()
        return backend_of(p).zeros_state(p, key)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient: per group and per device, one call of the
        subclass's _step_group (on cuda, a group whose parameters share an arena is one launch)."""
        _phases.emit("optimizer step")   # an event the memory tool may record on its timeline
        if self._step_count_on_host and self._capturing():
            raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of {type(self).__name__} "
                               f"but param_groups' capturable is False. rawdev keeps the step count on the host, "
                               f"so this optimizer cannot be captured; capture SGD, RMSprop or Adadelta, or keep "
                               f"the optimizer step out of the graph.")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            work = []
            for group in self.param_groups:
                by_dev: dict[Any, list[Tensor]] = {}
                for p in group["params"]:
                    if p.grad is not None:
                        by_dev.setdefault(p.device, []).append(p)
                for params in by_dev.values():
                    self._check_dtypes(params)   # every group checked before any is stepped
                    B = backend_of(params[0])
                    work += [(group, B, unit) for unit in self._units(B, params)]
            # an unfinished step (a launch failed after earlier units ran) resumes where it stopped when step()
            # is called again with the same gradients, so the retry gives what a step that never failed gives
            sig = tuple((id(p), id(p.grad), p.grad._version) for _, _, unit in work for p in unit)
            unfinished, self.__dict__["_unfinished_step"] = self.__dict__.get("_unfinished_step"), None
            start = unfinished[1] if unfinished is not None and unfinished[0] == sig else 0
            for i in range(start, len(work)):
                group, B, unit = work[i]
                host = self._save_unit_host_state(unit)
                try:
                    self._step_sharded(group, B, unit)
                except BaseException as e:
                    self._restore_unit_host_state(host)
                    if i:
                        self.__dict__["_unfinished_step"] = (sig, i)
                        note = (f"{type(self).__name__}.step(): {i} of {len(work)} parameter updates ran before "
                                f"this failure; calling step() again with the same gradients completes this step "
                                f"(the updates that ran are not repeated)")
                        # what BaseException.add_note does (Python 3.11+, which prints the notes with the traceback)
                        e.__notes__ = [*getattr(e, "__notes__", []), note]  # type: ignore[attr-defined]
                    raise
        return loss

    def _step_sharded(self, group, B, unit):
        """_step_group, where a sharded parameter (a DTensor: it has `_as_parameter`) steps as its local shard,
        which holds its storage and gradient; its state stays keyed by the parameter between steps."""
        pairs = [(p, p.to_local()) for p in unit if hasattr(type(p), "_as_parameter")]
        if not pairs:
            self._step_group(group, B, unit)
            return
        swap = {id(p): lp for p, lp in pairs}
        for p, lp in pairs:
            if p in self.state:
                self.state[lp] = self.state.pop(p)
        try:
            self._step_group(group, B, [swap.get(id(p), p) for p in unit])
        finally:
            for p, lp in pairs:
                if lp in self.state:
                    self.state[p] = self.state.pop(lp)

    def _units(self, B, params):
        """The step's units of work for one group's parameters on one device: all of them when the backend
        updates them in one launch (parameters, gradients and state laid out alike in one arena each, same step
        count), else one parameter each, so that every unit either runs entirely or not at all."""
        if len(params) == 1 or not hasattr(B, "one_launch"):
            return [params]
        if any(p.dtype is _dt.float64 or (not self._half_storage and p.dtype in (_dt.float16, _dt.bfloat16))
               for p in params):
            return [[p] for p in params]     # parameters stepped on copies (float32 or host ones) go one at a time
        if any(hasattr(type(p), "_as_parameter") for p in params):
            return [[p] for p in params]     # sharded parameters step one by one, on their local shards
        states = [self.state[p] if p in self.state else {} for p in params]
        keys = set(states[0])
        if any(set(st) != keys for st in states):
            return [[p] for p in params]
        lists = []
        for k in sorted(keys):
            vals = [st[k] for st in states]
            if all(isinstance(v, Tensor) and v.is_cuda for v in vals):
                lists.append(vals)
            elif len({float(v.item()) if isinstance(v, Tensor) else v for v in vals}) > 1:
                return [[p] for p in params]   # host scalars (step counts) differ: one launch per parameter
        return [params] if B.one_launch(params, [p.grad for p in params], lists) else [[p] for p in params]

    def _save_unit_host_state(self, params):
        """What a unit's step changes on the host: each parameter's state entries and the values of its host
        scalar tensors (step counts). Device tensors are written only by the unit's one launch."""
        out = []
        for p in params:
            st = self.state[p] if p in self.state else None
            entries = dict(st) if st else None
            scalars = {k: v.item() for k, v in (entries or {}).items()
                       if isinstance(v, Tensor) and not v.is_cuda and v.numel() == 1}
            out.append((p, entries, scalars))
        return out

    def _restore_unit_host_state(self, saved):
        """Undo a unit's host changes after its launch failed: step counts back, state the failed unit created
        dropped (its device memory freed)."""
        for p, entries, scalars in saved:
            if entries is None:
                self.state.pop(p, None)
                continue
            st = self.state[p]
            st.clear()
            st.update(entries)
            for k, v in scalars.items():
                entries[k].fill_(v)

    # Optimizers whose kernels also update float16/bfloat16 parameters in place (state of the parameter's dtype,
    # float32 math, each stored value rounded once; the cpu computes the same way)
    _half_storage = False

    def _check_dtypes(self, params):
        """The fused update kernels are float32. float16/bfloat16 parameters step with float32 math, each stored
        value rounded once: SGD and Adam/AdamW on their 16-bit storage, the others on float32 copies
        (rawdev.ops.optim_steps.cpu.widen_16bit). float64 steps on the cpu in numpy; a cuda one is copied there
        and back (rawdev.ops.optim_steps.cuda). Other dtypes (integers) are refused."""
        for p in params:
            if p.dtype in (_dt.float16, _dt.bfloat16, _dt.float64):
                continue
            if p.is_cuda and p.dtype is not _dt.float32:
                raise TypeError(f"{type(self).__name__}: rawdev's optimizer kernels update float32 parameters, got "
                                f"a {p.dtype} parameter of shape {list(p.shape)} on {p.device}; keep float32 "
                                f"parameters (model.float()) and compute in lower precision inside the model, as "
                                f"PyTorch's mixed-precision recipe does")

    def _capturing(self):
        from ..runtime import graphs
        devs = {p.device for g in self.param_groups for p in g["params"] if p.is_cuda}
        return any(graphs.capturing(d.index or 0) for d in devs)

    def _step_group(self, group, backend, params):
        raise NotImplementedError

    def _lazy_state(self, B, params, keys, scalars=None):
        """PyTorch's lazy state init: parameters with no state get zeroed state tensors `keys` (on cuda one
        arena per key when the params share one) and host scalar tensors {name: initial value}; a key switched
        on later (a loaded state_dict, a changed option) is added where missing. Returns the states in order."""
        from ..tensor.factory import tensor
        new = [p for p in params if len(self.state[p]) == 0]
        if new:
            allocs = {k: B.alloc_states(new, k) for k in keys}
            for i, p in enumerate(new):
                self.state[p].update({name: tensor(float(v)) for name, v in (scalars or {}).items()})
                self.state[p].update({k: allocs[k][i] for k in keys})
        for k in keys:
            need = [p for p in params if k not in self.state[p]]
            for p, b in zip(need, B.alloc_states(need, k) if need else ()):
                self.state[p][k] = b
        return [self.state[p] for p in params]

    @staticmethod
    def _count_step(states):
        """step += 1 in each state (PyTorch's default keeps the count in a host tensor); the new counts."""
        out = []
        for s in states:
            s["step"].fill_(s["step"].item() + 1)
            out.append(int(s["step"].item()))
        return out
