"""`torch.distributed.checkpoint` (DCP): save and load the state of a training job — models, optimizers, your own
Stateful objects, nested dicts — as a checkpoint directory, from every rank of a data-parallel job at once, and load
it back in place (a model's parameters stay the same objects). The format is rawdev's own: tensors in one
safetensors file written by the group's rank 0, everything else as JSON in `.metadata`; nothing is pickled, and
PyTorch's DCP directories (whose metadata is a pickle) are refused with a message. See docs/INTERNALS.md,
"Distributed checkpoints".

Example:
    >>> import rawdev.distributed.checkpoint as dcp
    >>> from rawdev.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    >>> msd, osd = get_state_dict(model, optimizer)
    >>> dcp.save({"model": msd, "optim": osd}, checkpoint_id="ckpt")  # doctest: +SKIP
"""
from . import state_dict  # noqa: F401
from .default_planner import DefaultLoadPlanner, DefaultSavePlanner, LoadPlanner, SavePlanner
from .filesystem import FileSystemReader, FileSystemWriter, StorageReader, StorageWriter
from .metadata import BytesStorageMetadata, Metadata, TensorStorageMetadata
from .state_dict_loader import load, load_state_dict
from .state_dict_saver import save, save_state_dict
from .stateful import Stateful
from .storage import CheckpointException

__all__ = ["save", "load", "save_state_dict", "load_state_dict", "FileSystemWriter", "FileSystemReader",
           "StorageWriter", "StorageReader", "DefaultSavePlanner", "DefaultLoadPlanner", "SavePlanner", "LoadPlanner",
           "Metadata", "TensorStorageMetadata", "BytesStorageMetadata", "Stateful", "CheckpointException"]
