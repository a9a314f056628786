"""Which classes a checkpoint may name, as PyTorch >= 2.6 decides it (torch.serialization's safe globals).

A whole object saved by rawdev.save names the classes it was made of ("package.module:Qualified.Name").
rawdev's own classes are always allowed: they are rawdev's code, already imported, and rebuilding them runs
none of it. Any other class (a user's Module subclass, a third-party object) is imported only when the load
says `weights_only=False`, or when the program registered it with `add_safe_globals` / `safe_globals`, the
allowlist PyTorch 2.6 introduced. Otherwise the load fails with PyTorch's own "Weights only load failed"
message (an UnpicklingError, as PyTorch raises), which tells the user both ways out.
"""

from __future__ import annotations

import contextlib
import importlib
import pickle
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals", "WeightsOnlyError",
           "resolve", "global_name"]

_lock = threading.Lock()
_registered: list[Any] = []            # what add_safe_globals got (objects, or (object, "module.name") pairs)
# builtins and collections classes a structure may name without asking: containers and scalars
_ALWAYS = {("builtins", n) for n in ("dict", "list", "tuple", "set", "frozenset", "int", "float", "str", "bool",
                                     "bytes", "complex", "object", "slice", "range")}
_ALWAYS |= {("collections", "OrderedDict"), ("collections", "defaultdict")}


class WeightsOnlyError(pickle.UnpicklingError):
    """A load with weights_only (PyTorch 2.6's default) met a class nobody allowed (PyTorch raises
    pickle.UnpicklingError with the same text)."""


_UNSAFE_DEFAULT = ("In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
                   "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely "
                   "succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
                   "trusted source.")
_UNSAFE_EXPLICIT = ("Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it can "
                    "result in arbitrary code execution. Do it only if you got the file from a trusted source.")


def weights_only_message(full_name: str, explicit: bool) -> str:
    """PyTorch 2.6's message for a global the weights-only loader refuses (explicit: weights_only=True was
    passed, rather than left to its default)."""
    short = full_name.rsplit(".", 1)[-1]
    return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
            "steps only if you trust the source of the checkpoint. \n\t(1) "
            + (_UNSAFE_EXPLICIT if explicit else _UNSAFE_DEFAULT)
            + "\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the "
            f"following error message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL {full_name} was not "
            f"an allowed global by default. Please use `torch.serialization.add_safe_globals([{short}])` or the "
            f"`torch.serialization.safe_globals([{short}])` context manager to allowlist this global if you trust "
            "this class/function.\n\nCheck the documentation of torch.load to learn more about types accepted by "
            "default with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def global_name(obj: Any) -> str:
    """'module:qualname' of a class or function (what a structure stores to name it)."""
    return f"{obj.__module__}:{obj.__qualname__}"


def _registered_names() -> dict[str, Any]:
    out = {}
    with _lock:
        items = list(_registered)
    for item in items:
        if isinstance(item, tuple):
            obj, name = item
            mod, _, qual = name.rpartition(".")
            out[f"{mod}:{qual}"] = obj
        else:
            out[global_name(item)] = item
    return out


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Mark classes (or functions) as safe for loading with weights_only=True, as PyTorch 2.6's
    torch.serialization.add_safe_globals: a checkpoint that names one of them loads without weights_only=False.

    Args:
        safe_globals: the classes, or (class, "module.Name") pairs when the file names it differently.

    Returns:
        None

    Example:
        >>> rawdev.serialization.add_safe_globals([MyNet])
        >>> model = rawdev.load("model.pt")
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"safe_globals must be a list of globals, got {type(safe_globals).__name__}")
    for g in safe_globals:
        if isinstance(g, tuple) and not (len(g) == 2 and isinstance(g[1], str)):
            raise TypeError("a safe global given as a tuple must be (object, 'module.name')")
        if not isinstance(g, tuple) and not hasattr(g, "__qualname__"):
            raise TypeError(f"a safe global must be a class or function, got {type(g).__name__}")
    with _lock:
        _registered.extend(safe_globals)


def get_safe_globals() -> list[Any]:
    """The globals add_safe_globals registered (a copy of the list).

    Returns:
        list of classes/functions (or (object, name) pairs)

    Example:
        >>> rawdev.serialization.get_safe_globals()
        []
    """
    with _lock:
        return list(_registered)


def clear_safe_globals() -> None:
    """Forget every global add_safe_globals registered.

    Returns:
        None

    Example:
        >>> rawdev.serialization.clear_safe_globals()
    """
    with _lock:
        _registered.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """Context manager: the given globals are safe for weights_only loads inside the `with` block only.

    Args:
        safe_globals: as add_safe_globals.

    Returns:
        a context manager

    Example:
        >>> with rawdev.serialization.safe_globals([MyNet]):
        ...     model = rawdev.load("model.pt")
    """
    with _lock:
        before = list(_registered)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        with _lock:
            _registered[:] = before


def _is_rawdev(module: str) -> bool:
    return module == "rawdev" or module.startswith("rawdev.")


def resolve(name: str, weights_only: bool | None, where: str) -> Any:
    """The class or function a structure names ('module:qualname'), if the rules allow it; imported only then.

    weights_only: None (PyTorch 2.6's default, which is True), True or False. Raises WeightsOnlyError with
    PyTorch's message for a name nobody allowed, and ValueError for a name that is not a plain import path."""
    if not isinstance(name, str) or name.count(":") != 1:
        raise ValueError(f"{where}: {str(name)[:80]!r} is not a 'module:qualname' name")
    module, qual = name.split(":")
    parts = qual.split(".")
    if not module or not all(p.isidentifier() for p in parts) or not all(
            p.isidentifier() for p in module.split(".")):
        raise ValueError(f"{where}: {name[:80]!r} is not an importable name")
    registered = _registered_names()
    if name in registered:
        return registered[name]
    if not (_is_rawdev(module) or (module, qual) in _ALWAYS or weights_only is False):
        raise WeightsOnlyError(weights_only_message(f"{module}.{qual}", explicit=weights_only is True))
    if module == "__main__" or module in sys.modules:
        mod = sys.modules.get(module)
        if mod is None:
            raise ValueError(f"{where}: the class {module}.{qual} is not defined in this program's __main__")
    else:
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            raise ValueError(f"{where}: cannot import module {module!r} for {qual} ({e})") from None
    obj: Any = mod
    for p in parts:
        try:
            obj = getattr(obj, p)
        except AttributeError:
            raise ValueError(f"{where}: module {module!r} has no attribute {qual!r}; the class the checkpoint "
                             "was saved with is gone or renamed") from None
    return obj
