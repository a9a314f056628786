"""RRef: a reference to a value that lives on one worker (its owner). The owner keeps the value in its agent's
table under the RRef's id; other workers hold the id and ask the owner for the value (`to_here`) or run a
function next to it (`rpc_sync().method(...)`). Values stay with their owner until the RPC group shuts down
(rawdev keeps no distributed reference counts; see docs/INTERNALS.md)."""
from __future__ import annotations

from typing import Any

from . import agent as _agent
from . import state
from .wire import function_ref

__all__ = ["RRef"]


def _call_on_value(rref: RRef, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return getattr(rref.local_value(), method)(*args, **kwargs)


class _Proxy:
    """rref.rpc_sync() / rpc_async() / remote(): attribute calls run on the owner, next to the value."""

    def __init__(self, rref: RRef, how: str, timeout: float) -> None:
        self._rref, self._how, self._timeout = rref, how, timeout

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            r = self._rref
            payload: tuple[Any, ...] = ((r, method, args, kwargs), {})
            fields: dict[str, Any] = {"func": function_ref(_call_on_value, "the function")}
            if self._how == "remote":
                agent = r._agent
                key = (r._owner.id, agent.info.id, next(agent.ids))
                agent.request(r._owner, "remote", dict(fields, key=list(key)), payload, self._timeout)
                return RRef._existing(agent, r._owner, key)
            fut = r._agent.request(r._owner, "call", fields, payload, self._timeout)
            return fut if self._how == "rpc_async" else fut.wait()
        return call


class RRef:
    """A reference to a value owned by one worker.

    Args:
        value: the value this worker owns (`RRef(obj)` makes a local owner reference).
        type_hint, devices: accepted for PyTorch's signature.

    Example:
        >>> rref = rpc.RRef(rawdev.ones(2))   # after rpc.init_rpc  # doctest: +SKIP
        >>> rpc.rpc_sync("worker1", some_function, args=(rref,))  # doctest: +SKIP
    """

    def __init__(self, value: Any, type_hint: Any = None, devices: Any = None) -> None:
        agent = state.agent()
        self._agent, self._owner = agent, agent.info
        self._key: tuple[int, ...] = (agent.info.id, agent.info.id, next(agent.ids))
        fut = agent.owned_value(self._key)
        fut.set_result(value)

    @classmethod
    def _existing(cls, agent: Any, owner: Any, key: tuple[int, ...]) -> RRef:
        r = cls.__new__(cls)
        r._agent, r._owner, r._key = agent, owner, tuple(key)
        return r

    def is_owner(self) -> bool:
        """True on the worker that owns the value."""
        return self._owner.id == self._agent.info.id

    def owner(self) -> Any:
        """The owner's WorkerInfo."""
        return self._owner

    def owner_name(self) -> str:
        return self._owner.name

    def confirmed_by_owner(self) -> bool:
        return True

    def local_value(self) -> Any:
        """The value itself; only on the owner."""
        if not self.is_owner():
            raise RuntimeError(f"Cannot call localValue() on a non-local reference. Call it on {self._owner}")
        return self._agent.owned_value(self._key).wait()

    def to_here(self, timeout: float = -1.0) -> Any:
        """A copy of the value on this worker (the value itself on the owner), waiting for it if needed."""
        if self.is_owner():
            return self.local_value()
        return self._agent.request(self._owner, "fetch", {"key": list(self._key)}, None, timeout).wait()

    def rpc_sync(self, timeout: float = -1.0) -> Any:
        """A proxy whose method calls run on the owner and return their results: rref.rpc_sync().forward(x)."""
        return _Proxy(self, "rpc_sync", timeout)

    def rpc_async(self, timeout: float = -1.0) -> Any:
        """Like rpc_sync(), returning Futures."""
        return _Proxy(self, "rpc_async", timeout)

    def remote(self, timeout: float = -1.0) -> Any:
        """Like rpc_sync(), returning RRefs to the results (kept on the owner)."""
        return _Proxy(self, "remote", timeout)

    def __repr__(self) -> str:
        kind = "OwnerRRef" if self.is_owner() else "UserRRef"
        return f"{kind}(owner={self._owner}, id={self._key})"

    def __reduce__(self) -> Any:
        raise TypeError("an RRef travels only inside RPC messages; it cannot be pickled")


_agent.RREF_CLASS[0] = RRef
