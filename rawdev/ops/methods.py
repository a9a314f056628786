"""Installs the ops on rawdev.Tensor: every declared op's method (registry.install), the operators,
the fused in-place arithmetic, indexing, backward and the differentiable to().

The one place that sets attributes on the Tensor class from the ops layer; run by rawdev.ops on import.
"""
from ..autograd import engine
from ..autograd import hooks as _hooks
from ..autograd.grad_mode import is_grad_enabled
from ..device import as_device
from ..tensor import memfmt as _mf
from ..tensor.core import Tensor, _parse_to
from . import binary as F
from . import convert, index, registry, shape, unary
from .dispatch import backend, backend_of
from .inplace import apply_inplace, check_inplace_graph

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


def _add_(self, other, *, alpha=1):
    """self += alpha * other in place (the fused axpy kernel on cuda)."""
    if check_inplace_graph(self, (other,), through_views=True):
        return apply_inplace(self, F.add, "add_", (other,), {"alpha": alpha})
    if isinstance(other, Tensor):
        backend("add_", self, other).add_(self, other, alpha)
    else:
        B = backend_of(self)
        B.add_(self, B.full((), other * alpha, self.dtype, self.device))
    return self


def _sub_(self, other, *, alpha=1):
    return _add_(self, other, alpha=-alpha)


def _mul_(self, other):
    if check_inplace_graph(self, (other,), through_views=True):
        return apply_inplace(self, F.mul, "mul_", (other,), {})
    if isinstance(other, Tensor):
        B = backend("mul_", self, other)
        B.copy_into(self, B.mul(self, other, self.dtype))
    else:
        backend_of(self).scale_(self, other)
    return self


def _div_(self, other):
    if check_inplace_graph(self, (other,), through_views=True):
        return apply_inplace(self, F.div, "div_", (other,), {})
    if isinstance(other, Tensor):
        B = backend("div_", self, other)
        B.copy_into(self, B.div(self, other, self.dtype))
        return self
    return _mul_(self, 1.0 / other)


def _leaf_checked(raw):
    """copy_/fill_/zero_ with PyTorch's refusal to write into a leaf that requires grad under grad mode
    (parameters are set under torch.no_grad())."""
    def write(self, *args, **kwargs):
        if self.requires_grad and self.grad_fn is None and is_grad_enabled():
            raise RuntimeError(("a view of " if self._base is not None else "") + "a leaf Variable that requires "
                               "grad is being used in an in-place operation.")
        return raw(self, *args, **kwargs)
    write.__name__, write.__doc__ = raw.__name__, raw.__doc__
    return write


def _inplace_view(name):
    """x.t_() / transpose_ / squeeze_ / unsqueeze_: x itself becomes the view (same storage, new sizes and
    strides); under autograd it takes the view's node, and a leaf that requires grad is refused (PyTorch)."""
    def method(self, *args, **kwargs):
        if self.requires_grad and self.grad_fn is None and is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        v = getattr(Tensor, name)(self, *args, **kwargs)
        self._assign(v)
        if v.grad_fn is not None:
            self.grad_fn = v.grad_fn
        return self
    method.__name__ = name + "_"
    method.__doc__ = f"In place {name}: this tensor becomes the view {name}(...) returns."
    return method


def _new(self, *args, **kwargs):
    """The legacy constructor: x.new() is empty, x.new(2, 3) or x.new(size) uninitialized, x.new(data) a copy of
    data; x's dtype and device unless given."""
    if len(args) == 1 and not isinstance(args[0], int) and not _is_size(args[0]):
        return self.new_tensor(args[0], **kwargs)
    if not args:
        return self.new_empty((0,), **kwargs)
    return self.new_empty(*args, **kwargs)


def _record_stream(self, stream):
    """PyTorch's Tensor.record_stream: the tensor's memory is used on `stream` too, so it is not reused before the
    work queued on `stream` (up to when the tensor is freed) is done. The caching pool frees a block in its
    allocation stream's order; with streams recorded, the free first waits for an event on each of them.

    Args:
        stream: a rawdev.cuda.Stream of the tensor's device.

    Example:
        >>> s = rawdev.cuda.Stream()
        >>> with rawdev.cuda.stream(s):
        ...     y = x * 2          # x was made on the default stream, used on s
        >>> x.record_stream(s)
    """
    if not self.is_cuda:
        raise RuntimeError("record_stream is only supported for CUDA tensors")
    block = getattr(self._buf, "block", None)
    rt = getattr(stream, "_rt", None)
    if rt is None:
        raise TypeError(f"record_stream(): argument 'stream' must be Stream, not {type(stream).__name__}")
    if block is not None and rt is not block.stream and rt not in block.used_on:
        block.used_on.append(rt)


