from .adamax import _check_betas
from .optimizer import Optimizer

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """PyTorch's NAdam: μ_t = β1·(1 - ½·0.96^(t·momentum_decay)), mu_product = Πμ; Adam's moments;
    p -= lr·(1-μ_t)/(1-mu_product)·g/denom + lr·μ_{t+1}/(1-mu_product·μ_{t+1})·m/denom,
    denom = √(v/(1-β2^t)) + eps; decoupled_weight_decay multiplies p by 1 - lr·wd first (NAdamW)."""
    _step_count_on_host = True

    _host_state = ("mu_product",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_betas(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _after_load(self):
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("maximize", False)

    def _step_group(self, group, B, params):
        st = self._lazy_state(B, params, ["exp_avg", "exp_avg_sq"], {"step": 0.0, "mu_product": 1.0})
        steps = self._count_step(st)
        beta1, beta2 = group["betas"]
        prods = []
        for s, t in zip(st, steps):
            # mu_product lives in a host tensor of the default dtype, as in PyTorch: mu_product *= mu rounds there
            s["mu_product"].mul_(beta1 * (1.0 - 0.5 * 0.96 ** (t * group["momentum_decay"])))
            prods.append(s["mu_product"].item())
        B.nadam_group(params, [p.grad for p in params], [s["exp_avg"] for s in st], [s["exp_avg_sq"] for s in st],
                      steps, prods, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                      weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
                      decoupled=group["decoupled_weight_decay"], maximize=group["maximize"])
