"""`torch.cuda.nccl`: the NCCL library rawdev's distributed backend uses (rawdev/distributed/nccl.py, from the
`distributed` extra): ``version()``, ``unique_id()``, ``is_available(tensors)``. The single-process multi-GPU
collectives of this module (``all_reduce(inputs)`` over a list of tensors on several GPUs) are refused: rawdev
runs NCCL collectives one rank per process, through rawdev.distributed's process groups."""
from __future__ import annotations

from typing import Any

from ..distributed import nccl as _nccl
from ..refusals import Refused

__all__ = ["version", "unique_id", "is_available"]

SUM, PROD, MAX, MIN = 0, 1, 2, 3


def version() -> tuple[int, int, int]:
    """The NCCL library's version as (major, minor, patch).

    Raises:
        RuntimeError: NCCL is not installed (`pip install 'rawdev[distributed]'`).
    """
    try:
        return _nccl.version()
    except _nccl.NcclUnavailable as e:
        raise RuntimeError(f"torch.cuda.nccl.version: {e}") from None


def unique_id() -> bytes:
    """A fresh ncclUniqueId, as bytes."""
    return _nccl.unique_id()


def is_available(tensors: Any) -> bool:
    """Whether NCCL can run a collective over these tensors: the library loads and each is a dense contiguous
    cuda tensor."""
    try:
        _nccl.load()
    except _nccl.NcclUnavailable:
        return False
    return all(t.is_cuda and t.is_contiguous() for t in tensors)


_ONE_RANK = ("rawdev runs NCCL with one rank per process (rawdev.distributed's process groups with the nccl "
             "backend, under `rawdev run`), not over several GPUs from one process")
all_reduce = Refused("torch.cuda.nccl.all_reduce", "single-process multi-GPU NCCL collectives", _ONE_RANK)
reduce = Refused("torch.cuda.nccl.reduce", "single-process multi-GPU NCCL collectives", _ONE_RANK)
broadcast = Refused("torch.cuda.nccl.broadcast", "single-process multi-GPU NCCL collectives", _ONE_RANK)
all_gather = Refused("torch.cuda.nccl.all_gather", "single-process multi-GPU NCCL collectives", _ONE_RANK)
reduce_scatter = Refused("torch.cuda.nccl.reduce_scatter", "single-process multi-GPU NCCL collectives", _ONE_RANK)
init_rank = Refused("torch.cuda.nccl.init_rank", "single-process multi-GPU NCCL collectives", _ONE_RANK)
