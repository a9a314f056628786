from .optimizer import Optimizer, required

__all__ = ["SGD"]


class SGD(Optimizer):
    """PyTorch's SGD: weight decay, momentum (buf = momentum*buf + (1-dampening)*g; first step buf = g),
    nesterov, maximize. On cuda a group whose parameters share one arena is one kernel launch. A float16/bfloat16
    parameter keeps a momentum buffer of its dtype and steps on its own storage (float32 math, each stored value
    rounded once, as PyTorch's fused kernels)."""

    _half_storage = True

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _step_group(self, group, B, params):
        momentum = group["momentum"]
        bufs = None
        # the first step sets the buffer to the gradient; without momentum PyTorch keeps no state at all
        first = [bool(momentum) and self.state.get(p, {}).get("momentum_buffer") is None for p in params]
        if momentum:
            need = [p for p, f in zip(params, first) if f]
            for p, b in zip(need, B.alloc_states(need, "momentum_buffer") if need else ()):
                self.state[p]["momentum_buffer"] = b
            bufs = [self.state[p]["momentum_buffer"] for p in params]
        B.sgd_group(params, [p.grad for p in params], bufs, first, lr=group["lr"], momentum=momentum,
                    dampening=group["dampening"], nesterov=group["nesterov"], weight_decay=group["weight_decay"],
                    maximize=group["maximize"])
