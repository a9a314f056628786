"""The current RPC agent of this process (one at a time, as in PyTorch)."""
from typing import Any

__all__ = ["agent", "set_agent"]

_agent: list[Any] = [None]


def agent() -> Any:
    a = _agent[0]
    if a is None:
        raise RuntimeError("RPC has not been initialized. Call torch.distributed.rpc.init_rpc first.")
    return a


def set_agent(a: Any) -> None:
    _agent[0] = a
