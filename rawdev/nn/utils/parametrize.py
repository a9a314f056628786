"""nn.utils.parametrize: a module tensor computed from other tensors on every access, as PyTorch's.

register_parametrization(module, "weight", P) moves the original tensor to
module.parametrizations.weight.original (or original0, original1, … when P.right_inverse returns several), and
gives the module a class of its own ("Parametrized<Class>") whose `weight` property evaluates
P(original). Parameters, state_dict keys ("parametrizations.weight.original") and moves with .cuda() are
PyTorch's, because the originals are ordinary parameters of a child module.
"""
import contextlib

from ...autograd.grad_mode import no_grad
from ...tensor.core import Tensor
from ..containers import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached", "ParametrizationList",
           "type_before_parametrizations"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Within this context each parametrized tensor is computed once and reused (PyTorch's caching)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to its original(s)."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        first = modules[0]
        with no_grad():
            new = first.right_inverse(original) if hasattr(first, "right_inverse") else original
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._set_original("original", new, original)
        else:
            for i, t in enumerate(new):
                self._set_original(f"original{i}", t, original)

    def _set_original(self, name, value, like):
        requires_grad = like.requires_grad if isinstance(like, Tensor) else True
        if isinstance(like, Parameter) or requires_grad:
            self.register_parameter(name, Parameter(value.detach().clone() if value is like else value.detach(),
                                                    requires_grad=requires_grad))
        else:
            self.register_buffer(name, value.detach())

    def right_inverse(self, value):
        """Set the originals so that the parametrization yields `value` (inverting from the last one back)."""
        with no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse.")
                value = m.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _getter(name):
    def get(self):
        plist = self.parametrizations[name]
        if _cache_enabled:
            key = (id(self), name)
            if key not in _cache:
                _cache[key] = plist()
            return _cache[key]
        return plist()
    return get


def _setter(name):
    def set_(self, value):
        self.parametrizations[name].right_inverse(value)
    return set_


def is_parametrized(module, tensor_name=None):
    """Whether module has parametrizations (for tensor_name, when given)."""
    p = module.__dict__.get("_modules", {}).get("parametrizations")
    if p is None or not isinstance(p, ModuleDict):
        return False
    return len(p) > 0 if tensor_name is None else tensor_name in p


def type_before_parametrizations(module):
    """The module's class before register_parametrization gave it its own."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make module.<tensor_name> computed as parametrization(original) on every access.

    Example:
        >>> class Symmetric(nn.Module):
        ...     def forward(self, X): return X.triu() + X.triu(1).mT
        >>> m = nn.Linear(3, 3)
        >>> parametrize.register_parametrization(m, "weight", Symmetric())
        >>> torch.equal(m.weight, m.weight.mT)
        True
    """
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    original = getattr(module, tensor_name)
    if not isinstance(original, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{tensor_name}'")
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    # remove the plain tensor, then hang the parametrization where PyTorch keeps it
    if tensor_name in module._parameters:
        del module._parameters[tensor_name]
    elif tensor_name in module._buffers:
        del module._buffers[tensor_name]
    if not is_parametrized(module):
        module.parametrizations = ModuleDict()
        cls = module.__class__
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})
    module.parametrizations[tensor_name] = plist
    setattr(module.__class__, tensor_name, property(_getter(tensor_name), _setter(tensor_name)))
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization for tensor_name: the tensor becomes a plain parameter again, holding the
    parametrized value (leave_parametrized=True) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    with no_grad():
        if leave_parametrized:
            value = getattr(module, tensor_name).detach().clone()
        elif plist.is_tensor:
            value = plist.original.detach()
        else:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    module.register_parameter(tensor_name, Parameter(value))
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = module.__class__.__bases__[0]
    return module
