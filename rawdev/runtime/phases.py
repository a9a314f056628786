"""Training phases as events: the layers that know a phase has begun (Module.__call__: "forward",
autograd.backward: "backward", Optimizer.step: "optimizer step") emit it here, and the memory tool above them
subscribes while it records history. The emitters import down to this module and never name the tool.
With no subscriber an emit costs one test of a list."""
from __future__ import annotations

from collections.abc import Callable

_subscribers: list[Callable[[str], None]] = []


def emit(name: str) -> None:
    """A phase of training begins (called on every module call: kept to one test when nothing listens)."""
    if _subscribers:
        for fn in list(_subscribers):
            fn(name)


def subscribe(fn: Callable[[str], None]) -> None:
    """Call fn(name) at each phase event until unsubscribe(fn); subscribing twice is one subscription."""
    if fn not in _subscribers:
        _subscribers.append(fn)


def unsubscribe(fn: Callable[[str], None]) -> None:
    if fn in _subscribers:
        _subscribers.remove(fn)
