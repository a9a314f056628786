"""The pieces `save` and `load` share: which directory, which rank writes, and the `.metadata` file as JSON."""
from __future__ import annotations

import json
import os
from typing import Any

from ... import distributed as dist
from ...tensor.core import Tensor
from ...utils.atomic_file import write_atomically
from .metadata import FORMAT, METADATA_FILE, BytesStorageMetadata, Metadata, TensorStorageMetadata
from .stateful import Stateful

__all__ = ["CheckpointException", "checkpoint_dir", "group_rank", "coordinator", "is_stateful", "read_metadata",
           "write_metadata", "check_planner", "DATA_FILE", "MAX_METADATA_BYTES"]

DATA_FILE = "__0_0.distcp"   # the lowest rank's file: replicated tensors are written once, by it
MAX_METADATA_BYTES = 1 << 30


class CheckpointException(RuntimeError):
    """A distributed checkpoint could not be saved or loaded (its message says which file and why)."""


def checkpoint_dir(checkpoint_id: Any, storage: Any, what: str) -> str:
    if storage is not None:
        return os.fspath(storage.path)
    if checkpoint_id is None:
        raise RuntimeError(f"`checkpoint_id` must be specified if {what} is None.")
    return os.fspath(checkpoint_id)


def group_rank(process_group: Any, no_dist: bool) -> tuple[bool, int]:
    """(whether the ranks take part, this rank within the group)."""
    use = not no_dist and dist.is_initialized() and dist.get_world_size(process_group) > 1
    return use, dist.get_rank(process_group) if use else 0


def coordinator(process_group: Any) -> int:
    """The global rank of the group's rank 0, which writes the checkpoint."""
    return 0 if process_group is None else dist.get_global_rank(process_group, 0)


def is_stateful(v: Any) -> bool:
    return not isinstance(v, Tensor) and isinstance(v, Stateful)


def check_planner(planner: Any, default: type) -> Any:
    if planner is None:
        return default()
    if type(planner) is not default:
        raise NotImplementedError(
            f"rawdev.distributed.checkpoint runs its own plan (the lowest rank writes each replicated tensor once; "
            f"every rank reads what its state_dict asks for): a planner of type {type(planner).__qualname__} is not "
            f"supported, only {default.__name__} with its options")
    return planner


def write_metadata(path: str, md: Metadata) -> None:
    """`.metadata` as JSON, written atomically (a temporary, fsynced, renamed over the old one)."""
    doc = {"format": FORMAT,
           "entries": {k: dict({"tensor": {"dtype": v.dtype, "size": list(v.size), "file": v.file}}
                                if isinstance(v, TensorStorageMetadata) else {"value": md.storage_data[k]},
                                path=[p if isinstance(p, (str, int)) else str(p) for p in md.planner_data[k]])
                       for k, v in md.state_dict_metadata.items()}}
    text = json.dumps(doc, ensure_ascii=True).encode()
    write_atomically(os.path.join(path, METADATA_FILE), lambda fh: fh.write(text))


def read_metadata(path: str) -> Metadata:
    """The Metadata of the checkpoint in `path`; CheckpointException when there is none or it is not rawdev's."""
    name = os.path.join(path, METADATA_FILE)
    if not os.path.isdir(path):
        raise CheckpointException(f"rawdev.distributed.checkpoint.load: {path!r} is not a checkpoint directory")
    if not os.path.isfile(name):
        raise CheckpointException(f"rawdev.distributed.checkpoint.load: no checkpoint in {path!r}: {METADATA_FILE} "
                                  f"is missing (nothing was saved there, or a save did not finish)")
    with open(name, "rb") as fh:
        raw = fh.read(MAX_METADATA_BYTES + 1)
    if raw[:1] == b"\x80":
        raise CheckpointException(f"rawdev.distributed.checkpoint.load: {name!r} was written by PyTorch's "
                                  f"torch.distributed.checkpoint: its metadata is a pickle, which rawdev never reads "
                                  f"(load it with PyTorch and save a state_dict with rawdev.save-compatible "
                                  f"safetensors instead)")
    try:
        doc = json.loads(raw[:MAX_METADATA_BYTES].decode())
        if doc.get("format") != FORMAT:
            raise ValueError(f"format {doc.get('format')!r}, expected {FORMAT!r}")
        entries: dict[str, TensorStorageMetadata | BytesStorageMetadata] = {}
        values, paths = {}, {}
        for k, e in doc["entries"].items():
            paths[k] = tuple(p if isinstance(p, (str, int)) else str(p) for p in e.get("path", k.split(".")))
            if "tensor" in e:
                t = e["tensor"]
                entries[k] = TensorStorageMetadata(str(t["dtype"]), tuple(int(n) for n in t["size"]),
                                                   os.path.basename(str(t["file"])))
            else:
                entries[k] = BytesStorageMetadata()
                values[k] = str(e["value"])
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise CheckpointException(f"rawdev.distributed.checkpoint.load: {name!r} is not a readable rawdev checkpoint "
                                  f"metadata file ({type(e).__name__}: {e})") from None
    return Metadata(entries, planner_data=paths, storage_data=values)

