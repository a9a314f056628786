"""`torch.ops.<namespace>.<op>.<overload>`: PyTorch's handle on its operator registry, answered from rawdev's.

Programs reach ops this way to name one precisely (pattern rewrites in torch.fx, decomposition tables, a schema's
``is_mutable``): ``torch.ops.aten.add.Tensor(x, y)``. rawdev has no ATen dispatcher, but it has one record per op
(rawdev.ops.registry), so ``aten.<name>`` is an :class:`OpOverloadPacket` over rawdev's op of that name and each
overload (``.default``, ``.Tensor``, ``.Scalar``, ``.int``, ``.out``, ...) an :class:`OpOverload` calling it:
rawdev's ops take every overload's arguments through one Python signature. ``_schema`` says what rawdev knows
(name, overload, whether the op writes into an argument); it is not ATen's full schema string.

``torch.ops.profiler._record_function_enter``/``_exit`` open and close a rawdev.profiler range, as the profiler
ops of PyTorch do. Other namespaces are those of C++ libraries (``torch.ops.load_library``), which rawdev refuses:
their ops raise AttributeError as PyTorch's do for an op that was never registered.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["OpNamespace", "OpOverloadPacket", "OpOverload", "OpSchema", "namespace", "provide"]

# the overload names ATen gives the common ops; each calls rawdev's one implementation of the op
_OVERLOADS = ("default", "Tensor", "Scalar", "int", "dim", "dims", "self", "other", "input", "out", "Tensor_Tensor",
              "Tensor_Scalar", "Scalar_Tensor", "Tensor_out", "Scalar_out", "dim_IntList", "using_ints", "names",
              "intlist", "float", "Tensor_mode", "Scalar_mode", "values", "correction", "memory_format", "dtype",
              "device", "src", "value", "reduce", "two", "vec", "start", "start_step", "list", "t", "x")


# set while torch.export records a forward (rawdev.export.recorder): called as hook(op, args, kwargs) in place of
# the op, so that an op reached through torch.ops is one node of the graph
_call_hook: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any] | None = None


class OpSchema:
    """What rawdev knows of an overload's schema: ``name`` ("aten::add"), ``overload_name`` ("Tensor"),
    ``is_mutable`` (the op writes into one of its arguments: an in-place ``*_`` op or an ``out`` overload) and the
    Python parameters of rawdev's implementation."""

    def __init__(self, name: str, overload_name: str, fn: Callable[..., Any]) -> None:
        self.name, self.overload_name = name, overload_name
        self.is_mutable = name.endswith("_") or overload_name.endswith("out")
        try:
            self.arguments = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            self.arguments = []

    def __repr__(self) -> str:
        suffix = f".{self.overload_name}" if self.overload_name else ""
        return f"{self.name}{suffix}({', '.join(self.arguments)})"


class OpOverload:
    """One overload of an op (``torch.ops.aten.add.Tensor``): callable, with ``_schema``, ``overloadpacket`` and
    ``name()`` as PyTorch's."""

    def __init__(self, packet: OpOverloadPacket, overload_name: str) -> None:
        self.overloadpacket, self._overloadname = packet, overload_name
        self._op = packet._op
        self._schema = OpSchema(packet._qualified_op_name, "" if overload_name == "default" else overload_name,
                                packet._op)
        self.__name__ = f"{packet.__name__}.{overload_name}"
        self.__module__, self.__qualname__ = packet.__module__, f"{packet.__qualname__}.{overload_name}"

    def name(self) -> str:
        return f"{self.overloadpacket._qualified_op_name}.{self._overloadname}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _call_hook is not None:
            return _call_hook(self, args, kwargs)
        return self._op(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self.overloadpacket._qualified_op_name.replace('::', '.')}', " \
               f"overload='{self._overloadname}')>"


class OpOverloadPacket:
    """Every overload of one op (``torch.ops.aten.add``): callable (rawdev picks the behaviour from the arguments,
    as ATen's overload resolution would), and ``.default``/``.Tensor``/... give the overloads."""

    def __init__(self, namespace: str, name: str, op: Callable[..., Any]) -> None:
        self._qualified_op_name = f"{namespace}::{name}"
        self._op = op
        self.__name__ = name
        # code generated for a graph (torch.fx) names the op as a program does: torch.ops.<namespace>.<name>
        self.__module__, self.__qualname__ = f"torch.ops.{namespace}", name
        self._overloads: dict[str, OpOverload] = {}

    def overloads(self) -> list[str]:
        return list(_OVERLOADS)

    def __getattr__(self, key: str) -> OpOverload:
        if key.startswith("__") or key not in _OVERLOADS:
            raise AttributeError(f"The underlying op of '{self._qualified_op_name.replace('::', '.')}' has no "
                                 f"overload name '{key}'")
        if key not in self._overloads:
            self._overloads[key] = OpOverload(self, key)
        return self._overloads[key]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _call_hook is not None:
            return _call_hook(self, args, kwargs)
        return self._op(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._qualified_op_name.replace('::', '.')}')>"


class OpNamespace:
    """``torch.ops.<name>``: ops resolved by attribute on first use, as PyTorch's lazily populated namespaces."""

    def __init__(self, name: str, resolve: Callable[[str], Callable[..., Any] | None]) -> None:
        self.name, self._resolve = name, resolve
        self._packets: dict[str, OpOverloadPacket] = {}

    def __getattr__(self, op_name: str) -> OpOverloadPacket:
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        if op_name not in self._packets:
            fn = self._resolve(op_name)
            if fn is None:
                raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'")
            self._packets[op_name] = OpOverloadPacket(self.name, op_name, fn)
        return self._packets[op_name]

    def __repr__(self) -> str:
        return f"<OpNamespace '{self.name}'>"


def _aten(name: str) -> Callable[..., Any] | None:
    from ..tensor import Tensor
    from . import registry
    for where in ("torch", "functional"):
        fn = registry.names(where).get(name)
        if fn is not None:
            return fn
    method = getattr(Tensor, name, None)
    if callable(method) and not name.startswith("_"):
        return method
    return None


# namespaces whose ops a higher layer provides (rawdev.profiler registers "profiler"): name -> {op name: callable}
_PROVIDED: dict[str, dict[str, Callable[..., Any]]] = {}
_NAMESPACES: dict[str, OpNamespace] = {}


def provide(name: str, ops: dict[str, Callable[..., Any]]) -> None:
    """Put ops into ``torch.ops.<name>`` from the layer that owns them (imports point down: rawdev.profiler
    provides torch.ops.profiler)."""
    _PROVIDED.setdefault(name, {}).update(ops)


def namespace(name: str) -> OpNamespace:
    """The namespace object ``torch.ops.<name>`` (aten holds rawdev's ops, a provided one what its layer gave; any
    other is empty: its ops would come from a C++ library, which rawdev does not load)."""
    if name not in _NAMESPACES:
        if name == "aten":
            resolve: Callable[[str], Callable[..., Any] | None] = _aten
        else:
            def resolve(op_name: str) -> Callable[..., Any] | None:
                return _PROVIDED.get(name, {}).get(op_name)
        _NAMESPACES[name] = OpNamespace(name, resolve)
    return _NAMESPACES[name]