def _share_memory_(self):
    """Move this cpu tensor's values into shared memory (an anonymous shared mapping), so processes forked from
    now on (multiprocessing's "fork" start method, Hogwild training) read and write the same values. A no-op
    for cuda tensors and tensors already shared. Views of the tensor made before the call keep the old memory
    (PyTorch moves the whole storage; rawdev moves this tensor's values)."""
    if self.is_cuda or _is_shared(self):
        return self
    import mmap

    import numpy as np
    old = self._host_storage()
    mm = mmap.mmap(-1, max(self.numel() * self.element_size(), 1))
    arr = np.frombuffer(mm, dtype=old.dtype, count=self.numel()).reshape(tuple(self.shape))
    arr[...] = old
    self._set_cpu(arr, self._dtype)      # the array keeps the mapping alive (it is the array's base)
    return self


def _is_shared(self):
    """True for cuda tensors (PyTorch's answer) and cpu tensors moved by share_memory_."""
    import mmap

    import numpy as np
    if self.is_cuda:
        return True
    owner = self._root
    while isinstance(owner, np.ndarray):     # views of views of the array over the mapping
        owner = owner.base
    if isinstance(owner, memoryview):        # np.frombuffer keeps a memoryview of the mapping
        owner = owner.obj
    return isinstance(owner, mmap.mmap)


def _is_size(obj):
    return isinstance(obj, (tuple, list)) and all(isinstance(d, int) for d in obj) and type(obj) is not list


