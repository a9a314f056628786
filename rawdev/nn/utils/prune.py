"""nn.utils.prune, as PyTorch's: pruning <name> of a module keeps the dense tensor as the parameter
<name>_orig, a 0/1 buffer <name>_mask, and recomputes <name> = <name>_orig · <name>_mask before every forward.
Pruning again combines masks (a new method prunes among the entries still unpruned); remove() makes the pruned
tensor the parameter again. Masks are computed on the tensor's device (topk, norms)."""
import numbers

from ...autograd.grad_mode import no_grad
from ..parameter import Parameter

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


def _nparams(amount, size):
    """How many entries amount prunes: an int as given, a fraction of size rounded half to even (PyTorch's)."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    if not 0.0 <= amount <= 1.0:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")
    return round(amount * size)


class BasePruningMethod:
    """A pruning technique: compute_mask(t, default_mask) -> the new mask; apply() installs it on a module."""
    PRUNING_TYPE = "unstructured"

    def __call__(self, module, inputs):
        object.__setattr__(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t, default_mask):
        raise NotImplementedError

    def apply_mask(self, module):
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * mask.to(dtype=orig.dtype)

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        old = None
        for k, hook in list(module._forward_pre_hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old = hook
                del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name + "_orig") if old is not None else getattr(module, name)
        scores = importance_scores if importance_scores is not None else orig
        with no_grad():
            if old is None:
                default_mask = orig.detach().new_ones(tuple(orig.shape))
            else:
                default_mask = getattr(module, name + "_mask").detach().clone()
            mask = method.compute_mask(scores.detach(), default_mask=default_mask)
        if old is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            module.register_buffer(name + "_mask", mask)
        else:
            module._buffers[name + "_mask"] = mask
        object.__setattr__(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (no module involved)."""
        scores = importance_scores if importance_scores is not None else t
        mask = self.compute_mask(scores, default_mask if default_mask is not None else t.new_ones(tuple(t.shape)))
        return t * mask

    def remove(self, module):
        """Make the pruning permanent: <name> becomes a parameter holding orig · mask."""
        weight = self.apply_mask(module)
        module.__dict__.pop(self._tensor_name, None)
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        module.register_parameter(self._tensor_name, Parameter(weight.detach()))


class PruningContainer(BasePruningMethod):
    """Successive pruning of one tensor: each new method prunes among the entries its predecessors kept."""

    def __init__(self, *methods):
        self._pruning_methods = ()
        for m in methods:
            self.add_pruning_method(m)

    def add_pruning_method(self, method):
        if not hasattr(self, "_tensor_name"):
            self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask == 1
            new = default_mask.clone()
            sub = method.compute_mask(t[keep], default_mask=default_mask[keep])
            new[keep] = sub
            return new
        if method.PRUNING_TYPE == "structured":
            dim = method.dim if method.dim >= 0 else method.dim + t.ndim
            others = [i for i in range(t.ndim) if i != dim]
            alive = (default_mask.sum(others) != 0) if others else default_mask != 0
            idx = alive.nonzero().reshape(-1)
            sub_t, sub_m = t.index_select(dim, idx), default_mask.index_select(dim, idx)
            sub = method.compute_mask(sub_t, default_mask=sub_m)
            new = default_mask.clone()
            new.index_copy_(dim, idx, sub.to(dtype=new.dtype))
            return new
        return method.compute_mask(t, default_mask=default_mask)


class Identity(BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask


class _Unstructured(BasePruningMethod):
    """Zero the `amount` entries that come first in the subclass's pruning order."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        self.amount = amount

    def _first(self, t, k):
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        k = _nparams(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            mask.view(-1)[self._first(t, k)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    def _first(self, t, k):
        return t.new_empty(tuple(t.shape)).uniform_().reshape(-1).topk(k).indices


class L1Unstructured(_Unstructured):
    def _first(self, t, k):
        return t.abs().reshape(-1).topk(k, largest=False).indices


class _Structured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def _keep_mask(self, t, default_mask, score):
        """default_mask with every slice along dim zeroed except the top-scoring ones."""
        size = t.shape[self.dim]
        k = _nparams(self.amount, size)
        keep = size - k
        mask = default_mask.new_zeros(tuple(default_mask.shape))
        if keep:
            idx = score.topk(keep).indices
            ones = default_mask.new_ones(tuple(default_mask.index_select(self.dim, idx).shape))
            mask.index_copy_(self.dim, idx, ones)
        return mask * default_mask


class RandomStructured(_Structured):
    def __init__(self, amount, dim=-1):
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        self.dim = self.dim % t.ndim
        return self._keep_mask(t, default_mask, t.new_empty((t.shape[self.dim],)).uniform_())


class LnStructured(_Structured):
    def __init__(self, amount, n, dim=-1):
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        self.dim = self.dim % t.ndim
        others = [i for i in range(t.ndim) if i != self.dim]
        norms = t.norm(self.n, others) if others else t.abs()
        return self._keep_mask(t, default_mask, norms)


class CustomFromMask(BasePruningMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        return default_mask * self.mask.to(dtype=default_mask.dtype, device=default_mask.device)


def identity(module, name):
    """Prune nothing (installs the <name>_orig / <name>_mask machinery with an all-ones mask)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` (a count or a fraction) of the entries of module.<name>, chosen at random."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the `amount` entries of module.<name> with the smallest |value| (or importance score).

    Example:
        >>> m = prune.l1_unstructured(nn.Linear(4, 3), "weight", amount=0.5)
        >>> int((m.weight == 0).sum())
        6
    """
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` whole slices of module.<name> along dim, chosen at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the `amount` slices along dim with the smallest L_n norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    """Prune module.<name> where mask is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune across several tensors at once: one mask computed on all their entries together (e.g. the
    smallest 20 % of every weight in the model by |value|), then installed on each.

    Args:
        parameters: (module, name) pairs.
        pruning_method: an unstructured method class (L1Unstructured, RandomUnstructured).
    """
    from ...ops.join import cat
    parameters = list(parameters)
    importance_scores = importance_scores or {}
    scores, masks = [], []
    for module, name in parameters:
        t = getattr(module, name + "_orig") if hasattr(module, name + "_mask") else getattr(module, name)
        scores.append(importance_scores.get((module, name), t).detach().reshape(-1))
        masks.append(getattr(module, name + "_mask").detach().reshape(-1) if hasattr(module, name + "_mask")
                     else t.detach().new_ones((t.numel(),)))
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f'{pruning_method} of type {method.PRUNING_TYPE}')
    container.add_pruning_method(method)
    with no_grad():
        final = container.compute_mask(cat(scores), cat(masks))
    off = 0
    for module, name in parameters:
        t = getattr(module, name)
        n = t.numel()
        custom_from_mask(module, name, final[off:off + n].reshape(tuple(t.shape)))
        off += n


def remove(module, name):
    """Make the pruning of module.<name> permanent (the parameter holds the pruned values; no hook, no mask)."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether any submodule of module has pruning hooks."""
    return any(isinstance(h, BasePruningMethod) for m in module.modules() for h in m._forward_pre_hooks.values())
