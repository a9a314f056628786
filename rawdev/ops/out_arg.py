"""The `out=` argument of torch functions (torch.matmul(a, b, out=c), torch.mul(a, b, out=c)): the result written
into `out`, with PyTorch's rules: no autograd through an out= call, the result's dtype must cast to out's,
devices must match, and an out of another shape is resized (with PyTorch's deprecation warning when it held
elements). Same-shape writes go into out's own storage, so views of it see them."""
import warnings

from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..tensor.core import Tensor
from .dtype_queries import can_cast


def _scalar_name(dt):
    """PyTorch's scalar type name in its messages: Float, Long, Half ("FloatTensor" without "Tensor")."""
    legacy = getattr(dt, "_legacy", None) or str(dt).split(".")[-1]
    return legacy[:-len("Tensor")] if legacy.endswith("Tensor") else legacy


def write_out(name, result, out, *inputs):
    """Write `result` (what `name` computed from `inputs`) into `out` and return `out`.

    Args:
        name: the torch function's name, for the errors ("matmul").
        result: the computed tensor.
        out: the tensor the caller passed as out=.
        inputs: the function's inputs (any requiring grad refuses the out= call, as in PyTorch).

    Returns:
        out, holding the result.

    Example:
        >>> c = rawdev.empty(2, 2)
        >>> rawdev.matmul(a, b, out=c) is c
        True
    """
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if is_grad_enabled() and (out.requires_grad or any(isinstance(t, Tensor) and t.requires_grad for t in inputs)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got {out.device} instead")
    if not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {_scalar_name(result.dtype)} can't be cast to the desired output type "
                           f"{_scalar_name(out.dtype)}")
    with no_grad():
        if tuple(out.shape) == tuple(result.shape):
            out.copy_(result)
            return out
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=3)
        out._assign(result.to(out.dtype).contiguous().clone())
    return out
