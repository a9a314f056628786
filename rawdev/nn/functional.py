"""rawdev.nn.functional: PyTorch's functional API — the ops declared for it in rawdev.ops."""
from typing import TYPE_CHECKING, Any

from ..ops.loss import _reduction  # noqa: F401  (the loss modules' legacy size_average/reduce handling)
from ..ops.registry import names as _names

globals().update(_names("functional"))

if TYPE_CHECKING:
    # the declared ops are put in this namespace at import (rawdev.ops.registry): Any to a type checker
    def __getattr__(name: str) -> Any: ...


def identity(input):  # noqa: A002
    return input


__all__ = sorted(_names("functional")) + ["identity"]
