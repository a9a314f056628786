"""How a call like `torch.cat([proxy, proxy])` or `F.relu(proxy)` becomes a call_function node.

PyTorch routes such calls through `__torch_function__`; rawdev's functions have no such hook (and adding a
check to every op would cost every eager call). Instead, while at least one Proxy is alive, the public
functions of rawdev's namespaces (rawdev, rawdev.nn.functional, rawdev.linalg, rawdev.special, rawdev.fft and
math) are replaced in their modules by wrappers: a call with a Proxy among its arguments (or inside a list or
tuple argument) records a call_function node whose target is the original function; any other call runs the
original. When the last Proxy is gone the originals are put back, so a program that never traces pays nothing.
Calls through names bound before the patch (`from rawdev import cat`) are not seen; use the module attribute
(`torch.cat`), as the corpus programs do, or fx.wrap the function."""
from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable
from typing import Any

_count = 0
_originals: dict[tuple[int, str], Any] = {}
_wrappers: dict[tuple[int, str], ProxyAware] = {}
_shared: dict[int, ProxyAware] = {}
_NOT_WRAPPED = {"is_tensor", "is_storage", "typename", "compile", "manual_seed", "seed", "initial_seed",
                "use_driver", "get_default_dtype", "set_default_dtype", "is_grad_enabled", "set_grad_enabled",
                "get_default_device", "set_default_device", "load", "save", "trace"}


_top: types.ModuleType | None = None
proxy_type: type = type(None)   # set by proxy.py (which imports this module) to its Proxy class


def set_top_namespace(module: types.ModuleType) -> None:
    """Called by rawdev/__init__ once it has imported fx: the package's own namespace (`torch.*`) is handed down
    rather than imported, since fx sits below the package's public API."""
    global _top
    _top = module


def top_namespace() -> types.ModuleType:
    """The rawdev package (what generated code calls `torch`)."""
    if _top is None:
        raise RuntimeError("rawdev.fx is used before the rawdev package finished importing")
    return _top


def namespaces() -> list[tuple[str, types.ModuleType]]:
    """The (printed prefix, module) pairs whose functions record nodes when given a Proxy."""
    from ..nn import functional as F
    top = top_namespace()
    out = [("torch", top), ("torch.nn.functional", F)]
    for sub in ("linalg", "special", "fft"):
        mod = getattr(top, sub, None)
        if isinstance(mod, types.ModuleType):
            out.append((f"torch.{sub}", mod))
    out.append(("math", math))
    return out


def find_proxy(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any | None:
    """The first Proxy among args/kwargs (looking one level into lists and tuples), or None."""
    ptype = proxy_type
    for a in (*args, *kwargs.values()):
        if isinstance(a, ptype):
            return a
        if type(a) in (list, tuple):
            for b in a:
                if isinstance(b, ptype):
                    return b
    return None


class ProxyAware:
    """fn, recording a call_function node of fn instead of running it when a Proxy is among its arguments.

    It compares and hashes equal to fn, so `target == torch.add` and `target in {torch.add}` hold for a node
    recorded while the wrappers are installed (only `is` tells the two apart)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fn)
        self.__fx_original__ = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        p = find_proxy(args, kwargs)
        if p is None:
            return self.__fx_original__(*args, **kwargs)
        return p.tracer.create_proxy("call_function", self.__fx_original__, args, kwargs)

    def __eq__(self, other: object) -> bool:
        return other is self or other is self.__fx_original__

    def __hash__(self) -> int:
        return hash(self.__fx_original__)

    def __repr__(self) -> str:
        return repr(self.__fx_original__)


def proxy_aware(fn: Callable[..., Any]) -> ProxyAware:
    """fn wrapped in a ProxyAware."""
    return ProxyAware(fn)


def _install() -> None:
    for _, ns in namespaces():
        for name, obj in list(vars(ns).items()):
            if name.startswith("_") or name in _NOT_WRAPPED:
                continue
            if not isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) or hasattr(obj, "__fx_original__"):
                continue
            key = (id(ns), name)
            _originals[key] = obj
            if key not in _wrappers or _wrappers[key].__fx_original__ is not obj:
                _wrappers[key] = _shared.get(id(obj)) or proxy_aware(obj)
                _shared[id(obj)] = _wrappers[key]   # rawdev.relu and F.relu stay one object
            setattr(ns, name, _wrappers[key])


def _uninstall() -> None:
    for _, ns in namespaces():
        d = vars(ns)
        for name in list(d):
            key = (id(ns), name)
            if key in _originals and d[name] is _wrappers.get(key):
                setattr(ns, name, _originals[key])
    _originals.clear()


def acquire() -> None:
    """One more live Proxy (or running trace): the wrappers are installed on the first."""
    global _count
    _count += 1
    if _count == 1:
        _install()


def release() -> None:
    """One Proxy fewer: the originals are restored after the last."""
    global _count
    if _count == 0:
        return
    _count -= 1
    if _count == 0:
        _uninstall()


def active() -> bool:
    """Whether the wrappers are installed now."""
    return _count > 0