def _imag(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _get_device(self):
    """The cuda device index, or -1 for a cpu tensor."""
    return self.device.index or 0 if self.is_cuda else -1


def _pin_memory(self, device=None):
    """A copy in page-locked host memory (so .to('cuda', non_blocking=True) is asynchronous)."""
    import numpy as np

    from ..runtime import is_available, memory
    if self.is_cuda:
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    arr = np.ascontiguousarray(self._host_storage())
    buf = memory.PinnedBuffer(max(arr.nbytes, 1), owner="pinned tensor")
    view = buf.array[:arr.nbytes].view(arr.dtype).reshape(arr.shape)
    view[...] = arr
    return Tensor._make_cpu(view, self.dtype)


def _is_pinned(self, device=None):
    """Whether this cpu tensor's storage is page-locked host memory."""
    from ..runtime import is_available, memory
    if self.is_cuda or self.numel() == 0 or not is_available():
        return False
    return memory.pointer_attributes(self._host_storage().ctypes.data)["MEMORY_TYPE"] == 1


def _rsub(self, other):
    return F.sub(other, self)


def _rtruediv(self, other):
    return F.div(other, self)


def _rmatmul(self, other):
    return registry.public("matmul")(other, self)


def _install_comparisons(T):
    """eq/ne/lt/le/gt/ge as methods and operators. An operand that is neither a tensor nor a number gives
    NotImplemented, so `t == None` is False as in PyTorch; __hash__ stays identity (state dicts key on tensors)."""
    for name, dunder in (("eq", "__eq__"), ("ne", "__ne__"), ("lt", "__lt__"), ("le", "__le__"), ("gt", "__gt__"),
                         ("ge", "__ge__")):
        setattr(T, dunder, _comparison_operator(getattr(F, name)))


def _comparison_operator(fn):
    def op(self, other):
        if not (isinstance(other, Tensor) or F._is_scalar(other)):
            return NotImplemented
        return fn(self, other)
    return op


def _to(self, *args, **kwargs):
    """to(device=None, dtype=None, non_blocking=False, copy=False) / to(dtype) / to(other_tensor).

    Returns self when nothing changes (and copy=False), else a new tensor; this tensor is untouched. Inside
    the graph (requires grad, grad mode on) the copy is differentiable (ToCopyBackward0); a dtype change on
    one cuda device is one cast kernel.
    """
    fmt = kwargs.pop("memory_format", None)
    dev, dt, non_blocking, copy = _parse_to(args, kwargs)
    dev = as_device(dev) if dev is not None else self.device
    dt = dt or self.dtype
    if fmt is not None and fmt is not _mf.preserve_format:
        _mf.check(fmt, self.ndim)
        out = _to(self, dev, dt, non_blocking=non_blocking, copy=copy)
        return out if out.is_contiguous(memory_format=fmt) else shape.contiguous(out, memory_format=fmt)
    if dev == self.device and dt is self.dtype and not copy:
        return self
    if self.requires_grad and dt.is_floating_point and is_grad_enabled():
        return convert.to_copy(self, dev, dt, non_blocking)
    return convert.convert(self, dev, dt, non_blocking)


def install():
    global _installed
    if _installed:
        return
    _installed = True
    T = Tensor
    registry.install(T)
    T.to = _to
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
    pow_ = registry.public("pow")             # pow and matmul are on autocast's lists: their public forms
    T.__pow__ = lambda s, e: pow_(s, e)
    from . import binary_math as M
    T.__rpow__ = lambda s, b: pow_(b, s)
    T.__mod__ = lambda s, o: M.remainder(s, o)
    T.__rmod__ = lambda s, o: M.remainder(o, s)
    T.__floordiv__ = lambda s, o: M.floor_divide(s, o)
    T.__rfloordiv__ = lambda s, o: M.floor_divide(o, s)
    T.__and__ = T.__rand__ = lambda s, o: M.bitwise_and(s, o)
    from . import pointwise_composed as P2
    T.__lshift__ = lambda s, o: P2.bitwise_left_shift(s, o)
    T.__rshift__ = lambda s, o: P2.bitwise_right_shift(s, o)
    T.__rlshift__ = lambda s, o: P2.bitwise_left_shift(o, s)
    T.__rrshift__ = lambda s, o: P2.bitwise_right_shift(o, s)
    T.__ilshift__ = lambda s, o: s.bitwise_left_shift_(o)
    T.__irshift__ = lambda s, o: s.bitwise_right_shift_(o)
    T.__or__ = T.__ror__ = lambda s, o: M.bitwise_or(s, o)
    T.__xor__ = T.__rxor__ = lambda s, o: M.bitwise_xor(s, o)
    T.__invert__ = lambda s: M.bitwise_not(s)
    matmul = registry.public("matmul")
    T.__matmul__ = lambda s, o: matmul(s, o)
    T.__rmatmul__ = _rmatmul
    T.__abs__ = lambda s: unary.abs(s)
    T.__iadd__, T.__isub__, T.__imul__, T.__itruediv__ = _add_, _sub_, _mul_, _div_
    T.add_, T.sub_, T.mul_, T.div_ = _add_, _sub_, _mul_, _div_
    T.subtract_, T.multiply_, T.divide_, T.true_divide_ = _sub_, _mul_, _div_, _div_
    T.copy_, T.fill_, T.zero_ = _leaf_checked(T.copy_), _leaf_checked(T.fill_), _leaf_checked(T.zero_)
    _install_comparisons(T)
    T.__getitem__ = index.getitem
    T.__setitem__ = index.setitem
    T.backward = _backward
    for name in ("t", "transpose", "squeeze", "unsqueeze"):
        setattr(T, name + "_", _inplace_view(name))
    T.swapaxes_ = T.swapdims_ = T.transpose_
    T.get_device = _get_device
    T.new = _new
    T.record_stream = _record_stream
    T.share_memory_, T.is_shared = _share_memory_, _is_shared
    # what generic code asks of a tensor before treating it as dense: rawdev's are dense, strided, on cpu/cuda
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn", "is_mps", "is_xpu",
                 "is_nested", "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mtia"):
        setattr(T, flag, property(lambda s: False))
    T.layout = property(lambda s: _mf.strided)
    T.dequantize = lambda s: s.float()   # PyTorch's dequantize of an unquantized tensor: its float32 values
    T.to_dense = lambda s, dtype=None, *, masked_grad=None: s if dtype is None else s.to(dtype=dtype)
    T.ndimension = lambda s: s.ndim
    T.is_same_size = lambda s, other: tuple(s.shape) == tuple(other.shape)
    T.is_neg = lambda s: False                    # rawdev has no lazy negation views
    T.is_inference = lambda s: False              # inference_mode makes ordinary tensors here (no_grad + a flag)
    from . import activation
    T.hardshrink = lambda s, lambd=0.5: activation.hardshrink(s, lambd)
    T.pin_memory, T.is_pinned = _pin_memory, _is_pinned
    T.H = T.mH = property(lambda s: s.mT if s.ndim > 2 else s.t())
    T.real = property(lambda s: s)                # real tensors only: the real part is the tensor itself
    T.imag = property(_imag)
    T.retain_grad = _retain_grad
    T.register_hook = _hooks.register_hook
    T.register_post_accumulate_grad_hook = _hooks.register_post_accumulate_grad_hook
    T.retains_grad = property(lambda s: s.grad_fn is not None and s.grad_fn._retained is not None
                              and s.grad_fn._retained() is s)
