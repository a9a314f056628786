from .adamax import _check_betas
from .optimizer import Optimizer

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """PyTorch's RAdam: Adam's moments; ρ∞ = 2/(1-β2) - 1, ρ_t = ρ∞ - 2t·β2^t/(1-β2^t); when ρ_t > 5
    p -= lr·m̂ · √(1-β2^t)/(√v + eps) · r_t (the variance rectification), else p -= lr·m̂ (m̂ = m/(1-β1^t));
    decoupled_weight_decay multiplies p by 1 - lr·wd first."""
    _step_count_on_host = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_betas(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _after_load(self):
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("maximize", False)

    def _step_group(self, group, B, params):
        st = self._lazy_state(B, params, ["exp_avg", "exp_avg_sq"], {"step": 0.0})
        steps = self._count_step(st)
        beta1, beta2 = group["betas"]
        B.radam_group(params, [p.grad for p in params], [s["exp_avg"] for s in st], [s["exp_avg_sq"] for s in st],
                      steps, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                      weight_decay=group["weight_decay"], decoupled=group["decoupled_weight_decay"],
                      maximize=group["maximize"])
