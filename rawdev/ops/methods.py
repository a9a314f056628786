"""Installs the math methods on rawdev.Tensor (operators, reductions, activations, backward).

The one place that sets attributes on the Tensor class from the ops layer; imported by rawdev/__init__.py.
D's metadata-only reshape/view/flatten are wrapped so that they record a graph node when needed.
"""
import numbers

from ..autograd import engine
from ..autograd.grad_mode import is_grad_enabled
from ..tensor.core import Tensor
from . import functions as F
from .dispatch import backend, backend_of

_installed = False


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into each leaf's .grad (gradient: d(loss)/d(self), default 1 for a scalar)."""
    engine.backward(self, gradient, retain_graph, create_graph, inputs)


def _retain_grad(self):
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is not None:
        import weakref
        self.grad_fn._retained = weakref.ref(self)


def _check_inplace(self, op):
    if is_grad_enabled() and self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _add_(self, other, *, alpha=1):
    _check_inplace(self, "add_")
    if isinstance(other, Tensor):
        backend("add_", self, other).add_(self, other, alpha)
    else:
        B = backend_of(self)
        B.add_(self, B.full((), other * alpha, self.dtype, self.device))
    return self


def _sub_(self, other, *, alpha=1):
    return _add_(self, other, alpha=-alpha)


def _mul_(self, other):
    _check_inplace(self, "mul_")
    if isinstance(other, Tensor):
        B = backend("mul_", self, other)
        B.copy_into(self, B.mul(self, other, self.dtype))
    else:
        backend_of(self).scale_(self, other)
    return self


def _div_(self, other):
    if isinstance(other, Tensor):
        _check_inplace(self, "div_")
        B = backend("div_", self, other)
        B.copy_into(self, B.div(self, other, self.dtype))
        return self
    return _mul_(self, 1.0 / other)


def _iop(name, inplace):
    def op(self, other):
        if is_grad_enabled() and (self.requires_grad or (isinstance(other, Tensor) and other.requires_grad)):
            if self.requires_grad and self.grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            return getattr(F, name)(self, other)   # rebinds the name to the new result
        return inplace(self, other)
    return op


def _reshape(self, *shape):
    return F.reshape(self, *shape)


def _view_as(self, other):
    return F.reshape(self, other.shape)


def _clone(self, *, memory_format=None):
    # As PyTorch: differentiable (CloneBackward0) when grad is on; otherwise a plain copy that does not
    # require grad (a leaf's clone under no_grad is a new, grad-free tensor).
    if is_grad_enabled() and self.requires_grad:
        return _Clone.apply(self)
    t = self._copy_storage()
    t._requires_grad = False
    return t


class _Clone(F.Function):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x):
        return backend_of(x).clone(x)

    @staticmethod
    def backward(ctx, g):
        return g


def _rsub(self, other):
    return F.sub(other, self)


def _rtruediv(self, other):
    return F.div(other, self)


def _rmatmul(self, other):
    return F.matmul(other, self)


def _t(self):
    if self.ndim < 2:
        return self
    if self.ndim != 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return _Transpose.apply(self)


class _Transpose(F.Function):
    node_name = "TBackward0"

    @staticmethod
    def forward(ctx, x):
        return backend_of(x).transpose2d(x)

    @staticmethod
    def backward(ctx, g):
        return backend_of(g).transpose2d(g)


def _install_comparisons(T):
    """eq/ne/lt/le/gt/ge as methods and operators. An operand that is neither a tensor nor a number gives
    NotImplemented, so `t == None` is False as in PyTorch; __hash__ stays identity (state dicts key on tensors)."""
    for name, dunder in (("eq", "__eq__"), ("ne", "__ne__"), ("lt", "__lt__"), ("le", "__le__"), ("gt", "__gt__"),
                         ("ge", "__ge__")):
        fn = getattr(F, name)
        setattr(T, name, lambda s, o, _fn=fn: _fn(s, o))
        setattr(T, dunder, _comparison_operator(fn))


def _comparison_operator(fn):
    def op(self, other):
        if not (isinstance(other, Tensor) or F._is_scalar(other)):
            return NotImplemented
        return fn(self, other)
    return op


