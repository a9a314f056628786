"""`torch.fx.Tracer` and `symbolic_trace`: run a module's forward (or a function) on Proxies and record a Graph.

While tracing, `nn.Module.__call__` goes through Tracer.call_module (leaf modules — rawdev.nn's own layers —
become call_module nodes, others are traced through), a module's parameters and buffers read in forward
become get_attr nodes, and functions registered with wrap() become call_function nodes."""
from __future__ import annotations

import builtins
import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

from . import patching
from .graph import Graph
from .node import Argument
from .proxy import TracerBase

__all__ = ["Tracer", "symbolic_trace", "wrap"]

# (id of a module's globals, name) -> that globals dict: the functions wrap() made leaves
_wrapped_fns: dict[tuple[int, str], dict[str, Any]] = {}


def wrap(fn_or_name: str | Callable[..., Any]) -> str | Callable[..., Any]:
    """Make a module-level function a leaf of symbolic tracing: its calls are recorded as call_function nodes
    instead of being traced through. Call at module scope, with the function or its name.

    Args:
        fn_or_name: the function, or its name in the calling module's globals (a builtin like "len" too).

    Returns:
        fn_or_name, so it can be used as a decorator.

    Example:
        >>> @torch.fx.wrap   # doctest: +SKIP
        ... def my_op(x): return x.float().sigmoid()
    """
    if callable(fn_or_name):
        name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise AssertionError("Unsupported type for global function! Must be either a callable or string name")
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    caller = frame.f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


