from .optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """PyTorch's RMSprop: square_avg = α·square_avg + (1-α)·g²; centered subtracts grad_avg² (grad_avg the
    running mean of g); avg = √(·) + eps; momentum: buf = μ·buf + g/avg, p -= lr·buf, else p -= lr·g/avg.
    On cuda a group whose parameters share one arena is one kernel launch."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group, B, params):
        momentum, centered = group["momentum"], group["centered"]
        keys = ["square_avg"] + (["momentum_buffer"] if momentum > 0 else []) + (["grad_avg"] if centered else [])
        st = self._lazy_state(B, params, keys, {"step": 0.0})
        self._count_step(st)
        B.rmsprop_group(params, [p.grad for p in params], [s["square_avg"] for s in st],
                        [s["momentum_buffer"] for s in st] if momentum > 0 else None,
                        [s["grad_avg"] for s in st] if centered else None, lr=group["lr"], alpha=group["alpha"],
                        eps=group["eps"], weight_decay=group["weight_decay"], momentum=momentum, centered=centered,
                        maximize=group["maximize"])
