"""rawdev.autograd: the tape. Ops record a Node per result (tensor.grad_fn); backward walks it.

    x.requires_grad_(); y = f(x); y.backward(); x.grad
    with rawdev.no_grad(): ...          # record nothing
"""
from .engine import backward, grad
from .function import AccumulateGrad, Function, FunctionCtx, Node, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "Function", "FunctionCtx", "Node", "AccumulateGrad", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "inference_mode", "once_differentiable"]
