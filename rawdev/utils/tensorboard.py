"""`torch.utils.tensorboard`: SummaryWriter, which rawdev refuses: it needs the tensorboard package and its
protobuf event-file writer, which rawdev does not depend on. Log scalars with print or a CSV instead."""
from ..refusals import refusing_getattr

_WHY = "it needs the tensorboard package's event-file writer, which rawdev does not depend on"
__getattr__ = refusing_getattr("torch.utils.tensorboard", "torch.utils.tensorboard (SummaryWriter)", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
