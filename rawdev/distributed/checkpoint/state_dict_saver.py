"""`save`: a state_dict (models, optimizers, Stateful objects, nested dicts and lists, plain values) into a checkpoint
directory. Every rank of a data-parallel job calls it with its replica; the group's rank 0 writes the tensors once
(safetensors) and the rest as JSON, then every rank learns whether it succeeded, so all return or all raise."""
from __future__ import annotations

import os
import warnings
from typing import Any

from ... import distributed as dist
from ...serialization import save as _save_tensors
from ...tensor.core import Tensor
from ..objects import encode
from .default_planner import DefaultSavePlanner
from .metadata import METADATA_FILE, BytesStorageMetadata, Metadata, TensorStorageMetadata, flatten, key_path
from .storage import (
    DATA_FILE,
    CheckpointException,
    check_planner,
    checkpoint_dir,
    coordinator,
    group_rank,
    is_stateful,
    write_metadata,
)

__all__ = ["save", "save_state_dict"]


def _refuse_rank_local(t: Tensor, key: str) -> None:
    # FSDP's SHARDED/LOCAL state dicts hold a different piece on every rank as plain tensors; rank 0 writing its own
    # would silently drop the others' (rawdev's checkpoints hold replicas, and there is no DTensor to say otherwise)
    if t.__dict__.get("_rawdev_rank_local"):
        raise NotImplementedError(
            f"rawdev.distributed.checkpoint: {key!r} is one rank's shard (an FSDP SHARDED_STATE_DICT or "
            "LOCAL_STATE_DICT entry); rawdev's checkpoints hold what every rank has (rank 0 writes it), so take the "
            "model's state dict under StateDictType.FULL_STATE_DICT to save it")


def _plan(state_dict: Any) -> tuple[dict[str, Tensor], Metadata]:
    """The tensors to write and the metadata describing every flattened key."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"rawdev.distributed.checkpoint.save: state_dict must be a dict, got "
                        f"{type(state_dict).__name__}")
    resolved = {k: (v.state_dict() if is_stateful(v) else v) for k, v in state_dict.items()}
    tensors: dict[str, Tensor] = {}
    entries: dict[str, TensorStorageMetadata | BytesStorageMetadata] = {}
    values: dict[str, str] = {}
    paths: dict[str, tuple[Any, ...]] = {}
    for path, leaf in flatten(resolved):
        if not path:
            continue
        key = key_path(path)
        if key in paths:
            raise ValueError(f"rawdev.distributed.checkpoint.save: two entries flatten to the key {key!r} "
                             f"({paths[key]!r} and {path!r}); rename one")
        paths[key] = path
        if isinstance(leaf, Tensor):
            _refuse_rank_local(leaf, key)
            tensors[key] = leaf.detach()
            entries[key] = TensorStorageMetadata(str(leaf.dtype).replace("rawdev.", ""), tuple(leaf.shape), DATA_FILE)
        else:
            try:
                values[key] = encode(leaf).decode()
            except TypeError as e:
                raise TypeError(f"rawdev.distributed.checkpoint.save: the value at {key!r} cannot be saved: "
                                f"{str(e).split(': ', 1)[-1]}") from None
            entries[key] = BytesStorageMetadata()
    return tensors, Metadata(entries, planner_data=paths, storage_data=values)


def save(state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike[str] | None = None,
         storage_writer: Any = None, planner: Any = None, process_group: Any = None,
         no_dist: bool = False) -> Metadata:
    """Save a state_dict into a checkpoint directory, as `torch.distributed.checkpoint.save`.

    Values that are Stateful (have state_dict/load_state_dict: models, optimizers, your own objects) are saved as
    their state_dict(). Nested dicts and lists are flattened under dotted keys. Tensors go into one safetensors file,
    written by the group's rank 0 (every rank holds the same replica in data-parallel training); plain values
    (numbers, strings, lists of them, numpy arrays) go into `.metadata` as JSON; nothing is pickled. The metadata
    is written last, atomically: a save that dies part way leaves no `.metadata`, so it never loads half-written.

    Args:
        state_dict: the dict to save.
        checkpoint_id: the checkpoint directory (created if missing).
        storage_writer: a FileSystemWriter, instead of checkpoint_id.
        planner: None or a DefaultSavePlanner.
        process_group: the group whose ranks save together (the default group).
        no_dist: save from this process alone, even in a distributed job.

    Returns:
        The checkpoint's Metadata.

    Example:
        >>> import rawdev.distributed.checkpoint as dcp
        >>> model = rawdev.nn.Linear(4, 2)
        >>> dcp.save({"model": model, "epoch": 3}, checkpoint_id="/tmp/run1")  # doctest: +SKIP
    """
    check_planner(planner, DefaultSavePlanner)
    path = checkpoint_dir(checkpoint_id, storage_writer, "storage_writer")
    use_dist, rank = group_rank(process_group, no_dist)
    tensors, md = _plan(state_dict)
    error = None
    if rank == 0:
        try:
            os.makedirs(path, exist_ok=True)
            meta_file = os.path.join(path, METADATA_FILE)
            if storage_writer is not None and not getattr(storage_writer, "overwrite", True) \
                    and os.path.exists(meta_file):
                raise CheckpointException(f"rawdev.distributed.checkpoint.save: {path!r} already holds a checkpoint "
                                          f"and the writer was made with overwrite=False")
            if os.path.exists(meta_file):   # the old checkpoint stops being loadable before its data is replaced
                os.unlink(meta_file)
            _save_tensors(tensors, os.path.join(path, DATA_FILE))
            write_metadata(path, md)
        except Exception as e:
            if not use_dist:
                raise
            error = f"{type(e).__name__}: {e}"
    if use_dist:   # every rank learns the writer's outcome (and waits for it: the checkpoint is complete after)
        box = [error]
        dist.broadcast_object_list(box, src=coordinator(process_group), group=process_group)
        if box[0] is not None:
            raise CheckpointException(f"rawdev.distributed.checkpoint.save: rank 0 of the group could not write "
                                      f"{path!r}: {box[0]}")
    return md


def save_state_dict(state_dict: dict[str, Any], storage_writer: Any, process_group: Any = None,
                    coordinator_rank: int = 0, no_dist: bool = False, planner: Any = None) -> Metadata:
    """The former name of `save` (deprecated in PyTorch, kept working)."""
    warnings.warn("'save_state_dict' is deprecated and will be removed in future versions. Please use 'save' instead.",
                  FutureWarning, stacklevel=2)
    return save(state_dict, storage_writer=storage_writer, process_group=process_group, no_dist=no_dist,
                planner=planner)
