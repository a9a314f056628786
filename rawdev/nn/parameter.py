"""nn.Parameter: a Tensor that a Module registers as a parameter; requires_grad=True by default."""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..tensor.core import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """Parameter(data=None, requires_grad=True): shares data's storage (no copy), like PyTorch."""

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        # a tensor type with its own parameter form (DTensor, whose parameter keeps its placements) makes it
        as_param = getattr(type(data), "_as_parameter", None)
        if as_param is not None and cls is Parameter:
            return as_param(data, requires_grad)
        return super().__new__(cls)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = Tensor._make_cpu(np.empty((0,), np.float32), _dt.float32)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        self._assign(data)
        self._vc, self._base = data._vc, None
        self._requires_grad, self._grad, self.grad_fn = False, None, None
        self.requires_grad = requires_grad

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class Buffer(Tensor):
    """nn.Buffer(data, persistent=True): marks a tensor to be registered as a buffer when assigned."""

    __slots__ = ()

    def __init__(self, data: Tensor, *, persistent: bool = True) -> None:
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): data must be a Tensor, not {type(data).__name__}")
        self._assign(data)
        self._vc, self._base = data._vc, None
        self._requires_grad, self._grad, self.grad_fn = data.requires_grad, None, None
        self.__dict__["persistent"] = persistent
