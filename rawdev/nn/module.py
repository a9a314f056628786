"""nn.Module with PyTorch's semantics and wording (torch/nn/modules/module.py is the reference).

Differences, on purpose:
- load_state_dict validates every key, shape and type first and copies only when all are good, so a
  failed load leaves the model exactly as it was (PyTorch may have copied some tensors already).
- Copies into a cuda model are batched through one pinned staging buffer (rawdev.tensor.moves).
- to()/cuda()/cpu() move all parameters, buffers and grads in one copy and keep the Parameter objects.
"""

from __future__ import annotations

import builtins
import itertools
import threading
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ..autograd.hooks import RemovableHandle
from ..runtime import phases as _phases
from ..tensor.core import Tensor
from .parameter import Buffer, Parameter

__all__ = ["Module", "typename", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]

_HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called", "_backward_pre_hooks", "_backward_hooks", "_state_dict_pre_hooks",
               "_state_dict_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")

# Hooks for every module (nn.modules.module.register_module_*): they run before each module's own.
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()


def _global_hook(hooks, hook, extra=None):
    handle = RemovableHandle(hooks, extra_dict=extra)
    hooks[handle.id] = hook
    return handle


def register_module_forward_pre_hook(hook):
    """A forward pre-hook common to all modules: hook(module, args) -> None or new args."""
    return _global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """A forward hook common to all modules: hook(module, args, output) -> None or a new output."""
    handle = _global_hook(_global_forward_hooks, hook,
                          [_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called])
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook):
    return _global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    return _global_hook(_global_backward_hooks, hook)


