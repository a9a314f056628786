"""nn.utils.parametrizations.weight_norm and spectral_norm (the parametrize-based forms PyTorch recommends), and
the older hook-based nn.utils.weight_norm / spectral_norm with their weight_g/weight_v and weight_orig/weight_u/
weight_v state_dict keys, so checkpoints of either kind load."""
from ...autograd.grad_mode import no_grad
from ..module import Module
from ..parameter import Parameter
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]     # the hook forms are exported by nn.utils under their names


def _norm_except_dim(v, dim):
    """‖v‖₂ over every dimension but dim, shaped to broadcast against v (dim=None: the whole tensor)."""
    if dim is None or dim == -1 and v.ndim == 0:
        return v.norm()
    d = dim % v.ndim
    others = [i for i in range(v.ndim) if i != d]
    return v.norm(2, others, keepdim=True) if others else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, None if self.dim == -1 else self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, None if self.dim == -1 else self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize module.<name> as g · v / ‖v‖ (the norm over every dimension but dim): the originals are
    parametrizations.<name>.original0 (g) and original1 (v).

    Example:
        >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(20, 40))
        >>> m.parametrizations.weight.original0.shape
        torch.Size([40, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


def _normalize(x, eps):
    return x / x.norm().clamp_min(eps)


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = _normalize(weight.new_empty((h,)).normal_(0, 1), eps)
            v = _normalize(weight.new_empty((w,)).normal_(0, 1), eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, mat, n):
        with no_grad():
            for _ in range(n):
                self._u.copy_(_normalize(mat @ self._v, self.eps))
                self._v.copy_(_normalize(mat.mT @ self._u, self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide module.<name> by its largest singular value, estimated by power iteration (one step per forward
    in training; the vectors are buffers parametrizations.<name>.0._u / _v).

    Example:
        >>> m = nn.utils.parametrizations.spectral_norm(nn.Linear(20, 40))
        >>> torch.linalg.matrix_norm(m.weight, 2) < 1.01
        tensor(True)
    """
    weight = getattr(module, name)
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ------------------------------------------------------------------ the older hook-based forms
class _OldWeightNorm:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute(module))


def old_weight_norm(module, name="weight", dim=0):
    """nn.utils.weight_norm (deprecated in PyTorch for the parametrization form): parameters <name>_g and
    <name>_v, and <name> recomputed as g · v / ‖v‖ before every forward.

    Example:
        >>> m = nn.utils.weight_norm(nn.Linear(20, 40))
        >>> sorted(n for n, _ in m.named_parameters())
        ['bias', 'weight_g', 'weight_v']
    """
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _OldWeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    fn = _OldWeightNorm(name, dim)
    weight = getattr(module, name)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    object.__setattr__(module, name, fn.compute(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo nn.utils.weight_norm: <name> is one parameter again, holding g · v / ‖v‖."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _OldWeightNorm) and hook.name == name:
            weight = hook.compute(module).detach()
            del module._forward_pre_hooks[k]
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")


class _OldSpectralNorm:
    def __init__(self, name, n_power_iterations, dim, eps):
        self.name, self.n, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, w):
        if self.dim != 0:
            w = w.movedim(self.dim, 0)
        return w.reshape(w.shape[0], -1)

    def compute(self, module, do_power_iteration):
        w = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.matrix(w)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n):
                    v.copy_(_normalize(mat.mT @ u, self.eps))
                    u.copy_(_normalize(mat @ v, self.eps))
        sigma = (u.clone() * (mat @ v.clone())).sum()
        return w / sigma

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute(module, module.training))


def old_spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """nn.utils.spectral_norm (the hook form): parameter <name>_orig, buffers <name>_u and <name>_v, and
    <name> = <name>_orig / σ recomputed before every forward (one power-iteration step in training)."""
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    fn = _OldSpectralNorm(name, n_power_iterations, dim, eps)
    weight = getattr(module, name)
    mat = fn.matrix(weight.detach())
    u = _normalize(weight.new_empty((mat.shape[0],)).normal_(0, 1), eps)
    v = _normalize(weight.new_empty((mat.shape[1],)).normal_(0, 1), eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", Parameter(weight.detach()))
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    object.__setattr__(module, name, weight.detach() * 1.0)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo nn.utils.spectral_norm: <name> is one parameter again, holding the normalized weight."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _OldSpectralNorm) and hook.name == name:
            weight = hook.compute(module, False).detach()
            del module._forward_pre_hooks[k]
            del module._parameters[name + "_orig"]
            del module._buffers[name + "_u"]
            del module._buffers[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")

