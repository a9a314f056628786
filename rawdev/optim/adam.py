from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """PyTorch's Adam (and, with decoupled weight decay, AdamW), amsgrad and maximize included.

    m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;  (amsgrad: v̂ = max(v̂, v))
    p -= lr/(1-β1^t) · m / (√v(or v̂)/√(1-β2^t) + eps)

    A float16/bfloat16 parameter keeps exp_avg, exp_avg_sq (and max_exp_avg_sq) of its dtype and steps on its own
    storage (float32 math, each stored value rounded once, as PyTorch's fused kernels).
    """
    _step_count_on_host = True
    _half_storage = True

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
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
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _after_load(self):
        # a state_dict from before PyTorch had the flag: it is the class's own behaviour
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", self._decoupled)

    def _step_group(self, group, B, params):
        from ..tensor.factory import tensor
        keys = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group["amsgrad"] else [])
        new = [p for p in params if len(self.state[p]) == 0]
        if new:
            allocs = {k: B.alloc_states(new, k) for k in keys}
            for i, p in enumerate(new):
                self.state[p].update({"step": tensor(0.0), **{k: allocs[k][i] for k in keys}})
        if group["amsgrad"]:   # amsgrad switched on after some steps (e.g. a loaded state_dict)
            need = [p for p in params if "max_exp_avg_sq" not in self.state[p]]
            for p, b in zip(need, B.alloc_states(need, "max_exp_avg_sq") if need else ()):
                self.state[p]["max_exp_avg_sq"] = b
        st = [self.state[p] for p in params]
        for s in st:
            s["step"].fill_(s["step"].item() + 1)    # the step count lives on the host (PyTorch's default)
        beta1, beta2 = group["betas"]
        B.adam_group(params, [p.grad for p in params], [s["exp_avg"] for s in st], [s["exp_avg_sq"] for s in st],
                     [s["max_exp_avg_sq"] for s in st] if group["amsgrad"] else None,
                     [int(s["step"].item()) for s in st], lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                     weight_decay=group["weight_decay"],
                     decoupled=group.get("decoupled_weight_decay", self._decoupled), amsgrad=group["amsgrad"],
                     maximize=group["maximize"])


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr·wd before the update); default weight_decay 1e-2.
    As in PyTorch, this is Adam with decoupled_weight_decay=True (the flag is in every param group)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
