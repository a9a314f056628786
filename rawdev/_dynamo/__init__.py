"""`torch._dynamo`: the graph capture behind torch.compile. rawdev compiles nothing (rawdev.compile runs the model
eagerly), so what exists here is what is true of an eager runtime: ``reset()`` (no compiled code to drop),
``allow_in_graph``/``disallow_in_graph``/``disable`` (markers, returned unchanged), ``explain`` (where a capture
of the function would break, from a recording of its ops: rawdev/_dynamo/explain.py), ``utils.same``. The
optimizer entry points (``optimize``, ``export``, ``config``) are refused."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..refusals import Refused
from .explain import ExplainOutput, explain

__all__ = ["reset", "allow_in_graph", "disallow_in_graph", "disable", "explain", "ExplainOutput", "is_compiling"]

WHY = ("rawdev runs Python eagerly and has no graph compiler (no TorchDynamo, no Inductor); "
       "rawdev.compile returns the module or function unchanged")


def reset() -> None:
    """Drop compiled code and guards (torch._dynamo.reset): rawdev compiles nothing, so there is none to drop."""


def allow_in_graph(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark fn to be put in a captured graph as one call: rawdev runs everything eagerly, so fn runs as it is."""
    return fn


def disallow_in_graph(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark fn to cause a graph break: rawdev runs everything eagerly, so fn runs as it is."""
    return fn


def disable(fn: Callable[..., Any] | None = None, recursive: bool = True) -> Any:
    """Run fn without graph capture (a decorator too): rawdev never captures, so fn comes back unchanged."""
    if fn is None:
        return lambda f: f
    return fn


def is_compiling() -> bool:
    """Whether the caller runs inside a graph capture: never, in rawdev."""
    return False


optimize = Refused("torch._dynamo.optimize", "TorchDynamo (torch._dynamo.optimize)", WHY)
export = Refused("torch._dynamo.export", "TorchDynamo (torch._dynamo.export)", WHY + "; torch.export.export "
                 "captures a module's forward")
config = Refused("torch._dynamo.config", "TorchDynamo (torch._dynamo.config)", WHY)
