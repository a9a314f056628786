from ..autograd.grad_mode import enable_grad, no_grad
from ..ops.dispatch import backend_of
from .optimizer import Optimizer, required

__all__ = ["SGD"]


class SGD(Optimizer):
    """PyTorch's SGD: weight decay, momentum (buf = momentum*buf + (1-dampening)*g; first step buf = g),
    nesterov, maximize. On cuda a group whose parameters share one arena is one kernel launch."""

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

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if not params:
                    continue
                by_dev = {}
                for p in params:
                    by_dev.setdefault(p.device, []).append(p)
                for dev_params in by_dev.values():
                    B = backend_of(dev_params[0])
                    first = []
                    bufs = []
                    for p in dev_params:
                        # .get: without momentum PyTorch's SGD keeps no per-parameter state at all
                        st = self.state.get(p, {})
                        if group["momentum"] and st.get("momentum_buffer") is None:
                            first.append(True)
                        else:
                            first.append(False)
                    if group["momentum"]:
                        need = [p for p, f in zip(dev_params, first) if f]
                        if need:
                            for p, b in zip(need, B.alloc_states(need, "momentum_buffer")):
                                self.state[p]["momentum_buffer"] = b
                        bufs = [self.state[p]["momentum_buffer"] for p in dev_params]
                    B.sgd_group(dev_params, [p.grad for p in dev_params], bufs if group["momentum"] else None,
                                first, lr=group["lr"], momentum=group["momentum"], dampening=group["dampening"],
                                nesterov=group["nesterov"], weight_decay=group["weight_decay"],
                                maximize=group["maximize"])
        return loss
