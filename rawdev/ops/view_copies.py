"""The copying forms of the views, composed from declared ops: narrow_copy, expand_copy and the <view>_copy
functions (permute_copy, view_copy, transpose_copy, ...: the view, then a contiguous copy), and ravel."""
from .registry import declare


def ravel(input):  # noqa: A002
    """input flattened to 1-D (a view when it is contiguous)."""
    return input.reshape(-1)


def narrow_copy(input, dim, start, length):  # noqa: A002
    """A copy of input.narrow(dim, start, length)."""
    return input.narrow(dim, start, length).clone()


def _view_copy(view_name):
    """torch.<view>_copy: the view's values as a new tensor (its own memory), as PyTorch's *_copy ops."""
    def copy(input, *args, **kwargs):  # noqa: A002
        return getattr(input, view_name)(*args, **kwargs).clone()
    copy.__name__ = f"{view_name}_copy"
    copy.__doc__ = f"A copy of input.{view_name}(...): a new tensor that shares no memory with input."
    return copy


def expand_copy(input, size, *, implicit=False):  # noqa: A002
    """A copy of input.expand(size): every repeated element is its own memory location (writable)."""
    return input.expand(size).clone()


declare("ravel", ravel, family="view_copies")
declare("narrow_copy", narrow_copy, family="view_copies")
declare("expand_copy", expand_copy, family="view_copies", method=False)
for _name in ("permute", "view", "transpose", "t", "squeeze", "unsqueeze", "diagonal", "select", "as_strided",
              "unfold", "detach", "alias", "unbind", "split", "split_with_sizes"):
    if _name not in ("alias", "unbind", "split", "split_with_sizes"):
        declare(f"{_name}_copy", _view_copy(_name), family="view_copies", method=False)
