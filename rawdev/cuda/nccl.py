"""`torch.cuda.nccl`: NCCL collectives between GPUs, which rawdev refuses (one process, one GPU, no NCCL)."""
from ..refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.cuda.nccl", "NCCL")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
