"""`torch._custom_op.impl.custom_op(qualname)`: the earlier spelling of torch.library.custom_op — decorate a stub
with annotations, then ``@op.impl("cpu")`` the kernels and ``@op.impl_abstract()`` the shape function."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..library.custom_ops import CustomOpDef
from ..library.custom_ops import custom_op as _custom_op

__all__ = ["custom_op", "CustomOp"]

CustomOp = CustomOpDef


def custom_op(qualname: str, manual_schema: str | None = None) -> Callable[[Callable[..., Any]], CustomOpDef]:
    """Declare an op from a stub function (its body is not a kernel).

    Args:
        qualname: "namespace::name".
        manual_schema: the schema text; inferred from the stub's annotations when None.

    Returns:
        A decorator making a CustomOp, whose kernels come from ``.impl(device_types)``.
    """
    def make(stub: Callable[..., Any]) -> CustomOpDef:
        op = _custom_op(qualname, stub, mutates_args=(), device_types=(), schema=manual_schema)
        return op
    return make
