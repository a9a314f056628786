from .optimizer import Optimizer

__all__ = ["Adamax"]


def _check_betas(lr, eps, betas, weight_decay):
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adamax(Optimizer):
    """PyTorch's Adamax: exp_avg = lerp(exp_avg, g, 1-β1); exp_inf = max(β2·exp_inf, |g| + eps);
    p -= lr/(1-β1^t) · exp_avg / exp_inf."""
    _step_count_on_host = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_betas(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group, B, params):
        st = self._lazy_state(B, params, ["exp_avg", "exp_inf"], {"step": 0.0})
        steps = self._count_step(st)
        beta1, beta2 = group["betas"]
        B.adamax_group(params, [p.grad for p in params], [s["exp_avg"] for s in st], [s["exp_inf"] for s in st],
                       steps, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                       weight_decay=group["weight_decay"], maximize=group["maximize"])
