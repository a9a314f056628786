"""`load`: a checkpoint into a state_dict, in place. The state_dict says what to read: each of its tensors is
filled from the checkpoint (keeping its device, dtype and identity, so a model's parameters stay the objects its
optimizer holds), each plain value is replaced, and each Stateful value gets load_state_dict() of what was read."""
from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from ...autograd.grad_mode import no_grad
from ...serialization import load as _load_tensors
from ...tensor.core import Tensor
from ..objects import decode
from .default_planner import DefaultLoadPlanner
from .metadata import Metadata, TensorStorageMetadata, has_tensor, key_path
from .state_dict_saver import _refuse_rank_local
from .storage import CheckpointException, check_planner, checkpoint_dir, is_stateful, read_metadata

__all__ = ["load", "load_state_dict"]


class _Reader:
    """Reads entries of one checkpoint on demand (the tensor file once, when the first tensor is asked for)."""

    def __init__(self, path: str, md: Metadata, partial: bool) -> None:
        self.path, self.md, self.partial = path, md, partial
        self._tensors: dict[str, Any] | None = None

    def tensor(self, key: str, entry: TensorStorageMetadata) -> Tensor:
        if self._tensors is None:
            name = os.path.join(self.path, entry.file)
            try:
                self._tensors = _load_tensors(name, map_location="cpu")
            except FileNotFoundError:
                raise CheckpointException(f"rawdev.distributed.checkpoint.load: {name!r}, which {self.path!r}'s "
                                          f"metadata names, is missing") from None
        t = self._tensors.get(key)
        if t is None:
            raise CheckpointException(f"rawdev.distributed.checkpoint.load: {key!r} is in the metadata but not in "
                                      f"{entry.file!r}: the checkpoint is damaged")
        return t

    def fill(self, obj: Any, path: tuple[Any, ...]) -> Any:
        """obj with its leaves loaded (dicts and lists changed in place, tuples rebuilt), following the same walk
        as the saver's flatten()."""
        if isinstance(obj, Mapping) and (obj or not path):
            for k, v in list(obj.items()):
                new = self.fill(v, path + (k,))
                if new is not v:
                    obj[k] = new   # type: ignore[index]
            return obj
        if isinstance(obj, (list, tuple)) and path and any(has_tensor(v) for v in obj):
            items = [self.fill(v, path + (i,)) for i, v in enumerate(obj)]
            if isinstance(obj, list):
                obj[:] = items
                return obj
            return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
        return self.leaf(obj, path)

    def leaf(self, obj: Any, path: tuple[Any, ...]) -> Any:
        key = key_path(path)
        entry = self.md.state_dict_metadata.get(key)
        if entry is None:
            if isinstance(obj, Mapping) and not obj and path:
                found = self.subtree(path)
                if found:   # e.g. a fresh optimizer's empty `state`: rebuilt from what the checkpoint holds under it
                    obj.update(found)   # type: ignore[attr-defined]
                    return obj
            if self.partial:
                return obj
            raise RuntimeError(f"Missing key in checkpoint state_dict: {key}.")
        if not isinstance(obj, Tensor):
            if isinstance(entry, TensorStorageMetadata):
                return self.tensor(key, entry)
            return decode(self.md.storage_data[key].encode())
        if not isinstance(entry, TensorStorageMetadata):
            raise CheckpointException(f"rawdev.distributed.checkpoint.load: {key!r} is a tensor in the state_dict "
                                      f"but a plain value in the checkpoint")
        _refuse_rank_local(obj, key)
        if tuple(obj.shape) != tuple(entry.size):
            raise ValueError(f"Size mismatch between saved {_size(entry.size)} and current: {_size(obj.shape)} for "
                             f"{key}")
        src = self.tensor(key, entry)
        with no_grad():
            obj.copy_(src)
        return obj


    def subtree(self, path: tuple[Any, ...]) -> dict[Any, Any]:
        """The nested dict of every entry saved under `path` (keys as they were saved: ints stay ints)."""
        out: dict[Any, Any] = {}
        n = len(path)
        for key, full in (self.md.planner_data or {}).items():
            full = tuple(full)
            if len(full) <= n or full[:n] != tuple(path):
                continue
            node = out
            for p in full[n:-1]:
                node = node.setdefault(p, {})
            entry = self.md.state_dict_metadata[key]
            node[full[-1]] = (self.tensor(key, entry) if isinstance(entry, TensorStorageMetadata)
                              else decode(self.md.storage_data[key].encode()))
        return out


def _size(shape: Any) -> str:
    return f"torch.Size([{', '.join(str(int(n)) for n in shape)}])"


def load(state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike[str] | None = None,
         storage_reader: Any = None, planner: Any = None, process_group: Any = None, no_dist: bool = False) -> None:
    """Load a checkpoint into `state_dict` in place, as `torch.distributed.checkpoint.load`.

    Every key of the state_dict (flattened as `save` flattens) is read: tensors are copied into (same object,
    device and dtype), plain values replaced, Stateful values (a model, an optimizer) get load_state_dict() of what
    was read. Keys the checkpoint has and the state_dict lacks are not read. Each rank reads for itself.

    Args:
        state_dict: the dict to fill; its structure says what to read.
        checkpoint_id: the checkpoint directory.
        storage_reader: a FileSystemReader, instead of checkpoint_id.
        planner: None or a DefaultLoadPlanner (allow_partial_load=True leaves keys the checkpoint lacks as they are).
        process_group, no_dist: accepted; loading needs no communication.

    Raises:
        RuntimeError: "Missing key in checkpoint state_dict: <key>." for a key the checkpoint lacks.
        ValueError: "Size mismatch between saved ... and current: ... for <key>".

    Example:
        >>> import rawdev.distributed.checkpoint as dcp
        >>> state = {"model": model, "epoch": 0}
        >>> dcp.load(state, checkpoint_id="/tmp/run1")  # doctest: +SKIP
    """
    plan = check_planner(planner, DefaultLoadPlanner)
    if not isinstance(state_dict, dict):
        raise TypeError(f"rawdev.distributed.checkpoint.load: state_dict must be a dict, got "
                        f"{type(state_dict).__name__}")
    path = checkpoint_dir(checkpoint_id, storage_reader, "storage_reader")
    reader = _Reader(path, read_metadata(path), plan.allow_partial_load)
    statefuls = {k: v for k, v in state_dict.items() if is_stateful(v)}
    templates = {k: v.state_dict() for k, v in statefuls.items()}
    for k in list(state_dict):
        if k in statefuls:
            templates[k] = reader.fill(templates[k], (k,))
        else:
            new = reader.fill(state_dict[k], (k,))
            if new is not state_dict[k]:
                state_dict[k] = new
    for k, obj in statefuls.items():
        obj.load_state_dict(templates[k])


def load_state_dict(state_dict: dict[str, Any], storage_reader: Any, process_group: Any = None,
                    coordinator_rank: int = 0, no_dist: bool = False, planner: Any = None) -> None:
    """The former name of `load` (deprecated in PyTorch, kept working)."""
    warnings.warn("'load_state_dict' is deprecated and will be removed in future versions. Please use 'load' instead.",
                  FutureWarning, stacklevel=2)
    load(state_dict, storage_reader=storage_reader, process_group=process_group, no_dist=no_dist, planner=planner)
