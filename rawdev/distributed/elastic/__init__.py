"""`torch.distributed.elastic`: torchelastic (restarts, elastic membership), which rawdev refuses: see
rawdev.refusals. `rawdev run` starts a fixed set of ranks. The one name torchrun scripts import from it,
`elastic.multiprocessing.errors.record`, works (rawdev.distributed.elastic.multiprocessing.errors)."""
from ...refusals import refusing_getattr

__getattr__ = refusing_getattr("torch.distributed.elastic", "torchelastic")
__rawdev_refused__ = __getattr__("_").__rawdev_refused__   # the scan reports this module as refused
