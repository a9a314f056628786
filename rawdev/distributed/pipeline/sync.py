"""`torch.distributed.pipeline.sync`: Pipe, refused (see rawdev.distributed.pipeline)."""
from ...refusals import refusing_getattr
from . import WHY

__getattr__ = refusing_getattr("torch.distributed.pipeline.sync", "pipeline parallelism (Pipe)", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
