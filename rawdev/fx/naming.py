"""Names in generated code: unique node names as torch.fx makes them (`add`, `add_1`, `float_1` since `float` is a
builtin), and the expression that names a called function (`torch.cat`, `operator.add`, `__main___my_fn`)."""
from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Callable
from typing import Any

_ILLEGAL_SUFFIX = re.compile(r"(.*)_(\d+)$")
_ILLEGAL_CHARS = re.compile(r"[^0-9a-zA-Z_]+")
_RESERVED = {"torch", "self", "operator", "inf", "nan", "NoneType"}

_torch_names: dict[int, str] | None = None


def snake_case(s: str) -> str:
    """`CamelCase` -> `camel_case`, as torch.fx names nodes after a function or class."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()


def _is_illegal(name: str) -> bool:
    return keyword.iskeyword(name) or name in builtins.__dict__ or name in _RESERVED


class Namespace:
    """The set of names used in one graph: create_name returns a fresh, legal Python identifier."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = _ILLEGAL_SUFFIX.match(candidate)
        if m:
            base, num = m.group(1), int(m.group(2))
        else:
            base, num = candidate, None
        if num is None:
            num = self._base_count.get(base, 0)
            candidate = base if num == 0 else f"{base}_{num}"
        while candidate in self._used or _is_illegal(candidate):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        return candidate

    def reserve(self, name: str) -> None:
        self._used.add(name)


def _rawdev_names() -> dict[int, str]:
    # rawdev's public functions by identity -> the expression PyTorch prints (`torch.cat`), looked up on the
    # namespaces' original functions (not the tracing wrappers patching.py may have installed)
    global _torch_names
    if _torch_names is None:
        from . import patching
        names: dict[int, str] = {}
        for prefix, ns in patching.namespaces():
            for name, obj in list(vars(ns).items()):
                if name.startswith("_"):
                    continue
                obj = getattr(obj, "__fx_original__", obj)
                names.setdefault(id(obj), f"{prefix}.{name}")
        _torch_names = names
    return _torch_names


def qualified_name(fn: Callable[..., Any]) -> str:
    """The dotted name code would use for fn: `torch.relu`, `operator.add`, `getattr`, `mymodule.my_fn`.

    Args:
        fn: a function or other callable.

    Returns:
        The name.

    Example:
        >>> import operator
        >>> qualified_name(operator.add)
        'operator.add'
    """
    name = _rawdev_names().get(id(fn))
    if name is not None:
        return name
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return fn.__name__
    module = getattr(fn, "__module__", None) or type(fn).__module__
    if module in ("_operator", "operator"):
        module = "operator"
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{module}.{qual}"


def target_to_str(target: Any) -> str:
    """The base name a node gets for target (`linear.weight` -> `linear_weight`, operator.add -> `add`)."""
    if isinstance(target, str):
        if target.startswith("*"):
            target = target.lstrip("*")
        return snake_case(target.replace(".", "_")) if "." in target else target
    name = getattr(target, "__name__", None) or type(target).__name__
    return snake_case(name)
