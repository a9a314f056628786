"""`torch._logging`: the log switches of TorchDynamo, Inductor and dynamic shapes (set_logs), which rawdev refuses
with the compiler they configure: rawdev has no such components, so there is nothing to log."""
from .refusals import refusing_getattr

_WHY = ("rawdev runs Python eagerly and has no graph compiler (no TorchDynamo, no Inductor), so nothing of theirs "
        "to log; rawdev's own messages go through Python's logging and warnings")
__getattr__ = refusing_getattr("torch._logging", "compiler logging (torch._logging)", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
