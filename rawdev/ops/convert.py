"""Tensor.to(device, dtype): a move (rawdev.tensor.moves) or, on one cuda device, one cast kernel; inside the
graph the copy is differentiable (ToCopyBackward0: the gradient goes back to the source device and dtype)."""
from ..autograd.function import Function

__all__ = ["convert", "to_copy"]


def convert(x, device, dtype, non_blocking=False):
    """x's values on device in dtype (a new tensor; no graph)."""
    from ..tensor import moves
    if x.is_cuda and x.device == device:
        from . import cuda
        from .dispatch import cuda_backend
        if cuda.can_cast(x.dtype, dtype):   # a dtype change on the device: one cast kernel
            return cuda_backend.cast(x, dtype)   # the backend holds x's storage until the kernel is queued
    return moves.transfer_tensor(x, device, dtype, non_blocking=non_blocking)


class _ToCopy(Function):
    node_name = "ToCopyBackward0"
    differentiable_backward = True    # g.to(...) is this op again

    @staticmethod
    def forward(ctx, x, device, dtype, non_blocking):
        ctx.src = (x.device, x.dtype)
        return convert(x, device, dtype, non_blocking)

    @staticmethod
    def backward(ctx, g):
        device, dtype = ctx.src
        return g.to(device, dtype), None, None, None


def to_copy(x, device, dtype, non_blocking=False):
    return _ToCopy.apply(x, device, dtype, non_blocking)
