"""Where a distributed checkpoint goes: a directory holding `.metadata` (JSON) and one safetensors file per
writing rank (`__<rank>_0.distcp`), as PyTorch's FileSystemWriter lays it out (its files are pickles; rawdev's are
not, so neither reads the other's)."""
from __future__ import annotations

import os
from typing import Any

__all__ = ["FileSystemWriter", "FileSystemReader", "StorageWriter", "StorageReader"]


class StorageWriter:
    """The base of the writers `save` accepts; rawdev has one, FileSystemWriter."""
    path: str


class StorageReader:
    """The base of the readers `load` accepts; rawdev has one, FileSystemReader."""
    path: str


class FileSystemWriter(StorageWriter):
    """Writes a checkpoint into the directory `path` (created if missing).

    Args:
        path: the checkpoint directory.
        single_file_per_rank: accepted (rawdev always writes one file per writing rank).
        sync_files: fsync each file before the metadata names it (True, as PyTorch).
        thread_count, per_thread_copy_ahead, cache_staged_state_dict: accepted for PyTorch's signature.
        overwrite: replace an existing checkpoint in `path` (True); False refuses one.

    Example:
        >>> import rawdev.distributed.checkpoint as dcp
        >>> dcp.save({"w": rawdev.ones(2)}, storage_writer=dcp.FileSystemWriter("/tmp/ckpt"))  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str], single_file_per_rank: bool = True, sync_files: bool = True,
                 thread_count: int = 1, per_thread_copy_ahead: int = 10_000_000,
                 cache_staged_state_dict: bool = False, overwrite: bool = True, **kwargs: Any) -> None:
        self.path = os.fspath(path)
        self.sync_files, self.overwrite = bool(sync_files), bool(overwrite)
        self.single_file_per_rank, self.thread_count = single_file_per_rank, thread_count

    @property
    def checkpoint_id(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"FileSystemWriter({self.path!r})"


class FileSystemReader(StorageReader):
    """Reads a checkpoint that FileSystemWriter (or `save(checkpoint_id=...)`) wrote into `path`.

    Args:
        path: the checkpoint directory.
    """

    def __init__(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        self.path = os.fspath(path)

    @property
    def checkpoint_id(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"FileSystemReader({self.path!r})"