def typename(obj):
    """torch.typename: "rawdev.FloatTensor" for tensors, else module.qualname ("int" for builtins)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in {"", "builtins"}:
        return qualname
    return f"{module}.{qualname}"


_M = TypeVar("_M", bound="Module")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# The copy plan of the load_state_dict in progress on this thread: a subclass that overrides
# _load_from_state_dict PyTorch-style and calls super() without `plan` still only plans its copies.
_loading = threading.local()


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


class Module:
    """Base class for all neural network modules."""

    dump_patches = False
    _version = 1  # goes into state_dict()._metadata; bump when a subclass changes its state layout
    training: bool
    call_super_init = False
    # nn.layers.tag_modules names a layer here; the default on the class keeps the layers' per-call
    # getattr(self, "_rawdev_tag", None) off __getattr__'s raise-and-catch path
    _rawdev_tag: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        # object.__setattr__: our own __setattr__ needs these dicts to exist already.
        super().__setattr__("training", True)
        super().__setattr__("_parameters", {})
        super().__setattr__("_buffers", {})
        super().__setattr__("_non_persistent_buffers_set", set())
        super().__setattr__("_modules", {})
        for name in _HOOK_DICTS:
            super().__setattr__(name, OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _phases.emit("forward")   # an event the memory tool may record on its timeline
        d = self.__dict__
        if not (d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks") or _global_forward_pre_hooks or _global_forward_hooks
                or _global_backward_hooks or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        """PyTorch's Module._call_impl: global then module forward pre-hooks, backward hooks set up around
        the tensors going in and out, forward, global then module forward hooks (always_call ones also when
        forward raised)."""
        from .. import autograd
        self._ensure_hook_dicts()
        result = None
        called_always = set()
        try:
            for hid, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                if hid in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if isinstance(res, tuple) and len(res) == 2:
                            args, kwargs = res
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {res}.")
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_hook = None
            full = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
            pre = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            if (full or pre) and autograd.is_grad_enabled():
                from .hooks import BackwardHook
                bw_hook = BackwardHook(self, full, pre)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hid, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if hid in self._forward_hooks_always_called or hid in _global_forward_hooks_always_called:
                    called_always.add(hid)
                if hid in self._forward_hooks_with_kwargs or hid in _global_forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(result)}", stacklevel=3)
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            for hid, hook in _global_forward_hooks.items():
                if hid in _global_forward_hooks_always_called and hid not in called_always:
                    try:
                        res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        warnings.warn("global module forward hook with ``always_call=True`` raised an exception "
                                      f"that was silenced as another error was raised in forward: {e}", stacklevel=3)
            for hid, hook in self._forward_hooks.items():
                if hid in self._forward_hooks_always_called and hid not in called_always:
                    try:
                        if hid in self._forward_hooks_with_kwargs:
                            res = hook(self, args, kwargs, result)
                        else:
                            res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {e}", stacklevel=3)
            raise

    def _ensure_hook_dicts(self):
        """Modules made without __init__ (copied, unpickled from an older rawdev) get their hook dicts here."""
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                object.__setattr__(self, name, OrderedDict())

    def _add_hook(self, name, hook, prepend=False, extra=()):
        self._ensure_hook_dicts()
        hooks = self.__dict__[name]
        handle = RemovableHandle(hooks, extra_dict=[self.__dict__[e] for e in extra] or None)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: builtins.bool = False,
                                  with_kwargs: builtins.bool = False) -> RemovableHandle:
        """hook(module, args) -> None or new args (a single value becomes a 1-tuple); with_kwargs:
        hook(module, args, kwargs) -> None or (new_args, new_kwargs). Runs before forward."""
        handle = self._add_hook("_forward_pre_hooks", hook, prepend, ("_forward_pre_hooks_with_kwargs",))
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: builtins.bool = False,
                              with_kwargs: builtins.bool = False,
                              always_call: builtins.bool = False) -> RemovableHandle:
        """hook(module, args, output) (with_kwargs: hook(module, args, kwargs, output)) -> None or a new
        output; runs after forward; always_call: also when forward raised."""
        handle = self._add_hook("_forward_hooks", hook, prepend,
                                ("_forward_hooks_with_kwargs", "_forward_hooks_always_called"))
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook: Callable[..., Any],
                                        prepend: builtins.bool = False) -> RemovableHandle:
        """hook(module, grad_output) -> None or a replacement grad_output tuple, when the gradients with
        respect to the module's outputs have been computed."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook: Callable[..., Any],
                                    prepend: builtins.bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None or a replacement grad_input tuple, when the gradients
        with respect to the module's (tensor) inputs have been computed."""
        if self.__dict__.get("_is_full_backward_hook") is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = True
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_backward_hook(self, hook):
        """PyTorch's deprecated non-full backward hook, run here as a full backward hook: grad_output is the
        same; grad_input is with respect to the module's inputs (PyTorch's old hook gave the last op's)."""
        if self.__dict__.get("_is_full_backward_hook") is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = False
        return self._add_hook("_backward_hooks", hook)

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) before state_dict() saves this module's entries."""
        return self._add_hook("_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None, after this module's entries were saved."""
        def must_return_none(module, state_dict, prefix, local_metadata):
            if hook(module, state_dict, prefix, local_metadata) is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return self._add_hook("_state_dict_hooks", must_return_none)

    def _register_state_dict_hook(self, hook):
        """The private form: hook may return a new state_dict."""
        return self._add_hook("_state_dict_hooks", hook)

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        before this module's entries are checked; it may edit state_dict in place."""
        return self._add_hook("_load_state_dict_pre_hooks", hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return self.register_load_state_dict_pre_hook(
            lambda module, *a: hook(*a))

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None after load_state_dict checked everything; it may clear
        missing/unexpected keys in place (strict then sees the edited lists)."""
        return self._add_hook("_load_state_dict_post_hooks", hook)

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: builtins.bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        elif not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {typename(name)}")
        elif "." in name:
            raise KeyError('buffer name can\'t contain "."')
        elif name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        elif hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        elif tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        else:
            if isinstance(tensor, Buffer):
                tensor = _plain(tensor)
            self._buffers[name] = tensor
            if persistent:
                self._non_persistent_buffers_set.discard(name)
            else:
                self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        elif not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {typename(name)}")
        elif "." in name:
            raise KeyError('parameter name can\'t contain "."')
        elif name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        elif hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")

        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        elif param.grad_fn:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                f"explicitly. To express '{name}' as a function of another Tensor, compute the value in the "
                "forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        elif not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        elif hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        elif "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        elif name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    def set_submodule(self, target: str, module: Module, strict: builtins.bool = False) -> None:
        """Put `module` at the dotted path `target` (PyTorch's Module.set_submodule).

        Args:
            target: e.g. "encoder.layers.0.fc"; every part but the last must already be a submodule.
            module: the module to put there.
            strict: only replace an existing attribute; raise AttributeError when there is none.

        Example:
            >>> net.set_submodule("0", nn.Linear(3, 3))
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_extra_state(self) -> Any:
        """Override (with set_extra_state) to keep a non-tensor value in the state_dict under "_extra_state"."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        """Override (with get_extra_state): receives what get_extra_state returned when a state_dict is loaded."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def _has_extra_state(self):
        return type(self).get_extra_state is not Module.get_extra_state

    # ------------------------------------------------------------------ attribute routing
    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: parameters, buffers and submodules live in the dicts.
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.__dict__.get("persistent", True)
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    if buffers is None:
                        raise AttributeError("cannot assign buffer before Module.__init__() call")
                    remove_from(self.__dict__, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        module_attrs = dir(self.__class__)
        attrs = list(self.__dict__.keys())
        parameters = list(self._parameters.keys())
        modules = list(self._modules.keys())
        buffers = list(self._buffers.keys())
        keys = module_attrs + attrs + parameters + modules + buffers
        keys = [key for key in keys if not key[0].isdigit()]
        return sorted(keys)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._ensure_hook_dicts()

    # ------------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            members = get_members_fn(module)
            for k, v in members:
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse: builtins.bool = True) -> Iterator[Parameter]:
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: builtins.bool = True,
                         remove_duplicate: builtins.bool = True) -> Iterator[tuple[str, Parameter]]:
        yield from self._named_members(lambda module: module._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: builtins.bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: builtins.bool = True,
                      remove_duplicate: builtins.bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members(lambda module: module._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self) -> Iterator[Module]:
        for _name, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: builtins.bool = True) -> Iterator[tuple[str, Module]]:
        if memo is None:
            memo = set()
        if id(self) not in memo:
            if remove_duplicate:
                memo.add(id(self))
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ------------------------------------------------------------------ modes and grads
    def train(self: _M, mode: builtins.bool = True) -> _M:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self: _M) -> _M:
        return self.train(False)

    def requires_grad_(self: _M, requires_grad: builtins.bool = True) -> _M:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: builtins.bool = True) -> None:
        from ..autograd.engine import zero_grads
        zero_grads(self.parameters(), set_to_none)

    def apply(self: _M, fn: Callable[[Module], None]) -> _M:
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ moves (rawdev.tensor.moves does the work)
    def to(self: _M, *args: Any, **kwargs: Any) -> _M:
        """to(device=None, dtype=None, non_blocking=False) / to(dtype) / to(tensor): in place, returns self.

        Parameters, buffers and their grads move together in one copy; the Parameter objects stay the
        same (an optimizer built before the move keeps working). dtype casts only floating tensors.
        """
        from ..tensor import moves
        from ..tensor.core import _parse_to
        dev, dt, non_blocking, _copy = _parse_to(args, kwargs)
        if dt is not None and not dt.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dt!r}")
        moves.move_module(self, dev, dt, non_blocking=non_blocking)
        return self

    def share_memory(self: _M) -> _M:
        """Move the parameters, gradients and buffers into shared memory (Tensor.share_memory_), for processes
        forked afterwards to train the same model (Hogwild). Returns self."""
        return self._apply(lambda t: t.share_memory_())

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """nn.Module.compile: rawdev runs eagerly, so the module stays as it is (said once per process)."""
        if not _compile_notice:
            _compile_notice.append(True)
            warnings.warn("Module.compile: rawdev runs eagerly; the module is unchanged", UserWarning, stacklevel=2)

    def to_empty(self, *, device: Any, recurse: builtins.bool = True) -> Module:
        """Give every parameter and buffer new, uninitialized storage on `device` (same shapes and dtypes), as
        PyTorch's to_empty after building a model on the meta device; initialize it afterwards.

        Returns:
            self.
        """
        from ..tensor import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def _apply(self, fn, recurse=True):
        """PyTorch's _apply: replace every parameter's (and grad's) storage by fn(tensor)'s, and every
        buffer by fn(buffer). Parameter objects stay the same. Moves use rawdev.tensor.moves, not this."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for _key, param in self._parameters.items():
            if param is None:
                continue
            param.data = fn(param.detach())
            if param.grad is not None:
                param.grad.data = fn(param.grad.detach())
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def cuda(self: _M, device: Any = None) -> _M:
        """Move to the GPU (default: the current device, as Tensor.cuda); with no GPU available, warn and return
        the model unchanged on the cpu."""
        from ..device import current_cuda_index
        from ..device import device as _dev
        from ..tensor import moves
        if not moves.cuda_available():
            warnings.warn(moves.NO_GPU_HINT, RuntimeWarning, stacklevel=2)
            return self
        if device is None:
            dev = _dev("cuda", current_cuda_index())
        else:
            dev = _dev("cuda", device) if isinstance(device, int) else _dev(device)
        return self.to(dev)

    def cpu(self: _M) -> _M:
        return self.to("cpu")

    def type(self: _M, dst_type: Any) -> _M:
        return self.to(dtype=dst_type)

    def float(self: _M) -> _M:
        from .. import dtypes
        return self.to(dtype=dtypes.float32)

    def double(self: _M) -> _M:
        from .. import dtypes
        return self.to(dtype=dtypes.float64)

    def half(self: _M) -> _M:
        from .. import dtypes
        return self.to(dtype=dtypes.float16)

    def bfloat16(self):
        from .. import dtypes
        return self.to(dtype=dtypes.bfloat16)

    # ------------------------------------------------------------------ state_dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if self._has_extra_state():
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "",
                   keep_vars: builtins.bool = False) -> dict[str, Any]:
        """Ordered name -> tensor (detached aliases of the live storage unless keep_vars)."""
        if len(args) > 0:
            # Positional (destination, prefix, keep_vars) is deprecated in PyTorch but still works.
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        for hook in tuple(self.__dict__.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in tuple(self.__dict__.get("_state_dict_hooks", {}).values()):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, plan=None):
        """Check this module's keys and plan (not do) the copies: entries go to the load_state_dict's plan,
        which copies only once every module has been checked. Called on its own, it copies at the end."""
        if plan is None:
            plan = getattr(_loading, "plan", None)
            if plan is None:
                own = []
                self._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                           unexpected_keys, error_msgs, plan=own)
                if not error_msgs:
                    _apply_load_plan(own)
                return
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_name_params = itertools.chain(self._parameters.items(), persistent_buffers.items())
        local_state = {k: v for k, v in local_name_params if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                input_param = state_dict[key]
                if not isinstance(input_param, Tensor):
                    input_param = _from_tensor_like(input_param)
                    if not isinstance(input_param, Tensor):
                        # PyTorch's wording, which users search for (rawdev takes the tensor-likes it names)
                        error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                          f'Tensor-like object from checkpoint but received {type(input_param)}')
                        continue
                if len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
                    input_param = input_param[0]  # PyTorch's backward compatibility for 0-dim params
                if input_param.shape != param.shape:
                    error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                                      f"from checkpoint, the shape in current model is {param.shape}.")
                    continue
                if param.dtype.is_floating_point != input_param.dtype.is_floating_point:
                    # PyTorch's copy_ would silently truncate floats into an integer buffer (or the
                    # reverse); a checkpoint like that is for a different model, so say so.
                    error_msgs.append(f'While copying the parameter named "{key}", whose dtype in the model is '
                                      f"{param.dtype} and whose dtype in the checkpoint is {input_param.dtype}, "
                                      "an exception occurred : ('a floating point value cannot be copied into "
                                      "an integer tensor or the reverse',).")
                    continue
                plan.append((self, name, param, input_param, key, assign))
            elif strict:
                missing_keys.append(key)
        extra_key = prefix + "_extra_state"
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                plan.append((self, "_extra_state", None, state_dict[extra_key], extra_key, False))
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)

        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: builtins.bool = True,
                        assign: builtins.bool = False) -> _IncompatibleKeys:
        """Copy state_dict into this module's parameters and buffers; returns (missing_keys, unexpected_keys).

        Everything is checked before anything is copied: on any error nothing has changed.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        plan: list[Any] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            # PyTorch's per-module version table rides on the dict as an attribute
            state_dict._metadata = metadata  # type: ignore[attr-defined]

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            for hook in tuple(module.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
                hook(module, local_state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys,
                     error_msgs)
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in tuple(module.__dict__.get("_load_state_dict_post_hooks", {}).values()):
                out = hook(module, incompatible)
                if out is not None:
                    raise RuntimeError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                       "expected to return new values, if incompatible_keys need to be modified, "
                                       "it should be done inplace.")

        outer = getattr(_loading, "plan", None)
        _loading.plan = plan
        try:
            load(self, state_dict)
        finally:
            _loading.plan = outer

        if strict:
            if len(unexpected_keys) > 0:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if len(missing_keys) > 0:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if len(error_msgs) > 0:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))

        _apply_load_plan(plan)
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ------------------------------------------------------------------ repr
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = repr(module)
            mod_str = _addindent(mod_str, 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str


def _plain(t):
    """A plain Tensor sharing t's storage (nn.Buffer is only a marker for __setattr__)."""
    p = Tensor.__new__(Tensor)
    p._assign(t)
    p._vc, p._base = t._vc, None
    p._requires_grad, p._grad, p.grad_fn = t.requires_grad, None, None
    return p


_compile_notice: list = []   # Module.compile's notice, given once


def _apply_load_plan(plan):
    """Load checked (module, name, target, source, key, assign) entries, all or nothing.

    First every fallible step: cuda sources of cpu targets are read back (one batched copy), and the sources
    of cuda targets are staged in one new arena per device (rawdev.tensor.moves.stage_load). Only when all
    of that has succeeded do the targets change: cpu targets by a numpy copy, cuda targets by switching to
    their staged storage. A failure before that point frees what was staged and leaves the model as it was.
    Not a graph op, as PyTorch's _load_from_state_dict.
    """
    from ..autograd.grad_mode import no_grad
    from ..tensor import moves
    extras = [entry for entry in plan if entry[2] is None]     # (module, "_extra_state", None, state, ...)
    plan = [entry for entry in plan if entry[2] is not None]
    last = {}
    for entry in plan:  # a tied weight under two keys: the last key wins, as with PyTorch's copies
        last[id(entry[2])] = entry
    assigns, cpu_entries, by_dev = [], [], {}
    for entry in last.values():
        module, name, target, src, key, assign = entry
        if assign:
            assigns.append(entry)
        elif target.is_cuda:
            by_dev.setdefault(target.device, []).append((target, src, key))
        else:
            cpu_entries.append((target, src, key))
    with no_grad():
        cuda_src = [(key, src) for _, src, key in cpu_entries if src.is_cuda]
        host = dict(zip((id(s) for _, s in cuda_src), (a for _, a in moves.to_host_arrays(cuda_src))))
        commits = []
        try:
            for dev, entries in by_dev.items():
                commits.append(moves.stage_load(dev, entries))
        except BaseException:
            for commit in commits:
                commit.abort()
            raise
        for target, src, _ in cpu_entries:
            if id(src) in host:
                src = _host_tensor(host[id(src)], src)
            target.copy_(src)
        for commit in commits:
            commit()
        for module, name, target, src, _key, _assign in assigns:
            if isinstance(target, Parameter):
                if not isinstance(src, Parameter):
                    src = Parameter(src, requires_grad=target.requires_grad)
                else:
                    src.requires_grad_(target.requires_grad)
            setattr(module, name, src)
    for module, _name, _target, state, _key, _assign in extras:   # user code: after the tensors are in
        module.set_extra_state(state)


def _host_tensor(arr, like):
    """A cpu tensor over host storage array arr read back from the cuda tensor like."""
    t = Tensor.__new__(Tensor)
    t._set_cpu(arr.reshape(tuple(like.shape)), like.dtype)
    t._vc, t._base, t._requires_grad, t._grad, t.grad_fn = [0], None, False, None, None
    return t


def _from_tensor_like(x):
    """A rawdev cpu tensor with the values of a numpy array or another library's cpu tensor (anything with
    shape, dtype and __array__, e.g. a torch.Tensor from a state_dict); x itself when it is not one."""
    if not (hasattr(x, "__array__") and hasattr(x, "shape") and hasattr(x, "dtype")):
        return x
    import numpy as np

    from ..tensor.factory import from_numpy
    try:
        arr = np.asarray(x.detach() if hasattr(x, "detach") else x)
        return from_numpy(np.ascontiguousarray(arr))
    except (TypeError, ValueError, RuntimeError):
        return x
