"""The small dispatcher: which backend runs an op (cpu = numpy, cuda = shipped PTX), device checks,
and the gradient helpers the autograd engine calls."""
import numpy as _np

from ..tensor.core import Tensor
from . import cpu as _cpu_module

__all__ = ["backend", "check_same_device", "owner_scope", "current_owner"]

from .cuda_call import fast_call  # noqa: E402
from .held_args import hold_args  # noqa: E402
from .owners import current_owner, owner_scope  # noqa: E402,F401  (re-exported: the layers' import path)


def same_device(a, b):
    """PyTorch lets a 0-dim cpu tensor join a cuda one as a scalar operand: it is moved (one 4-byte copy)."""
    if a.device is not b.device and a.device != b.device:
        if b.ndim == 0 and b.is_cpu:
            return a, b.to(a.device)
        if a.ndim == 0 and a.is_cpu:
            return a.to(b.device), b
    return a, b


def check_same_device(op, *tensors):
    """The common device of tensors (None entries skipped); mixing devices names both, like PyTorch."""
    dev, first = None, None
    for i, t in enumerate(tensors):
        if t is None:
            continue
        if dev is None:
            dev, first = t.device, i
        elif t.device is not dev and t.device != dev:   # devices are mostly the same object: skip __eq__
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
            raw, writer = fn, name in self._WRITERS
            if not writer:
                dense = cuda.dense

                def call(*args, _fn=fn, **kwargs):
                    return _fn(*[dense(a) if isinstance(a, Tensor) else a for a in args], **kwargs)
                call.__name__, call.__doc__ = name, fn.__doc__
                if hasattr(fn, "native_low"):   # opmath asks it whether the 16-bit operands may pass unwidened
                    call.native_low = fn.native_low
                fn = call
            fn = adapt(name, fn, cuda.cast, cuda.copy_into)   # float16/bfloat16 and narrow ints: opmath.py
            # writers write into their first argument (its own storage, kept as it is); the others are read
            fn = hold_args(name, fn, 1 if writer else 0)
            # the common call (positional, plain tensors, no widening) in one pass; the layers above otherwise
            fn = fast_call(name, raw, 1 if writer else 0, None if writer else cuda.dense, fn)
        setattr(self, name, fn)
        return fn


_cuda = cuda_backend = _DenseCuda()


try:   # numpy >= 2: np.errstate is a context variable holding an "extobj" (numpy's private names; see _quiet)
    from numpy._core.umath import _extobj_contextvar, _make_extobj
except ImportError:   # numpy 1.x, or a numpy that renamed them: np.errstate per call
    _extobj_contextvar = _make_extobj = None  # type: ignore[assignment,misc]

_QUIET: dict = {}   # the caller's numpy error state -> the same with every floating-point error ignored


def _quiet_state(cur):
    """The 'ignore all' state derived from cur (its buffer size and error callback kept), made once per state."""
    if len(_QUIET) > 64:   # a program calling np.seterr in a loop makes a new state each time
        _QUIET.clear()
    q = _QUIET[cur] = _make_extobj(all="ignore")   # built from the current state, which is cur
    return q


def quietly(fn, *args):
    """fn(*args) as `with np.errstate(all="ignore")` would run it, without building a new error state per call
    (that costs about as much as a small numpy op): the state for the caller's current one is made once.

    Args:
        fn: a function of numpy arrays.
        *args: its arguments.

    Returns:
        fn's result (inf/nan where numpy would warn).

    Example:
        >>> import numpy as np
        >>> quietly(np.divide, np.ones(1), np.zeros(1))
        array([inf])
    """
    if _extobj_contextvar is None:
        with _np.errstate(all="ignore"):
            return fn(*args)
    cur = _extobj_contextvar.get()
    token = _extobj_contextvar.set(_QUIET.get(cur) or _quiet_state(cur))
    try:
        return fn(*args)
    finally:
        _extobj_contextvar.reset(token)


def _quiet(fn):
    """fn wrapped to run as quietly() runs it (keyword arguments too)."""
    if _extobj_contextvar is None:
        def call(*args, **kwargs):
            with _np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        return call

    def call(*args, **kwargs):
        cur = _extobj_contextvar.get()
        token = _extobj_contextvar.set(_QUIET.get(cur) or _quiet_state(cur))
        try:
            return fn(*args, **kwargs)
        finally:
            _extobj_contextvar.reset(token)
    return call


class _QuietCpu:
    """The numpy backend as the ops call it: IEEE results (inf for 1/0, nan for 0/0 or log(-1)) without numpy's
    RuntimeWarnings, as PyTorch and a GPU give them."""

    def __getattr__(self, name):
        fn = getattr(_cpu_module, name)
        if callable(fn) and not name.startswith("_") and not isinstance(fn, type):
            call = _quiet(fn)
            call.__name__, call.__doc__ = name, fn.__doc__
            fn = call
        setattr(self, name, fn)
        return fn


cpu = _QuietCpu()


def backend(op, *tensors):
    """The backend module for tensors that must share a device (RuntimeError naming both otherwise)."""
    if len(tensors) == 2 and type(tensors[0]) is Tensor and type(tensors[1]) is Tensor \
            and tensors[0]._device is tensors[1]._device:   # a binary op's operands on one device, the usual case
        dev = tensors[0]._device
    else:
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
    if g.shape != var.shape and tuple(g.shape) != tuple(var.shape):
        raise RuntimeError(f"Function AccumulateGrad returned an invalid gradient - got {list(g.shape)} but expected "
                           f"shape compatible with {list(var.shape)}")
    if g.device is not var.device and g.device != var.device:
        raise RuntimeError(f"gradient for a tensor on {var.device} was computed on {g.device}")
    be = backend_of(var)
    if g.dtype is not var.dtype:
        g = g.to(dtype=var.dtype)
    if var._grad is None:
        # the cpu backend has no new_grad (and asking hasattr of it raises and catches an AttributeError)
        var._grad = be.clone(g) if be is cpu else be.new_grad(var, g)
    else:
        cur = var._grad
        if cur.device != var.device:
            raise RuntimeError("the existing .grad is on another device than its tensor")
        be.add_(cur, g)


# autograd's nodes add into a leaf's .grad and make zero gradients with the functions above; autograd is imported
# by the ops (Function), so it is handed them here rather than importing this module back
from ..autograd import function as _function  # noqa: E402

_function.GRAD_OPS.accumulate_leaf_grad = accumulate_leaf_grad
_function.GRAD_OPS.zeros_like_meta = zeros_like_meta
