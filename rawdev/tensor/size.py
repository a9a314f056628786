"""rawdev.Size: a tuple of ints that prints like torch.Size (error messages quote it)."""

import math


class Size(tuple):
    __slots__ = ()

    def __new__(cls, dims=()):
        if type(dims) is Size and cls is Size:   # immutable and already ints: the same object will do
            return dims
        return super().__new__(cls, map(int, dims))

    def __repr__(self):
        return f"rawdev.Size([{', '.join(str(d) for d in self)}])"

    __str__ = __repr__

    def numel(self):
        return math.prod(self)

    def __getitem__(self, i):
        r = super().__getitem__(i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        if not isinstance(n, int):
            return NotImplemented
        return Size(tuple(self) * n)

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


def parse_size(args, what="size"):
    """(2, 3) / ((2, 3),) / ([2, 3],) / (Size,) -> Size, as PyTorch's *size arguments accept."""
    if len(args) == 1 and not isinstance(args[0], int):
        args = args[0]
    try:
        dims = [int(_index(d)) for d in args]
    except TypeError:
        raise TypeError(f"{what} must be a tuple of ints, but got {args!r}") from None
    for d in dims:
        if d < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {d}: {dims}")
    return Size(dims)


def _index(d):
    import operator
    if isinstance(d, bool):
        raise TypeError
    return operator.index(d)
