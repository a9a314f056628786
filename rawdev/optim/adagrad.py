from ..autograd.grad_mode import no_grad
from ..ops.dispatch import backend_of
from .optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """PyTorch's Adagrad: clr = lr / (1 + (step-1)·lr_decay); sum += g²; p -= clr·g / (√sum + eps).
    As in PyTorch the state (step, sum = initial_accumulator_value) is made when the optimizer is."""
    _step_count_on_host = True

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        with no_grad():
            for group in self.param_groups:
                by_dev = {}
                for p in group["params"]:
                    by_dev.setdefault(p.device, []).append(p)
                for ps in by_dev.values():
                    for s in self._lazy_state(backend_of(ps[0]), ps, ["sum"], {"step": 0.0}):
                        if group["initial_accumulator_value"]:
                            s["sum"].fill_(group["initial_accumulator_value"])

    def _step_group(self, group, B, params):
        st = self._lazy_state(B, params, ["sum"], {"step": 0.0})
        steps = self._count_step(st)
        B.adagrad_group(params, [p.grad for p in params], [s["sum"] for s in st], steps, lr=group["lr"],
                        lr_decay=group["lr_decay"], eps=group["eps"], weight_decay=group["weight_decay"],
                        maximize=group["maximize"])
