"""parameters_to_vector / vector_to_parameters (PyTorch's semantics: one flat vector, differentiable)."""
from ...autograd.function import Function
from ...tensor.core import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param, old_param_device):
    if old_param_device is None:
        return param.device
    if param.device != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


class _Flatten(Function):
    @staticmethod
    def forward(ctx, *params):
        from ...tensor.factory import empty
        total = sum(p.numel() for p in params)
        vec = empty(total, dtype=params[0].dtype, device=params[0].device)
        off = 0
        for p in params:
            n = p.numel()
            if n:
                vec.narrow(0, off, n).copy_(p.reshape(-1))
            off += n
        ctx.shapes = [tuple(p.shape) for p in params]
        return vec

    @staticmethod
    def backward(ctx, g):
        out, off = [], 0
        for shape in ctx.shapes:
            n = 1
            for s in shape:
                n *= s
            out.append(g.narrow(0, off, n).contiguous().reshape(shape))
            off += n
        return tuple(out)


def parameters_to_vector(parameters):
    """One 1-D tensor of every parameter, flattened and concatenated (torch.cat of p.view(-1))."""
    params = list(parameters)
    device = None
    for p in params:
        device = _check_param_device(p, device)
    return _Flatten.apply(*params)


def vector_to_parameters(vec, parameters):
    """Copy slices of vec into the parameters (PyTorch assigns param.data = a view of vec)."""
    if not isinstance(vec, Tensor):
        from ..module import typename
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
