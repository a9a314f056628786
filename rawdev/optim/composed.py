"""optim.Rprop and optim.ASGD with PyTorch's update rules, written as tensor ops on the parameters' device (no
fused kernel: each parameter is a few elementwise launches per step). State and state_dict keys are PyTorch's."""
from ..autograd.grad_mode import no_grad
from ..ops.select.functions import where as _where
from .optimizer import Optimizer

__all__ = ["Rprop", "ASGD"]


class _Composed(Optimizer):
    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(group, p, p.grad if not group.get("maximize") else -p.grad)
        return loss

    def _cast_state(self, p, key, value):
        from ..tensor.core import Tensor
        if isinstance(value, Tensor) and key != "step":
            return value.detach().to(device=p.device, dtype=p.dtype).clone()
        return super()._cast_state(p, key, value)


class Rprop(_Composed):
    """Resilient backpropagation: a per-element step size grown by etas[1] while the gradient keeps its sign and
    shrunk by etas[0] when it flips (that step is then skipped); the update is −sign(grad)·step_size.

    Example:
        >>> opt = torch.optim.Rprop(model.parameters(), lr=0.01)
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _update(self, group, p, grad):
        from ..tensor.factory import full_like, tensor, zeros_like
        st = self.state[p]
        if not st:
            st["step"] = tensor(0.0)
            st["prev"] = zeros_like(p)
            st["step_size"] = full_like(grad, group["lr"])
        st["step"] += 1
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        s = (grad * st["prev"]).sign()
        one = s * 0 + 1                                    # in the parameter's dtype (a bare 1.2 would be float32)
        factor = _where(s > 0, one * etaplus, _where(s < 0, one * etaminus, one))
        st["step_size"].copy_((st["step_size"] * factor).clamp(lo, hi))
        g = _where(s < 0, 0.0, grad)
        p.sub_(g.sign() * st["step_size"])
        st["prev"].copy_(g)


class ASGD(_Composed):
    """Averaged SGD: SGD with a decaying rate eta_t = lr / (1 + lambd·lr·t)^alpha, and the running average of the
    iterates from step t0 on kept in state['ax'].

    Example:
        >>> opt = torch.optim.ASGD(model.parameters(), lr=0.01, t0=100)
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _update(self, group, p, grad):
        from ..tensor.factory import tensor, zeros_like
        st = self.state[p]
        if not st:
            st["step"] = tensor(0.0)
            st["eta"] = tensor(float(group["lr"]))
            st["mu"] = tensor(1.0)
            st["ax"] = zeros_like(p)
        st["step"] += 1
        step = float(st["step"].item())
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * p
        eta = float(st["eta"].item())
        p.mul_(1 - group["lambd"] * eta)
        p.sub_(eta * grad)
        mu = float(st["mu"].item())
        if mu != 1:
            st["ax"].add_((p - st["ax"]) * mu)
        else:
            st["ax"].copy_(p)
        # eta and mu are kept as 0-d tensors of the default dtype (PyTorch's scalar dtype), rounding included
        st["eta"] = tensor(group["lr"] / ((1 + group["lambd"] * group["lr"] * step) ** group["alpha"]))
        st["mu"] = tensor(1 / max(1, step - group["t0"]))
