"""PyTorch's refusal to write into a tensor whose elements share memory (an expanded view: a stride 0 over a
dimension of size > 1): the result would depend on the order the elements are written in.

`assert_no_internal_overlap(t)` raises PyTorch's error; `guard_inplace_methods()` puts it in front of every in-place
Tensor method and rawdev.<op>_ function that writes values (fill_ and zero_ are exempt, as in PyTorch: writing
one value many times is well defined; so are the methods that only change a tensor's view or flags).
"""
import functools

from ..tensor.core import Tensor

__all__ = ["assert_no_internal_overlap", "has_internal_overlap", "guard_inplace_methods"]

MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
           "location. Please clone() the tensor before performing the operation.")

# in-place names that do not write values through the tensor's strides (or may, as fill_, write one value)
EXEMPT = frozenset({"fill_", "zero_", "fill_diagonal_", "detach_", "requires_grad_", "share_memory_", "squeeze_",
                    "unsqueeze_", "swapaxes_", "swapdims_", "t_", "transpose_", "as_strided_", "resize_",
                    "resize_as_", "set_", "apply_", "map_", "retain_grad_", "record_stream_"})


def has_internal_overlap(t):
    """True when two of t's elements are one memory location (a stride 0 over a dimension of size > 1)."""
    return any(st == 0 and n > 1 for n, st in zip(t._shape, t._strides))


def assert_no_internal_overlap(t):
    """Raise PyTorch's RuntimeError when writing into t would write one memory location more than once."""
    if isinstance(t, Tensor) and has_internal_overlap(t):
        raise RuntimeError(MESSAGE)


def _guarded(fn):
    @functools.wraps(fn)
    def write(self, *args, **kwargs):
        assert_no_internal_overlap(self)
        return fn(self, *args, **kwargs)
    write._overlap_guarded = True   # type: ignore[attr-defined]
    return write


def guard_inplace_methods(namespace=None):
    """Wrap Tensor's in-place methods (and a namespace's in-place functions, e.g. rawdev.relu_) with the check."""
    augmented = {f"__i{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
                                         "lshift", "rshift", "matmul")}   # x += y, ...
    for name in dir(Tensor):
        if (name.endswith("_") and not name.startswith("_") and name not in EXEMPT) or name in augmented:
            fn = getattr(Tensor, name)
            if callable(fn) and not getattr(fn, "_overlap_guarded", False):
                setattr(Tensor, name, _guarded(fn))
    for name, fn in list((namespace or {}).items()):
        if name.endswith("_") and not name.startswith("_") and name not in EXEMPT and callable(fn) \
                and not isinstance(fn, type) and not getattr(fn, "_overlap_guarded", False):
            namespace[name] = _guarded(fn)
