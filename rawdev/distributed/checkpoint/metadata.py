"""What a distributed checkpoint holds, as data: the flattened keys of the state_dict it was saved from, each a
tensor (dtype and size, stored in the rank files) or a plain value (stored in the metadata itself, as tagged
JSON). The `.metadata` file is this, written as JSON; PyTorch writes a pickle there, which rawdev never reads."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from ...tensor.core import Tensor

__all__ = ["Metadata", "TensorStorageMetadata", "BytesStorageMetadata", "FORMAT", "METADATA_FILE", "flatten",
           "key_path", "has_tensor"]

FORMAT = "rawdev.distributed.checkpoint/1"
METADATA_FILE = ".metadata"


@dataclasses.dataclass(frozen=True)
class TensorStorageMetadata:
    """A saved tensor: its dtype name (e.g. 'float32'), its size, and the rank file that holds it."""
    dtype: str
    size: tuple[int, ...]
    file: str


@dataclasses.dataclass(frozen=True)
class BytesStorageMetadata:
    """A saved non-tensor value (a step count, a learning rate, a list of strings)."""


@dataclasses.dataclass
class Metadata:
    """What `save` returns and `load` reads: every flattened key's storage.

    Attributes:
        state_dict_metadata: {flattened key: TensorStorageMetadata | BytesStorageMetadata}.
        planner_data: {flattened key: the key path (a tuple of dict keys / list indices) it was flattened from}.
        storage_data: {flattened key: the plain value's encoded form} for the non-tensor entries.
    """
    state_dict_metadata: dict[str, TensorStorageMetadata | BytesStorageMetadata]
    planner_data: Any = None
    storage_data: Any = None


def key_path(path: tuple[Any, ...]) -> str:
    """The flattened key of a nested value, as PyTorch's flatten_state_dict spells it: its keys joined by '.'."""
    return ".".join(str(p) for p in path)


def flatten(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(key path, leaf) for every leaf of a state_dict: dicts are walked, and lists/tuples are walked too (an
    optimizer's param_groups), so each tensor is a leaf of its own; anything else is a leaf."""
    if isinstance(obj, Mapping):
        if not obj and path:
            yield path, obj
        for k, v in obj.items():
            yield from flatten(v, path + (k,))
    elif isinstance(obj, (list, tuple)) and path and any(has_tensor(v) for v in obj):
        for i, v in enumerate(obj):
            yield from flatten(v, path + (i,))
    else:
        yield path, obj


def has_tensor(obj: Any) -> bool:
    """Whether obj is a tensor or a container holding one (such lists are walked, others are one value)."""
    if isinstance(obj, Tensor):
        return True
    if isinstance(obj, Mapping):
        return any(has_tensor(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(has_tensor(v) for v in obj)
    return False
