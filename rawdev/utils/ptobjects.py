"""Whole modules inside PyTorch's own .pt files (torch.save(model)): the classes a pickle may name, and how the
objects are rebuilt, without running anything from the file.

torch.save(model) pickles a module as `GLOBAL torch.nn.modules.linear Linear; EMPTY_TUPLE; NEWOBJ; {state};
BUILD`, the state being the module's __dict__ (training, _parameters, _buffers, _modules, the hook dicts,
and plain attributes such as in_features). rawdev.utils.ptfile's restricted unpickler asks `find_class` here
for any global outside its tensor allowlist:

- `torch.nn.modules.<file>.<Name>` (and `torch.nn.<Name>`) maps to rawdev's own `rawdev.nn.<Name>` when rawdev
  has a Module of that name: always allowed (rawdev's code), under PyTorch 2.6's rules as rawdev applies them.
- any other class (a user's `__main__.Net`) only with weights_only=False or when allowed with
  rawdev.serialization.add_safe_globals / safe_globals; else PyTorch's "Weights only load failed" error.
  It must be a plain Python class (rawdev.object_graph.describable_class).
- functions and everything else stay refused by ptfile's own message.

The class comes back as a `ClassRef` placeholder, which cannot be called (REDUCE on it is refused): only NEWOBJ
makes an `ObjRef` of it, and BUILD stores the state dict on that ObjRef. Once the pickle is read and its
tensors are built, `build` makes the real object: `cls.__new__(cls)` and its attributes set directly (for a
rawdev Module, after rawdev's own Module.__init__ gave it empty parameter/buffer/module dicts), calling no
__init__, __setstate__ or __reduce__ of the class. A module carrying hooks (code) is refused.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ClassRef", "ObjRef", "find", "build"]

_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks",
               "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")


class ClassRef:
    """A class a pickle named, resolved under the rules above; not callable."""

    def __init__(self, cls: type, name: str) -> None:
        self.cls, self.name = cls, name
        # pickle's NEWOBJ calls cls.__new__(cls, *args): this instance attribute (found before object.__new__)
        # answers it with a placeholder
        self.__dict__["__new__"] = lambda ref, *args: ObjRef(ref, args)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ..load_placement import CheckpointError
        raise CheckpointError(f"rawdev.load: the pickle calls the class {self.name} (REDUCE), which rawdev never "
                              "does; torch.save builds objects with NEWOBJ and BUILD")


class ObjRef:
    """An object NEWOBJ asked for; its state arrives with BUILD."""
    __slots__ = ("ref", "args", "state")

    def __init__(self, ref: ClassRef, args: tuple) -> None:
        self.ref, self.args, self.state = ref, args, None


def _rawdev_module_class(name: str, module: str = "torch.nn") -> type | None:
    import importlib

    from .. import nn
    from ..nn.module import Module
    cls = getattr(nn, name, None)
    if cls is None and module.startswith("torch.nn.modules."):
        # a class PyTorch keeps out of torch.nn (linear.NonDynamicallyQuantizableLinear): rawdev's mirror file
        try:
            cls = getattr(importlib.import_module("rawdev" + module[len("torch"):]), name, None)
        except ImportError:
            cls = None
    return cls if isinstance(cls, type) and issubclass(cls, Module) else None


def find(module: str, name: str, weights_only: bool | None) -> ClassRef | None:
    """The ClassRef for a global the tensor allowlist does not cover, or None (the caller refuses it)."""
    from ..object_graph import describable_class
    from ..safe_globals import resolve
    full = f"{module}.{name}"
    if module == "torch.nn" or module.startswith("torch.nn.modules."):
        cls = _rawdev_module_class(name, module)
        return ClassRef(cls, full) if cls is not None else None
    if module.startswith("torch") or not all(p.isidentifier() for p in (*module.split("."), *name.split("."))):
        return None
    try:
        obj = resolve(f"{module}:{name}", weights_only, "the pickle")   # WeightsOnlyError: not allowed
    except ValueError:
        return None
    if not isinstance(obj, type) or not describable_class(obj):
        return None
    from ..tensor.core import Tensor
    if issubclass(obj, (Tensor, BaseException)):
        return None
    return ClassRef(obj, full)


def build(ref: ObjRef, state: Any, bad: Any) -> Any:
    """The real object for an ObjRef, its state already walked (tensors built). bad(why) makes the error."""
    from ..nn.module import Module
    cls: Any = ref.ref.cls
    if ref.args:
        raise bad(f"NEWOBJ of {ref.ref.name} got arguments; torch.save passes none")
    if state is None:
        state = {}
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise bad(f"the state of a {ref.ref.name} is not a dict of attribute names")
    obj = cls.__new__(cls)
    if isinstance(obj, Module):
        Module.__init__(obj)      # rawdev's own: empty parameter/buffer/module and hook dicts
        for k in _HOOK_DICTS:
            if state.get(k):
                raise bad(f"the {ref.ref.name} carries {k} (code), which rawdev does not load")
        d = obj.__dict__
        for k, v in state.items():
            if k in _HOOK_DICTS or k.endswith("_with_kwargs") or k.endswith("_always_called"):
                continue
            if k in ("_parameters", "_buffers", "_modules"):
                if not isinstance(v, dict):
                    raise bad(f"{ref.ref.name}.{k} is not a dict")
                d[k].update(v)
            elif k == "_non_persistent_buffers_set":
                d[k] = set(v)
            else:
                d[k] = v
        return obj
    obj.__dict__.update(state)
    return obj
