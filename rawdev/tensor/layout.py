"""View arithmetic on (sizes, strides, storage offset), in elements: pure functions, no storage.

These are PyTorch's rules: contiguous strides (a size-0 or size-1 axis still gets the stride the
next axis would), contiguity that ignores size-1 axes, and `view`'s stride computation, which keeps
a view whenever the new shape only splits or merges axes that are contiguous with each other.
"""

__all__ = ["contiguous_strides", "is_contiguous", "span", "view_strides", "numel"]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


_STRIDES: dict = {}   # shape -> its contiguous strides: every new tensor asks, and few shapes recur


def contiguous_strides(shape):
    """Row-major strides of shape: (3, 1) for (2, 3); size-0/1 axes count as size 1."""
    try:
        hit = _STRIDES.get(shape)
    except TypeError:   # a list
        return _contiguous_strides(shape)
    if hit is None:
        if len(_STRIDES) > 4096:
            _STRIDES.clear()
        _STRIDES[shape] = hit = _contiguous_strides(shape)
    return hit


def _contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(tuple(shape)):
        strides.append(acc)
        acc *= max(int(d), 1)   # ints whatever the shape held (numpy integers hash alike: one cache entry)
    return tuple(reversed(strides))


def is_contiguous(shape, strides):
    """PyTorch's is_contiguous(): row-major, ignoring the strides of size-1 axes; empty tensors are."""
    try:
        if _STRIDES.get(shape) is strides:   # the strides a new tensor was made with (the cached tuple itself)
            return True
    except TypeError:   # a list
        pass
    expected = 1
    for d, s in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if d == 0:
            return True
        if d != 1:
            if s != expected:
                return False
            expected *= d
    return True


def span(shape, strides):
    """How many storage elements a layout touches from its first element: 1 + Σ (size-1)·stride (0 if empty)."""
    if numel(shape) == 0:
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides))


def view_strides(old_shape, old_strides, new_shape):
    """Strides for viewing (old_shape, old_strides) as new_shape without a copy, or None when impossible
    (ATen's computeStride: every run of old axes that is contiguous in itself may be split or merged)."""
    old_shape, old_strides, new_shape = tuple(old_shape), tuple(old_strides), tuple(new_shape)
    if not old_shape:
        return (1,) * len(new_shape)
    if numel(old_shape) == 0:
        return old_strides if old_shape == new_shape else contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = old_strides[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)
