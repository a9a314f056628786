"""`torch.distributed.pipeline`: the Pipe API of PyTorch 1.8 – 2.3 (pipeline.sync.Pipe), a model split into
partitions on several devices and fed micro-batches (rawdev/distributed/pipeline/sync.py)."""
from . import sync

__all__ = ["sync"]