def install():
    global _installed
    if _installed:
        return
    _installed = True
    T = Tensor
    T.__array_ufunc__ = None      # numpy scalars/arrays defer to Tensor's reflected operators
    T.__add__ = lambda s, o: F.add(s, o)
    T.__radd__ = lambda s, o: F.add(o, s)
    T.__sub__ = lambda s, o: F.sub(s, o)
    T.__rsub__ = _rsub
    T.__mul__ = lambda s, o: F.mul(s, o)
    T.__rmul__ = lambda s, o: F.mul(o, s)
    T.__truediv__ = lambda s, o: F.div(s, o)
    T.__rtruediv__ = _rtruediv
    T.__neg__ = lambda s: F.neg(s)
    T.__pos__ = lambda s: s
    T.__pow__ = lambda s, e: F.pow(s, e)
    T.__matmul__ = lambda s, o: F.matmul(s, o)
    T.__rmatmul__ = _rmatmul
    T.__iadd__ = _iop("add", _add_)
    T.__isub__ = _iop("sub", _sub_)
    T.__imul__ = _iop("mul", _mul_)
    T.__itruediv__ = _iop("div", _div_)
    T.add = lambda s, o, *, alpha=1: F.add(s, o, alpha=alpha)
    T.sub = lambda s, o, *, alpha=1: F.sub(s, o, alpha=alpha)
    T.mul = lambda s, o: F.mul(s, o)
    T.div = lambda s, o, *, rounding_mode=None: F.div(s, o, rounding_mode=rounding_mode)
    T.neg = lambda s: F.neg(s)
    T.pow = lambda s, e: F.pow(s, e)
    T.add_, T.sub_, T.mul_, T.div_ = _add_, _sub_, _mul_, _div_
    T.matmul = lambda s, o: F.matmul(s, o)
    T.mm = lambda s, o: F.mm(s, o)
    T.sum = lambda s, dim=None, keepdim=False, *, dtype=None: F.sum(s, dim, keepdim, dtype=dtype)
    T.mean = lambda s, dim=None, keepdim=False, *, dtype=None: F.mean(s, dim, keepdim, dtype=dtype)
    T.relu = lambda s: F.relu(s)
    T.sigmoid = lambda s: F.sigmoid(s)
    T.tanh = lambda s: F.tanh(s)
    T.exp = lambda s: F.exp(s)
    T.log = lambda s: F.log(s)
    T.abs = lambda s: F.abs(s)
    T.__abs__ = lambda s: F.abs(s)
    _install_comparisons(T)
    T.argmax = lambda s, dim=None, keepdim=False: F.argmax(s, dim, keepdim)
    T.argmin = lambda s, dim=None, keepdim=False: F.argmin(s, dim, keepdim)
    T.max = lambda s, dim=None, keepdim=False: F.max(s, dim, keepdim)
    T.min = lambda s, dim=None, keepdim=False: F.min(s, dim, keepdim)
    T.softmax = lambda s, dim=None, dtype=None: F.softmax(s, dim, dtype)
    T.log_softmax = lambda s, dim=None, dtype=None: F.log_softmax(s, dim, dtype)
    T.reshape = _reshape
    T.__getitem__ = F.getitem   # x[i] / x[a:b] of a tensor that needs a grad is in the graph
    T.view = _reshape
    T.view_as = _view_as
    T.clone = _clone
    T.flatten = lambda s, start_dim=0, end_dim=-1: F.flatten(s, start_dim, end_dim)
    T.unflatten = lambda s, dim, sizes: F.unflatten(s, dim, sizes)
    T.squeeze = lambda s, dim=None: F.squeeze(s, dim)
    T.unsqueeze = lambda s, dim: F.unsqueeze(s, dim)
    T.t = _t
    T.T = property(_t)
    T.backward = _backward
    T.retain_grad = _retain_grad
    T.retains_grad = property(lambda s: s.grad_fn is not None and s.grad_fn._retained is not None
                              and s.grad_fn._retained() is s)
