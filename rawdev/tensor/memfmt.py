"""Memory formats (torch.memory_format): contiguous_format, channels_last, channels_last_3d, preserve_format.

rawdev's kernels read any strides, so a format is a layout only: `to`/`contiguous`/`clone` with
channels_last give a real NHWC-ordered tensor (strides (H*W*C, 1, W*C, C)) with the same shape, as PyTorch.
"""
from . import layout as _layout

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format", "layout",
           "strided", "sparse_coo"]


class _Named:
    """A singleton named like PyTorch's (repr rawdev.<name>; copy and pickle give the module's own object)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "rawdev." + self.name

    def __reduce__(self):
        return self.name


class memory_format(_Named):  # noqa: N801  (PyTorch's name)
    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")



class layout(_Named):  # noqa: N801  (PyTorch's name)
    """torch.layout: every rawdev tensor is strided (dense); sparse_coo exists as a name for checks like
    `x.layout == torch.sparse_coo`."""
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")

# the dimension order, outermost first, that each channels-last format lays out
_ORDER = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


def check(fmt, ndim):
    """Raise PyTorch's error for a format that does not fit the rank; None/contiguous/preserve are fine."""
    if fmt is None or fmt in (contiguous_format, preserve_format):
        return
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be rawdev.memory_format, not {type(fmt).__name__}")
    need = len(_ORDER[fmt])
    if ndim != need:
        raise RuntimeError(f"required rank {need} tensor to use {fmt.name} format")


def strides_for(shape, fmt):
    """The strides of a dense tensor of `shape` laid out in `fmt`."""
    order = _ORDER.get(fmt)
    if order is None:
        return tuple(_layout.contiguous_strides(shape))
    strides, acc = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def is_in_format(shape, strides, fmt):
    """Tensor.is_contiguous(memory_format=fmt): dense in that order (size-1 axes' strides do not matter)."""
    if fmt is None or fmt in (contiguous_format, preserve_format):
        return _layout.is_contiguous(shape, strides)
    if len(shape) != len(_ORDER[fmt]):
        return False
    want = strides_for(shape, fmt)
    return all(s == 1 or a == b for s, a, b in zip(shape, strides, want))
