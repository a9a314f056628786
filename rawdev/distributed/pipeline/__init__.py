"""`torch.distributed.pipeline`: the old Pipe API (pipeline.sync.Pipe, removed in PyTorch 2.4), which rawdev refuses
as it does torch.distributed.pipelining: see rawdev.refusals."""
from ...refusals import refusing_getattr

WHY = ("rawdev's distributed training is data parallel (each rank holds the whole model); Pipe splits a model "
       "across several GPUs")
__getattr__ = refusing_getattr("torch.distributed.pipeline", "pipeline parallelism (Pipe)", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
