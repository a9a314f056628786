from .optimizer import Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """PyTorch's Adadelta: square_avg = ρ·square_avg + (1-ρ)·g²; delta = √(acc_delta + eps)/√(square_avg + eps)·g;
    acc_delta = ρ·acc_delta + (1-ρ)·delta²; p -= lr·delta (lr defaults to 1.0)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group, B, params):
        st = self._lazy_state(B, params, ["square_avg", "acc_delta"], {"step": 0.0})
        self._count_step(st)
        B.adadelta_group(params, [p.grad for p in params], [s["square_avg"] for s in st],
                         [s["acc_delta"] for s in st], lr=group["lr"], rho=group["rho"], eps=group["eps"],
                         weight_decay=group["weight_decay"], maximize=group["maximize"])
