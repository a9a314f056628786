"""`torch.nested`: nested (jagged) tensors, a list of tensors of different shapes as one tensor, which rawdev
refuses: its tensors are strided, one shape each. Pad to one shape (nn.utils.rnn.pad_sequence) instead."""
from .refusals import refusing_getattr

_WHY = "rawdev tensors are strided with one shape each; pad the sequences (rawdev.nn.utils.rnn.pad_sequence) instead"
__getattr__ = refusing_getattr("torch.nested", "nested tensors (torch.nested)", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