class Tracer(TracerBase):
    """Records a Graph from a module or function by running it on Proxies. Subclass and override
    is_leaf_module, call_module, create_node, create_proxy, create_arg or getattr to change what is recorded.

    Args:
        autowrap_modules: kept for torch's signature (math functions are always recorded when given Proxies).
        autowrap_functions: functions to record as call_function nodes when found in the traced code's globals.
        param_shapes_constant: kept for torch's signature.

    Example:
        >>> graph = Tracer().trace(model)   # doctest: +SKIP
        >>> gm = GraphModule(model, graph)
    """

    def __init__(self, autowrap_modules: tuple[Any, ...] = (math,),
                 autowrap_functions: tuple[Callable[..., Any], ...] = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[Any, str] | None = None
        self.root: Any = None
        self.tensor_attrs: dict[int, tuple[Any, str]] = {}
        self._constants = 0
        self._tracing = False

    # ------------------------------------------------------------------ what is a leaf, where a module sits
    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """Whether m is recorded as one call_module node (True for rawdev.nn's layers, except Sequential) or
        traced through.

        Args:
            m: the module.
            module_qualified_name: its path from the root.

        Returns:
            True to record a call_module node.

        Example:
            >>> class T(Tracer):   # doctest: +SKIP
            ...     def is_leaf_module(self, m, name): return isinstance(m, MyBlock) or super().is_leaf_module(m, name)
        """
        from ..nn import Sequential
        mod = type(m).__module__
        return (mod.startswith("rawdev.nn") or mod.startswith("torch.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod: Any) -> str:
        """The dotted path of a submodule of the root.

        Args:
            mod: the submodule.

        Returns:
            Its qualified name ("" for the root).

        Raises:
            NameError: when mod is not a submodule of the root.

        Example:
            >>> tracer.path_of_module(model.layer1[0].conv1)   # doctest: +SKIP
            'layer1.0.conv1'
        """
        if self.submodule_paths is None:
            self.submodule_paths = {id(m): n for n, m in self.root.named_modules()}
        path = self.submodule_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Any, forward: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A module called during tracing: a call_module node for a leaf, else its forward traced through.

        Args:
            m: the module.
            forward: runs the module (its __call__) on the arguments.
            args: positional arguments.
            kwargs: keyword arguments.

        Returns:
            A Proxy (or whatever forward returns when traced through).

        Example:
            >>> super().call_module(m, forward, args, kwargs)   # doctest: +SKIP
        """
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """A module attribute read during tracing: parameters and buffers become get_attr Proxies.

        Args:
            attr: the attribute name.
            attr_val: its value.
            parameter_proxy_cache: one Proxy per parameter for the whole trace.

        Returns:
            A Proxy for parameters and buffers, attr_val otherwise.

        Example:
            >>> tracer.getattr("weight", m.weight, {})   # doctest: +SKIP
        """
        from ..tensor import Tensor
        if isinstance(attr_val, Tensor):
            path = self._tensor_path(attr_val)
            if path is not None:
                if path not in parameter_proxy_cache:
                    parameter_proxy_cache[path] = self.create_proxy("get_attr", path, (), {})
                return parameter_proxy_cache[path]
        return attr_val

    def _tensor_path(self, t: Any) -> str | None:
        # keyed by id (a Tensor's == is elementwise); the dict holds the tensors, so ids stay theirs
        if not self.tensor_attrs and self.root is not None:
            for name, p in self.root.named_parameters():
                self.tensor_attrs.setdefault(id(p), (p, name))
            for name, b in self.root.named_buffers():
                self.tensor_attrs.setdefault(id(b), (b, name))
        hit = self.tensor_attrs.get(id(t))
        return hit[1] if hit is not None else None

    def create_arg(self, a: Any) -> Argument:
        """As TracerBase.create_arg; a tensor that is a parameter or buffer of the root becomes a get_attr
        node, any other tensor is stored on the root as `_tensor_constantN` and read with get_attr.

        Args:
            a: the value.

        Returns:
            The argument to store.

        Example:
            >>> tracer.create_arg(model.linear.weight)   # doctest: +SKIP
        """
        from ..nn import Module
        from ..tensor import Tensor
        if isinstance(a, Tensor):
            path = self._tensor_path(a)
            if path is None:
                path = f"_tensor_constant{self._constants}"
                self._constants += 1
                setattr(self.root, path, a)
                self.tensor_attrs[id(a)] = (a, path)
            return self.create_node("get_attr", path, (), {})
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        return super().create_arg(a)

    # ------------------------------------------------------------------ tracing
    def create_args_for_root(self, root_fn: Callable[..., Any], is_module: bool,
                             concrete_args: dict[str, Any] | None = None) -> tuple[Callable[..., Any], list[Any]]:
        """The placeholders for root_fn's parameters (a concrete_args entry is passed as the value itself and
        kept as the parameter's default in the generated code).

        Args:
            root_fn: the function traced (a forward, unbound).
            is_module: whether root_fn's first parameter is the module.
            concrete_args: parameters given fixed values.

        Returns:
            (root_fn, the arguments to call it with).

        Example:
            >>> fn, args = tracer.create_args_for_root(type(m).forward, True)   # doctest: +SKIP
        """
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())
        if is_module:
            params = params[1:]
        concrete_args = dict(concrete_args or {})
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise RuntimeError(f"Tracing expected {len(params)} arguments but got {len(concrete_args)} concrete "
                               f"arguments: {sorted(unknown)} are not parameters of {root_fn.__qualname__}")
        args: list[Any] = [self.root] if is_module else []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise NotImplementedError(f"symbolic_trace of a function with *args/**kwargs ({p}) is not "
                                          "supported by rawdev's tracer: give each input its own parameter")
            if p.name in concrete_args:
                value = concrete_args[p.name]
                self.create_node("placeholder", p.name, (value,), {})
                args.append(value)
                continue
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            ann = None if p.annotation is inspect.Parameter.empty else p.annotation
            args.append(self.create_proxy("placeholder", p.name, default, {}, type_expr=ann))
        return root_fn, args

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> Graph:
        """Trace root (an nn.Module or a function) and return the Graph.

        Args:
            root: the module (its forward is traced) or function.
            concrete_args: parameters to fix to a value (their Python control flow is then traced through).

        Returns:
            The Graph; self.root is the module (an empty Module for a function).

        Example:
            >>> graph = Tracer().trace(model)   # doctest: +SKIP
        """
        from ..nn import Module
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            is_module = True
        else:
            self.root = Module()
            fn = root
            is_module = False
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = None
        self.tensor_attrs = {}
        fn_globals = getattr(fn, "__globals__", {})
        parameter_proxy_cache: dict[str, Any] = {}
        tracer = self
        orig_call, orig_getattr = Module.__call__, Module.__getattr__

        def module_call_wrapper(mod: Any, *args: Any, **kwargs: Any) -> Any:
            def forward(*a: Any, **k: Any) -> Any:
                return orig_call(mod, *a, **k)
            return tracer.call_module(mod, forward, args, kwargs)

        def module_getattr_wrapper(mod: Any, attr: str) -> Any:
            return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

        undo: list[Callable[[], None]] = []
        patching.acquire()
        self._tracing = True
        try:
            Module.__call__ = module_call_wrapper  # type: ignore[method-assign,assignment]
            Module.__getattr__ = module_getattr_wrapper  # type: ignore[method-assign]
            undo.append(lambda: setattr(Module, "__call__", orig_call))
            undo.append(lambda: setattr(Module, "__getattr__", orig_getattr))
            self._patch_wrapped(fn_globals, undo)
            fn, args = self.create_args_for_root(fn, is_module, concrete_args)
            result = fn(*args)
            ret = getattr(fn, "__annotations__", {}).get("return")
            self.create_node("output", "output", (self.create_arg(result),), {}, type_expr=ret)
        finally:
            for u in reversed(undo):
                u()
            self._tracing = False
            patching.release()
            self.submodule_paths = None
        return self.graph

    def _patch_wrapped(self, fn_globals: dict[str, Any], undo: list[Callable[[], None]]) -> None:
        targets = list(_wrapped_fns.values())
        for f in self._autowrap_functions:
            for name, val in fn_globals.items():
                if val is f:
                    _wrapped_fns.setdefault((id(fn_globals), name), fn_globals)
                    targets.append(fn_globals)
        seen = set()
        for (gid, name), g in list(_wrapped_fns.items()):
            if (gid, name) in seen:
                continue
            seen.add((gid, name))
            if name in g:
                orig = g[name]
                g[name] = patching.proxy_aware(orig)
                undo.append(functools.partial(g.__setitem__, name, orig))
            elif hasattr(builtins, name):
                g[name] = patching.proxy_aware(getattr(builtins, name))
                undo.append(functools.partial(g.pop, name, None))


def symbolic_trace(root: Any, concrete_args: dict[str, Any] | None = None) -> Any:
    """Trace a module or function into a GraphModule: `GraphModule(root, Tracer().trace(root))`.

    Args:
        root: an nn.Module or a function.
        concrete_args: parameters to fix to a value.

    Returns:
        A GraphModule whose forward runs the recorded graph.

    Example:
        >>> gm = torch.fx.symbolic_trace(model)   # doctest: +SKIP
        >>> print(gm.code)
    """
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if not inspect.isfunction(root) else root.__name__
    return GraphModule(tracer.root, graph, name)

