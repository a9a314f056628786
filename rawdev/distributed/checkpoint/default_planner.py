"""PyTorch's default save and load planners, as options: rawdev runs one plan (every rank holds a full replica, as
data parallel training has it, so the lowest rank writes each tensor once and every rank reads what it asks for).
A planner subclass that overrides the planning steps is refused by `save`/`load`, since rawdev would not call
them."""
from __future__ import annotations

from typing import Any

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner", "SavePlanner", "LoadPlanner"]


class SavePlanner:
    """The base of save planners."""


class LoadPlanner:
    """The base of load planners."""


class DefaultSavePlanner(SavePlanner):
    """The default save plan.

    Args:
        flatten_state_dict: nested dicts are stored under dotted keys (always, as True).
        flatten_sharded_tensors, dedup_replicated_tensors, dedup_save_to_lowest_rank, enable_plan_caching:
            accepted for PyTorch's signature; replicated tensors are written once, by the lowest rank.
    """

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 dedup_replicated_tensors: bool | None = None, dedup_save_to_lowest_rank: bool = False,
                 enable_plan_caching: bool = False, **kwargs: Any) -> None:
        if not flatten_state_dict:
            raise NotImplementedError("rawdev.distributed.checkpoint: DefaultSavePlanner(flatten_state_dict=False) "
                                      "is not supported: rawdev always stores nested state_dicts under dotted keys")
        self.flatten_state_dict = True


class DefaultLoadPlanner(LoadPlanner):
    """The default load plan.

    Args:
        flatten_state_dict: always True (see DefaultSavePlanner).
        flatten_sharded_tensors: accepted for PyTorch's signature.
        allow_partial_load: keys of the state_dict that the checkpoint lacks are left as they are instead of
            raising "Missing key in checkpoint state_dict".
    """

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 allow_partial_load: bool = False, **kwargs: Any) -> None:
        if not flatten_state_dict:
            raise NotImplementedError("rawdev.distributed.checkpoint: DefaultLoadPlanner(flatten_state_dict=False) "
                                      "is not supported: rawdev always stores nested state_dicts under dotted keys")
        self.flatten_state_dict, self.allow_partial_load = True, bool(allow_partial_load)
