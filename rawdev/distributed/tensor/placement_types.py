"""DTensor placements: how a global tensor lies on one mesh dimension — Shard(dim) (split into contiguous chunks
along dim, torch.chunk's sizes), Replicate() (a full copy on every rank) or Partial(reduce_op) (every rank holds a
term; the value is their reduction)."""
from __future__ import annotations

__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    """The base class of placements (is_shard / is_replicate / is_partial ask which kind it is)."""

    def is_shard(self, dim: int | None = None) -> bool:
        """Whether this is a Shard (on `dim`, when given)."""
        return isinstance(self, Shard) and (dim is None or self.dim == dim)

    def is_replicate(self) -> bool:
        """Whether this is Replicate()."""
        return isinstance(self, Replicate)

    def is_partial(self, reduce_op: str | None = None) -> bool:
        """Whether this is a Partial (with `reduce_op`, when given)."""
        return isinstance(self, Partial) and (reduce_op is None or self.reduce_op == reduce_op)


class Shard(Placement):
    """Shard(dim): the tensor is split along `dim` into as many chunks as the mesh dimension has ranks.

    Args:
        dim: the tensor dimension that is split.

    Example:
        >>> Shard(0)
        Shard(dim=0)
    """

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shard) and self.dim == other.dim

    def __hash__(self) -> int:
        return hash(("Shard", self.dim))

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"

    def __str__(self) -> str:
        return f"S({self.dim})"


class Replicate(Placement):
    """Replicate(): every rank of the mesh dimension holds the whole tensor.

    Example:
        >>> Replicate()
        Replicate()
    """

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Replicate)

    def __hash__(self) -> int:
        return hash("Replicate")

    def __repr__(self) -> str:
        return "Replicate()"

    def __str__(self) -> str:
        return "R"


class Partial(Placement):
    """Partial(reduce_op="sum"): every rank holds a term; the tensor's value is their reduction.

    Args:
        reduce_op: "sum", "avg", "max" or "min".

    Example:
        >>> Partial()
        Partial(sum)
    """

    def __init__(self, reduce_op: str = "sum") -> None:
        if reduce_op not in ("sum", "avg", "max", "min"):
            raise ValueError(f"Partial: reduce_op must be 'sum', 'avg', 'max' or 'min', not {reduce_op!r}")
        self.reduce_op = reduce_op

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Partial) and self.reduce_op == other.reduce_op

    def __hash__(self) -> int:
        return hash(("Partial", self.reduce_op))

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"

    def __str__(self) -> str:
        return "P"
