"""The registered Python ops: one record per ``ns::name`` with its schema and its kernels per dispatch key, and
the function that ``torch.ops.<ns>.<name>`` calls, which picks the kernel for its arguments."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..ops import torch_ops

__all__ = ["Library", "define", "impl", "impl_abstract", "get_op", "OpRecord"]

_OPS: dict[str, OpRecord] = {}           # "ns::name" -> record
_DEF_NAMESPACES: set[str] = set()        # namespaces a "DEF" Library owns

# the dispatch keys that name a device, by the device type they serve
_DEVICE_KEYS = {"cpu": ("cpu", "CPU"), "cuda": ("cuda", "CUDA")}
_KNOWN_KEYS = {"CPU", "CUDA", "cpu", "cuda", "CompositeExplicitAutograd", "CompositeImplicitAutograd", "Autograd",
               "Meta", "default"}


class OpRecord:
    """A registered op: its qualified name, schema text, kernels by key, the fake (shape) function, and the
    autograd formula (backward, setup_context) when one was registered."""

    def __init__(self, qualname: str, schema: str) -> None:
        self.qualname, self.schema = qualname, schema
        self.kernels: dict[str, Callable[..., Any]] = {}
        self.fake: Callable[..., Any] | None = None
        self.backward: Callable[..., Any] | None = None
        self.setup_context: Callable[..., Any] | None = None
        self.mutates = bool(re.search(r"\([a-z]!\)", schema))

    def kernel_for(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Callable[..., Any]]:
        from ..onnx.tracer import _tensors
        tensors = _tensors((args, kwargs), [])
        device = tensors[0].device.type if tensors else "cpu"
        for key in _DEVICE_KEYS.get(device, ()) + ("CompositeExplicitAutograd", "default",
                                                   "CompositeImplicitAutograd"):
            fn = self.kernels.get(key)
            if fn is not None:
                return key, fn
        raise NotImplementedError(f"Could not run '{self.qualname}' with arguments from the '{device.upper()}' "
                                  f"backend: no kernel is registered for it (registered: "
                                  f"{sorted(self.kernels) or 'none'})")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key, fn = self.kernel_for(args, kwargs)
        if key == "CompositeImplicitAutograd":
            return fn(*args, **kwargs)            # differentiable through the ops it calls
        from .autograd_bridge import call_with_autograd
        return call_with_autograd(self, fn, args, kwargs)


def _parse_name(schema: str) -> str:
    m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)(\.[A-Za-z0-9_]+)?\s*\(", schema)
    if m is None:
        raise RuntimeError(f"Expected schema of the form 'name(Tensor x) -> Tensor', got {schema!r}")
    return m.group(1)


def _register(qualname: str, schema: str) -> OpRecord:
    if qualname in _OPS:
        raise RuntimeError(f"Tried to register an operator ({qualname}) with the same name and overload name "
                           f"multiple times.")
    ns, name = qualname.split("::", 1)
    rec = _OPS[qualname] = OpRecord(qualname, schema)
    torch_ops.provide(ns, {name: rec})
    return rec


def get_op(qualname: str) -> OpRecord:
    """The record of a registered op ("ns::name")."""
    if "::" not in qualname:
        raise ValueError(f"Expected a qualified name 'namespace::name', got {qualname!r}")
    rec = _OPS.get(qualname)
    if rec is None:
        raise RuntimeError(f"operator {qualname} does not exist (define it first)")
    return rec


def _unregister(qualname: str) -> None:
    rec = _OPS.pop(qualname, None)
    if rec is not None:
        ns, name = qualname.split("::", 1)
        torch_ops._PROVIDED.get(ns, {}).pop(name, None)
        torch_ops.namespace(ns)._packets.pop(name, None)


class Library:
    """A set of registrations into one namespace (PyTorch's torch.library.Library).

    Args:
        ns: the namespace (``torch.ops.<ns>``).
        kind: "DEF" (this library owns the namespace and defines its ops), "FRAGMENT" (defines more ops in it),
            "IMPL" (only registers kernels for ops defined elsewhere).
        dispatch_key: the default key of ``impl`` (default CompositeImplicitAutograd).

    Example:
        >>> lib = torch.library.Library("mylib", "FRAGMENT")
        >>> lib.define("scale(Tensor x, float s) -> Tensor")
        >>> lib.impl("scale", lambda x, s: x * s, "CompositeImplicitAutograd")
        >>> torch.ops.mylib.scale(torch.ones(2), 3.0)
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError("Unsupported kind: ", kind)
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please "
                                   f"put all of your definitions in a single TORCH_LIBRARY block. If you were trying "
                                   f"to specify implementations, consider using TORCH_LIBRARY_IMPL (which can be "
                                   f"duplicated). If you really intended to define operators for a single namespace "
                                   f"in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to explicitly indicate "
                                   f"this.")
            _DEF_NAMESPACES.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined: list[str] = []
        self._impls: list[tuple[str, str]] = []

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Define an op of this namespace from its schema ("name(Tensor x, float s) -> Tensor").

        Returns:
            The op's name.
        """
        if self.kind == "IMPL":
            raise RuntimeError("define() is not allowed on an IMPL library")
        name = _parse_name(schema)
        _register(f"{self.ns}::{name}", schema)
        self._defined.append(f"{self.ns}::{name}")
        return name

    def impl(self, op_name: Any, fn: Callable[..., Any], dispatch_key: str = "", *,
             with_keyset: bool = False) -> None:
        """Register fn as the kernel of op_name (a name in this namespace, or "ns::name") for dispatch_key."""
        name = op_name if isinstance(op_name, str) else getattr(op_name, "__name__", str(op_name))
        qualname = name if "::" in name else f"{self.ns}::{name}"
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if key not in _KNOWN_KEYS:
            raise ValueError(f"rawdev.library: unknown dispatch key {key!r} (rawdev dispatches {sorted(_KNOWN_KEYS)})")
        rec = get_op(qualname)
        if key == "Meta":
            rec.fake = fn
        else:
            rec.kernels[key] = fn
        self._impls.append((qualname, key))

    def _destroy(self) -> None:
        """Remove what this library registered."""
        for qualname, key in self._impls:
            rec = _OPS.get(qualname)
            if rec is not None:
                rec.kernels.pop(key, None)
        for qualname in self._defined:
            _unregister(qualname)
        if self.kind == "DEF":
            _DEF_NAMESPACES.discard(self.ns)
        self._defined, self._impls = [], []


def define(qualname: str, schema: str, *, lib: Library | None = None, tags: Any = ()) -> None:
    """Define ``ns::name`` with the schema of its arguments ("(Tensor x) -> Tensor")."""
    ns, name = qualname.split("::", 1)
    _register(qualname, name + schema if schema.lstrip().startswith("(") else schema)


def _keys(types: Any) -> list[str]:
    if isinstance(types, str):
        return [types]
    return list(types)


def impl(qualname: Any, types: Any, func: Callable[..., Any] | None = None, *, lib: Library | None = None) -> Any:
    """Register a kernel: ``impl("ns::name", "cpu", fn)`` / ``@impl("ns::name", ("cpu", "cuda"))``, or the older
    ``@impl(lib, "name", "CompositeExplicitAutograd")``.

    Returns:
        A decorator when func is not given.
    """
    if isinstance(qualname, Library):      # impl(lib, name, dispatch_key)
        library, name, key = qualname, types, func if isinstance(func, str) else ""

        def register_old(fn: Callable[..., Any]) -> Callable[..., Any]:
            library.impl(name, fn, key)
            return fn
        return register_old

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        rec = get_op(qualname)
        for key in _keys(types):
            if key == "Meta":
                rec.fake = fn
            else:
                rec.kernels[key] = fn
        return fn
    return register(func) if func is not None else register


def impl_abstract(qualname: str, func: Callable[..., Any] | None = None, *, lib: Library | None = None,
                  _stacklevel: int = 1) -> Any:
    """Register the shape function of an op (the older name of register_fake)."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        get_op(qualname).fake = fn
        return fn
    return register(func) if func is not None else register
