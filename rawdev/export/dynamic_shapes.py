"""`torch.export.Dim` and the older `dynamic_dim` constraints: which input dimensions an exported program accepts
at other sizes, and in what range."""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["Dim", "dims", "dynamic_dim", "Constraint", "ShapesCollection"]

_INT_OO = sys.maxsize   # PyTorch's int_oo: no upper bound


class Dim:
    """A named dynamic dimension, with an inclusive range ``[min, max]``.

    Args:
        name: the dimension's name (shown in errors and in ``range_constraints``).
        min: the smallest size accepted (default 0; PyTorch specializes sizes 0 and 1 of example inputs).
        max: the largest size accepted (default unbounded).

    Example:
        >>> batch = torch.export.Dim("batch", min=2, max=64)
        >>> ep = torch.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
    """

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
        lo = 0 if min is None else int(min)
        hi = _INT_OO if max is None else int(max)
        if hi < lo:
            raise ValueError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__, self.min, self.max = name, lo, hi

    def __repr__(self) -> str:
        if self.min == 0 and self.max == _INT_OO:
            return f"Dim('{self.__name__}')"
        hi = "int_oo" if self.max == _INT_OO else self.max
        return f"Dim('{self.__name__}', min={self.min}, max={hi})"


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple[Dim, ...]:  # noqa: A002
    """Several Dims sharing one range: ``batch, seq = dims("batch", "seq", max=512)``."""
    return tuple(Dim(n, min=min, max=max) for n in names)


class Constraint:
    """``dynamic_dim(x, i)`` and its comparisons (``dynamic_dim(x, 0) >= 2``): the pre-Dim way of marking a
    dimension dynamic, passed to ``export(..., constraints=[...])``."""

    def __init__(self, tensor: Any, index: int, lo: int = 0, hi: int = _INT_OO) -> None:
        self.tensor, self.index, self.min, self.max = tensor, int(index), lo, hi

    def __ge__(self, n: int) -> Constraint:
        return Constraint(self.tensor, self.index, max(self.min, int(n)), self.max)

    def __gt__(self, n: int) -> Constraint:
        return self >= int(n) + 1

    def __le__(self, n: int) -> Constraint:
        return Constraint(self.tensor, self.index, self.min, min(self.max, int(n)))

    def __lt__(self, n: int) -> Constraint:
        return self <= int(n) - 1

    def __repr__(self) -> str:
        return f"dynamic_dim(<tensor>, {self.index}) in [{self.min}, {self.max}]"


def dynamic_dim(t: Any, index: int) -> Constraint:
    """Mark dimension ``index`` of example input ``t`` dynamic (torch.export's API before Dim).

    Args:
        t: an example input tensor.
        index: the dimension.

    Returns:
        A Constraint; compare it with ints to bound the range.
    """
    if not 0 <= index < t.ndim:
        raise IndexError(f"Expected the dimension passed to dynamic_dim to be in the range [0:{t.ndim - 1}] but got "
                         f"{index}, which is out of bounds for the given tensor.")
    return Constraint(t, index)


class ShapesCollection:
    """Dynamic shapes given per tensor object instead of by argument name: ``sc[x] = {0: batch}``;
    ``sc.dynamic_shapes(model, args)`` gives what export takes."""

    def __init__(self) -> None:
        self._shapes: dict[int, Any] = {}

    def __setitem__(self, t: Any, spec: Any) -> None:
        self._shapes[id(t)] = spec

    def __getitem__(self, t: Any) -> Any:
        return self._shapes.setdefault(id(t), {})

    def dynamic_shapes(self, m: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> Any:
        def spec(a: Any) -> Any:
            if isinstance(a, (tuple, list)):
                return type(a)(spec(x) for x in a)
            if isinstance(a, dict):
                return {k: spec(v) for k, v in a.items()}
            return self._shapes.get(id(a))
        out = spec(tuple(args))
        if kwargs:
            return {**dict(enumerate(out)), **{k: spec(v) for k, v in kwargs.items()}}
        return out
