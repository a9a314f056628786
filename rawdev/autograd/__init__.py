"""rawdev.autograd: the tape. Ops record a Node per result (tensor.grad_fn); backward walks it.

    x.requires_grad_(); y = f(x); y.backward(); x.grad
    with rawdev.no_grad(): ...          # record nothing
    rawdev.autograd.grad(y, x, create_graph=True)   # a gradient that can be differentiated again
"""
from . import anomaly_mode, forward_ad, functional, graph  # noqa: F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .engine import backward, grad
from .function import AccumulateGrad, Function, FunctionCtx, Node, Variable, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["backward", "grad", "Function", "FunctionCtx", "Node", "AccumulateGrad", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "inference_mode", "is_inference_mode_enabled",
           "once_differentiable", "Variable", "detect_anomaly", "set_detect_anomaly", "functional", "graph",
           "gradcheck", "gradgradcheck", "GradcheckError", "forward_ad"]
