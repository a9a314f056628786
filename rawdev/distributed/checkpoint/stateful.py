"""PyTorch's Stateful protocol: a value of a checkpointed state_dict that has state_dict() and load_state_dict()
(a model, an optimizer, a user's AppState) is saved as what its state_dict() returns and loaded back through its
load_state_dict()."""
from typing import Any, Protocol, runtime_checkable

__all__ = ["Stateful"]


@runtime_checkable
class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...
