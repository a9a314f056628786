"""The small dispatcher: which backend runs an op (cpu = numpy, cuda = shipped PTX), device checks,
and the gradient helpers the autograd engine calls."""
import numpy as _np

from ..tensor.core import Tensor
from . import cpu as _cpu_module

__all__ = ["backend", "check_same_device", "owner_scope", "current_owner"]

import threading as _threading

_scope = _threading.local()


class owner_scope:
    """Name the device memory that ops allocate inside: `with owner_scope("Linear 0"):` tags the layer's
    output "Linear 0 output" (what it saves for backward is its input: the previous layer's output)."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.prev = getattr(_scope, "name", None)
        _scope.name = self.name

    def __exit__(self, *exc):
        _scope.name = self.prev
        return False


def current_owner(role):
    name = getattr(_scope, "name", None)
    return f"{name} {role}" if name else role


def check_same_device(op, *tensors):
    """The common device of tensors (None entries skipped); mixing devices names both, like PyTorch."""
    dev, first = None, None
    for i, t in enumerate(tensors):
        if t is None:
            continue
        if dev is None:
            dev, first = t.device, i
        elif t.device != dev:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {t.device}! (when checking argument for {op}: argument {first} is on "
                               f"{dev}, argument {i} is on {t.device})")
    return dev


class _DenseCuda:
    """The cuda backend as the ops call it: every tensor argument of a kernel-launching function arrives
    contiguous (a strided view is copied once by the strided-copy kernel), so kernels index plain arrays,
    and in a dtype the kernels compute in (float16/bfloat16 widened to float32, narrow integers to int64,
    the results rounded back: rawdev.ops.opmath).
    Functions that write into their first argument handle views themselves (they write the base)."""

    _WRITERS = frozenset({"copy_into", "add_", "scale_", "new_grad", "sgd_group", "adam_group", "alloc_states",
                          "zeros_state", "elementwise", "gemm", "index_copy_", "index_add_"})

    def __getattr__(self, name):
        from . import cuda
        from .opmath import adapt
        fn = getattr(cuda, name)
        if callable(fn) and not name.startswith("_") and not isinstance(fn, type):
            if name not in self._WRITERS:
                dense = cuda.dense

                def call(*args, _fn=fn, **kwargs):
                    return _fn(*[dense(a) if isinstance(a, Tensor) else a for a in args], **kwargs)
                call.__name__, call.__doc__ = name, fn.__doc__
                fn = call
            fn = adapt(name, fn, cuda.cast, cuda.copy_into)   # float16/bfloat16 and narrow ints: opmath.py
        setattr(self, name, fn)
        return fn


_cuda = cuda_backend = _DenseCuda()


class _QuietCpu:
    """The numpy backend as the ops call it: IEEE results (inf for 1/0, nan for 0/0 or log(-1)) without numpy's
    RuntimeWarnings, as PyTorch and a GPU give them."""

    def __getattr__(self, name):
        fn = getattr(_cpu_module, name)
        if callable(fn) and not name.startswith("_") and not isinstance(fn, type):
            def call(*args, _fn=fn, **kwargs):
                with _np.errstate(all="ignore"):
                    return _fn(*args, **kwargs)
            call.__name__, call.__doc__ = name, fn.__doc__
            fn = call
        setattr(self, name, fn)
        return fn


cpu = _QuietCpu()


def backend(op, *tensors):
    """The backend module for tensors that must share a device (RuntimeError naming both otherwise)."""
    dev = check_same_device(op, *tensors)
    if dev is None or dev.type == "cpu":
        return cpu
    return _cuda


def backend_of(t):
    return cpu if t.device.type == "cpu" else _cuda


# ------------------------------------------------------------------ used by the autograd engine
def ones_like(t):
    return backend_of(t).full(t.shape, 1, t.dtype, t.device)


def zeros_like(t):
    return backend_of(t).full(t.shape, 0, t.dtype, t.device)


def zeros_like_meta(meta):
    shape, dt, dev = meta
    b = cpu if dev.type == "cpu" else backend_of_device(dev)
    return b.full(shape, 0, dt, dev)


def backend_of_device(dev):
    return cpu if dev.type == "cpu" else _cuda


def clone(t):
    return backend_of(t).clone(t)


def add_grads(a, b):
    """Sum of two gradients for the same tensor (out of place)."""
    return backend("add", a, b).add(a, b)


def accumulate_leaf_grad(var, g):
    """var.grad = g (a private copy) or var.grad += g, as PyTorch's AccumulateGrad."""
    if tuple(g.shape) != tuple(var.shape):
        raise RuntimeError(f"Function AccumulateGrad returned an invalid gradient - got {list(g.shape)} but expected "
                           f"shape compatible with {list(var.shape)}")
    if g.device != var.device:
        raise RuntimeError(f"gradient for a tensor on {var.device} was computed on {g.device}")
    be = backend_of(var)
    if g.dtype is not var.dtype:
        g = g.to(dtype=var.dtype)
    if var._grad is None:
        var._grad = be.new_grad(var, g) if hasattr(be, "new_grad") else be.clone(g)
    else:
        cur = var._grad
        if cur.device != var.device:
            raise RuntimeError("the existing .grad is on another device than its tensor")
        be.add_(cur, g)
