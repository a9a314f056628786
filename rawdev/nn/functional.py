"""rawdev.nn.functional: PyTorch's functional API — the ops declared for it in rawdev.ops."""
from ..ops.loss import _reduction  # noqa: F401  (the loss modules' legacy size_average/reduce handling)
from ..ops.registry import names as _names

globals().update(_names("functional"))


def identity(input):  # noqa: A002
    return input


__all__ = sorted(_names("functional")) + ["identity"]
