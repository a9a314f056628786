"""`rawdev.autograd.forward_ad`: PyTorch's dual-tensor API for Jacobian-vector products.

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)
        y = f(x)
        jvp = fwAD.unpack_dual(y).tangent

rawdev has no forward-mode kernels. A dual tensor is a fresh leaf that records the graph of what is computed
from it; unpack_dual(y) then gets J·t by the double-vjp identity: for a dummy vector u, g(u) = Jᵀu is linear in
u, and the gradient of ⟨g(u), t⟩ with respect to u is J·t. So the values are forward mode's, each tangent costs
two backward passes, and the ops on the way must support double backward (most do; fused attention and
recurrent kernels do not, and say so). The primal unpack_dual returns is detached from the dual's graph.
"""
import threading
from collections import namedtuple

from ..tensor.core import Tensor
from .grad_mode import enable_grad

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_state = threading.local()


def _levels():
    if not hasattr(_state, "levels"):
        _state.levels = []           # per level: {id(dual leaf): (dual leaf, tangent)}
    return _state.levels


def enter_dual_level():
    """Open a new level (only one at a time, as PyTorch); returns its index."""
    levels = _levels()
    if levels:
        raise RuntimeError("Entering a new forward AD level but the current level is not valid. Make sure you did "
                           "not modified it directly.")
    levels.append({})
    return len(levels) - 1


def exit_dual_level(*, level=None):
    """Close the current level: its dual tensors stop carrying tangents."""
    levels = _levels()
    if levels:
        levels.pop()


class dual_level:
    """`with dual_level():` — the scope in which make_dual/unpack_dual work."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def make_dual(tensor, tangent, *, level=None):
    """A tensor with the values of `tensor` carrying `tangent` (same shape) as its forward gradient."""
    levels = _levels()
    if not levels:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    dual = tensor.detach().clone().requires_grad_(True)
    levels[-1][id(dual)] = (dual, tangent.detach())
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): the tangent is J·t over every dual tensor `tensor` depends on, None when it depends on
    none (or outside a level)."""
    levels = _levels()
    if not levels or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor.detach() if isinstance(tensor, Tensor) else tensor, None)
    duals = list(levels[-1].values())
    primal = tensor.detach()
    if not tensor.requires_grad or not duals:
        return UnpackedDualTensor(primal, None)
    from .engine import grad
    with enable_grad():
        u = tensor.detach().new_zeros(tuple(tensor.shape)).requires_grad_(True)
        gs = grad([tensor], [d for d, _ in duals], [u], create_graph=True, allow_unused=True)
        if any(g is not None and not g.requires_grad for g in gs):
            raise RuntimeError("forward_ad: the tangent of this result needs the backward of an op on its way to "
                               "be differentiable (rawdev computes J·t by double backward)")
        terms = [(g * t).sum() for g, (_, t) in zip(gs, duals) if g is not None]
        if not terms:
            return UnpackedDualTensor(primal, None)
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        jt, = grad([total], [u], allow_unused=True)
    return UnpackedDualTensor(primal, primal.new_zeros(tuple(primal.shape)) if jt is None else jt.detach())
