"""rawdev.Tensor: storage + shape + strides + storage offset + dtype + device. No math lives here.

Storage layout (the contract other layers build on; this module is the only code that writes these fields):
  _shape, _strides, _soff : PyTorch's view metadata: sizes, strides in elements, storage offset in elements.
  cpu  : `_root` is a 1-D numpy array of the *storage* dtype (uint16 for bfloat16) covering the storage;
         `_data` is the numpy view of it with the tensor's shape and strides (what the cpu ops read).
         `_buf` keeps alive whatever owns the memory when it is not numpy's (a PinnedBuffer after a
         non-blocking .cpu()), and `_pending` is an event that must complete before the host may read
         `_data` (a DtoH still in flight).
  cuda : `_data`/`_root` are None; the storage is `_buf` (a runtime DeviceBuffer, possibly a module's
         arena) and `_offset` is the byte offset of the tensor's first element in it, so
         `data_ptr() = _buf.ptr + _offset` and the storage starts `_soff` elements before it.
         Device work on it is ordered on the device's compute stream.
Views (view, transpose, expand, slicing, ...) share the storage and the version counter `_vc` (a
one-element list; `_version` reads it; in-place writers call `_bump_version()`); `_base` is the tensor
whose storage a view looks at. Kernels take contiguous operands: `contiguous()` copies a strided view
with one strided-copy launch (rawdev.tensor.strided).
"""

from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes as _dt
from ..device import CPU, as_device
from ..device import device as _device_cls
from . import layout as _layout
from .size import Size, parse_size

__all__ = ["Tensor"]


# PyTorch's warning when a non-leaf's .grad is read: it is never populated unless retain_grad() was called.
_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


def _root_of(arr):
    """(1-D storage array, element strides) covering a numpy array's elements without copying; None when
    its strides cannot be element strides (negative, or not a multiple of the item size)."""
    item = arr.itemsize
    if arr.flags.c_contiguous:
        return arr.reshape(-1), _layout.contiguous_strides(arr.shape)
    if any(s < 0 or s % item for s in arr.strides):
        return None
    strides = tuple(s // item for s in arr.strides)
    span = _layout.span(arr.shape, strides)
    return np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(item,)), strides


class _Parts:
    """The modules a tensor's methods hand device work to: the device half of the storage (cuda_io), moves
    (moves), the legacy type names (legacy) and DLPack (dlpack). They build on this module, so it does not import
    them back: rawdev/tensor/__init__.py sets these once it has imported them, before any tensor exists."""
    cuda_io: Any = None
    moves: Any = None
    legacy: Any = None
    dlpack: Any = None


_parts = _Parts()


# per-tensor autograd state kept in __dict__ (rawdev.autograd): never carried to a deepcopy
_AUTOGRAD_PRIVATE = frozenset({"_accumulate_grad", "_output_nr", "_rewrites", "_replay", "_seen_rewrites"})

class Tensor:
    if TYPE_CHECKING:
        # The ops (x.relu(), x.sum(), x + y, ...) are generated from their declarations (rawdev.ops.registry)
        # and put on the class at import: to a type checker they are attributes of type Any.
        def __getattr__(self, name: str) -> Any: ...

    __slots__ = ("_data", "_root", "_buf", "_offset", "_shape", "_strides", "_soff", "_dtype", "_device", "_vc",
                 "_pending", "_base", "_requires_grad", "_grad", "grad_fn", "__dict__", "__weakref__")

    # ---------------------------------------------------------------- construction
    def __init__(self, *args: Any, dtype: _dt.dtype | None = None, device: Any = None) -> None:
        """Tensor() / Tensor(2, 3) (uninitialized float32) / Tensor([1, 2]) (data, float32)."""
        dt = _dt.as_dtype(dtype) or _dt.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], (int, Size, tuple)):
            src = args[0]
            arr = src._values() if isinstance(src, Tensor) else np.asarray(src)
            self._init_cpu(np.ascontiguousarray(_dt.to_storage(arr, dt)), dt)
        else:
            shape = parse_size(args) if args else Size((0,))
            self._init_cpu(np.empty(shape, dtype=dt.storage), dt)
        if device is not None and as_device(device).type == "cuda":
            self._assign(self.to(device))

    def _init_cpu(self, arr, dt, buf=None, pending=None):
        self._set_cpu(arr, dt, buf, pending)
        self._vc, self._base = [0], None
        self._requires_grad, self._grad, self.grad_fn = False, None, None

    @classmethod
    def _make_cpu(cls, arr, dt=None, requires_grad=False, buf=None, pending=None):
        """Wrap a numpy storage array (shared, not copied; a strided one keeps its strides)."""
        t = cls.__new__(cls)
        dt = dt or _dt.from_numpy_dtype(arr.dtype)
        if dt.is_quantized:   # an op made a result of a quantized dtype: rawdev.tensor.quantized's error
            from ..errors import quantized_cpu_error
            raise quantized_cpu_error(None)
        if arr.dtype != dt.storage:
            raise TypeError(f"storage array dtype {arr.dtype} does not match {dt}")
        t._init_cpu(arr, dt, buf, pending)
        t._requires_grad = bool(requires_grad)
        return t

    @classmethod
    def _make_cpu_contiguous(cls, arr, dt):
        """_make_cpu for a C-contiguous array already in dt's storage type (what the cpu backend returns), without
        re-checking either: every op's result is made here."""
        t = cls.__new__(cls)
        shape = arr.shape
        t._data, t._root, t._strides = arr, arr.reshape(-1), _layout.contiguous_strides(shape)
        t._buf, t._offset, t._pending, t._soff = None, 0, None, 0
        t._shape, t._dtype, t._device = tuple.__new__(Size, shape), dt, CPU
        t._vc, t._base = [0], None
        t._requires_grad, t._grad, t.grad_fn = False, None, None
        return t

    @classmethod
    def _make_cuda(cls, buf, offset, shape, dt, dev, requires_grad=False, strides=None, soff=0):
        """Wrap bytes of a runtime DeviceBuffer: first element at `buf.ptr + offset`, on device dev."""
        t = cls.__new__(cls)
        t._set_cuda(buf, offset, Size(shape), dt, as_device(dev), strides, soff)
        t._vc, t._base = [0], None
        t._requires_grad, t._grad, t.grad_fn = bool(requires_grad), None, None
        return t

    @classmethod
    def _make_cuda_contiguous(cls, buf, shape, dt, dev):
        """_make_cuda for a fresh contiguous tensor at the start of buf (every cuda op's output is made here),
        with _make_cuda's conversions done only where they change something."""
        t = cls.__new__(cls)
        if type(shape) is not Size:
            shape = Size(shape)
        t._data, t._root, t._buf, t._offset, t._pending, t._soff = None, None, buf, 0, None, 0
        t._shape, t._dtype, t._strides = shape, dt, _layout.contiguous_strides(shape)
        t._device = dev if type(dev) is _device_cls and dev._index is not None else as_device(dev)
        t._vc, t._base = [0], None
        t._requires_grad, t._grad, t.grad_fn = False, None, None
        return t

    def _set_cuda(self, buf, offset, shape, dt, dev, strides=None, soff=0):
        self._data, self._root, self._buf, self._offset, self._pending = None, None, buf, int(offset), None
        self._shape, self._dtype, self._device = shape, dt, dev
        self._strides = tuple(strides) if strides is not None else _layout.contiguous_strides(shape)
        self._soff = int(soff)

    def _set_cpu(self, arr, dt, buf=None, pending=None):
        found = _root_of(arr)
        if found is None:   # numpy's negative or odd strides have no element-stride form: keep a copy
            arr = np.ascontiguousarray(arr)
            found = _root_of(arr)
        self._root, self._strides = found
        self._data, self._buf, self._offset, self._pending = arr, buf, 0, pending
        # numpy's shape is a tuple of ints already: Size's per-element int() is not needed
        self._shape, self._dtype, self._device, self._soff = tuple.__new__(Size, arr.shape), dt, CPU, 0

    def _assign(self, other):
        """Make self use other's storage and layout (shape/strides/dtype/device follow): `param.data = t`, moves."""
        for f in ("_data", "_root", "_buf", "_offset", "_pending", "_shape", "_strides", "_soff", "_dtype",
                  "_device"):
            setattr(self, f, getattr(other, f))

    def _view(self, shape, strides, soff, cls=None):
        """A view of this tensor's storage with other sizes/strides/storage offset; shares the version counter."""
        t = (cls or Tensor).__new__(cls or Tensor)
        shape, strides = Size(shape), tuple(int(s) for s in strides)
        delta = soff - self._soff
        t._shape, t._strides, t._soff, t._dtype, t._device = shape, strides, int(soff), self._dtype, self._device
        t._buf, t._pending = self._buf, self._pending
        if self._root is not None:
            root = self._root
            item = root.itemsize
            t._root, t._offset = root, 0
            try:   # the 1-D root's buffer seen with this layout: what as_strided makes, at a tenth of its cost
                t._data = np.ndarray(shape, root.dtype, root, soff * item, tuple(s * item for s in strides))
            except (ValueError, TypeError):   # e.g. an empty view at the end of its storage: past the buffer
                t._data = np.lib.stride_tricks.as_strided(root[soff:] if soff < root.size else root[:0],
                                                          shape=tuple(shape), strides=tuple(s * item for s in strides))
        else:
            t._root, t._data = None, None
            t._offset = self._offset + delta * self._dtype.itemsize
        t._vc, t._base = self._vc, (self._base if self._base is not None else self)
        t._requires_grad, t._grad, t.grad_fn = False, None, None
        return t

    def _alias(self, shape=None, cls=None):
        """A view with the same layout (or a contiguous reshape of a contiguous tensor)."""
        if shape is None:
            root, data = self._root, self._data
            if root is None and data is None:   # cuda: the same buffer at the same byte offset
                offset = self._offset
            elif root is None or data is None:
                return self._view(self._shape, self._strides, self._soff, cls)
            else:
                offset = 0
            # same layout: the fields as they are (on the cpu this tensor's own numpy view is the one _view would
            # build, and as_strided costs microseconds): detach() runs for every tensor an op saves for backward
            t = (cls or Tensor).__new__(cls or Tensor)
            t._shape, t._strides, t._soff, t._dtype, t._device = self._shape, self._strides, self._soff, self._dtype, \
                self._device
            t._buf, t._pending, t._root, t._offset, t._data = self._buf, self._pending, root, offset, data
            t._vc, t._base = self._vc, (self._base if self._base is not None else self)
            t._requires_grad, t._grad, t.grad_fn = False, None, None
            return t
        return self._view(shape, _layout.contiguous_strides(shape), self._soff, cls)

    # ---------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        return self._shape

    def size(self, dim: builtins.int | None = None) -> Any:
        if dim is None:
            return self._shape
        return self._shape[self._wrap_dim(dim)]

    @property
    def dtype(self) -> _dt.dtype:
        return self._dtype

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def is_cuda(self) -> builtins.bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> builtins.bool:
        return self._device.type == "cpu"

    @property
    def ndim(self) -> builtins.int:
        return len(self._shape)

    def dim(self) -> builtins.int:
        return len(self._shape)

    def numel(self) -> builtins.int:
        return self._shape.numel()

    def nelement(self) -> builtins.int:
        return self.numel()

    def element_size(self) -> builtins.int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> builtins.int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> builtins.int:
        return self.numel() * self._dtype.itemsize

    def is_floating_point(self) -> builtins.bool:
        return self._dtype.is_floating_point

    def is_contiguous(self, memory_format: Any = None) -> builtins.bool:
        if memory_format is None:
            return _layout.is_contiguous(self._shape, self._strides)
        from . import memfmt as _mf
        return _mf.is_in_format(self._shape, self._strides, memory_format)

    def stride(self, dim: builtins.int | None = None) -> Any:
        """Strides in elements: a tuple, or one axis's stride."""
        if dim is None:
            return self._strides
        return self._strides[self._wrap_dim(dim)]

    def storage_offset(self) -> builtins.int:
        """Where the first element sits in the storage, in elements."""
        return self._soff

    def data_ptr(self) -> builtins.int:
        """Address of the first element: a host address on cpu, a device address on cuda."""
        if self._data is not None:
            return self._data.ctypes.data if self._data.size else 0
        return self._buf.ptr + self._offset if self._buf is not None else 0

    def _storage_numel(self):
        """How many elements the storage holds (for a tensor inside an arena: up to the arena's end)."""
        if self._root is not None:
            return self._root.size
        if self._buf is None:
            return 0
        return (self._buf.nbytes - (self._offset - self._soff * self._dtype.itemsize)) // self._dtype.itemsize

    def _contiguous_copy(self, owner=None):
        """A new contiguous tensor with this one's values (no graph node; rawdev.ops records CloneBackward0)."""
        if self._data is not None:   # a C-ordered copy of the storage array: in its dtype, contiguous
            return Tensor._make_cpu_contiguous(np.array(self._host_storage(), copy=True, order="C"), self._dtype)
        return _parts.cuda_io.clone(self, owner)

    @property
    def _version(self):
        return self._vc[0]

    def _bump_version(self):
        self._vc[0] += 1

    @property
    def is_leaf(self) -> builtins.bool:
        return self.grad_fn is None

    @property
    def requires_grad(self) -> builtins.bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: builtins.bool) -> None:
        flag = bool(flag)
        if self.grad_fn is not None and not flag:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
        if flag and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = flag

    def requires_grad_(self, requires_grad: builtins.bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    def _retains(self):
        ref = getattr(self.grad_fn, "_retained", None)
        return ref is not None and ref() is self

    @property
    def grad(self) -> Tensor | None:
        if self._grad is None and self.grad_fn is not None and not self._retains():
            import warnings
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, g: Tensor | None) -> None:
        if g is not None:
            if not isinstance(g, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(g).__name__}")
            if g is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if g._dtype is not self._dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if g._device != self._device:
                raise RuntimeError("assigned grad has data located on a different device")
            if g._shape != self._shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = g

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def data(self) -> Tensor:
        """A detached alias of the same storage; assigning replaces this tensor's storage."""
        return self.detach()

    @data.setter
    def data(self, other: Tensor) -> None:
        if not isinstance(other, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(other).__name__}")
        self._assign(other)

    def type(self, dtype: Any = None, non_blocking: builtins.bool = False) -> Any:
        """No argument: the legacy type name ("rawdev.FloatTensor", "rawdev.cuda.FloatTensor"). With one: this
        tensor as that type (self when it already is): a dtype, a legacy class (rawdev.LongTensor,
        rawdev.cuda.FloatTensor) or its name ('torch.cuda.LongTensor', 'rawdev.FloatTensor'), which also moves it."""
        legacy_type, type_name = _parts.legacy.legacy_type, _parts.legacy.type_name
        if dtype is None:
            return type_name(self._dtype, self.is_cuda)
        dt, cuda = legacy_type(dtype)
        dev = None if cuda is None or cuda == self.is_cuda else ("cuda" if cuda else "cpu")
        if dt is self._dtype and dev is None:
            return self
        return self.to(device=dev, dtype=dt, non_blocking=non_blocking)

    # ---------------------------------------------------------------- views (metadata only)
    def _wrap_dim(self, dim, ndim=None):
        n = self.ndim if ndim is None else ndim
        lo, hi = (-n, n - 1) if n else (-1, 0)
        dim = operator.index(dim)
        if not lo <= dim <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
        return dim % n if n else 0

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    # ---------------------------------------------------------------- host values
    @classmethod
    def _from_values(cls, values, dt):
        return cls._make_cpu(_dt.to_storage(values, dt), dt)

    def _host_storage(self):
        """The cpu storage array, after any DtoH still in flight into it has completed."""
        if self._pending is not None:
            self._pending.synchronize()
            self._pending = None
        return self._data

    def _storage_copy(self):
        """A fresh contiguous host numpy array of the values' storage bytes (reads the device when on cuda)."""
        if self._data is not None:
            return np.array(self._host_storage(), copy=True, order="C")
        return _parts.cuda_io.download(self)

    def _values(self):
        """numpy array of the values (float32 for bfloat16); shares memory on cpu where it can."""
        if self._data is not None:
            return _dt.to_values(self._host_storage(), self._dtype)
        return _dt.to_values(self._storage_copy(), self._dtype)

    def numpy(self, *, force: builtins.bool = False) -> np.ndarray:
        """The cpu storage as numpy, shared (bfloat16 comes back as float32 values, a copy)."""
        if self.is_cuda and not force:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to "
                            f"copy the tensor to host memory first.")
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self._values()

    def __array__(self, dtype=None, copy=None):
        if self.is_cuda:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to "
                            f"copy the tensor to host memory first.")
        v = self._values()
        if dtype is not None:
            v = v.astype(dtype, copy=bool(copy))
        elif copy:
            v = v.copy()
        return v

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface v3: pointer, shape, typestr and the compute stream that orders the data."""
        if not self.is_cuda:
            raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {self.type()} "
                                 f"If CUDA data is required use tensor.cuda() to copy tensor to device memory.")
        if self.requires_grad:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. If gradients "
                               "aren't required, use var.detach() to get Variable that doesn't require grad.")
        if self._dtype is _dt.bfloat16:
            raise TypeError("bfloat16 has no __cuda_array_interface__ typestr")
        handle = _parts.cuda_io.stream_handle(self._device)
        return {"version": 3, "shape": tuple(self._shape), "typestr": self._dtype.storage.str,
                "data": (self.data_ptr() if self.numel() else 0, False),
                "strides": None if self.is_contiguous() else tuple(st * self.itemsize for st in self._strides),
                "stream": handle if handle else 1}  # 0 is not allowed by the spec: 1 = legacy default

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this tensor, shared (rawdev.tensor.dlpack). stream: the consumer's stream handle,
        made to wait for rawdev's queued work."""
        return _parts.dlpack.to_dlpack(self, stream)

    def __dlpack_device__(self):
        return _parts.dlpack.dlpack_device(self)

    def item(self) -> builtins.int | builtins.float | builtins.bool:
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._values().reshape(-1)[0].item()

    def tolist(self) -> Any:
        return self._values().tolist()

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self):
        self._check_one_element()
        return float(self.item())

    def __int__(self):
        self._check_one_element()
        return int(self.item())

    def _check_one_element(self):
        # float()/int() say it differently from item() in PyTorch, and raise ValueError, not RuntimeError.
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")

    def __index__(self):
        if self._dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __repr__(self):
        from .printing import tensor_repr
        return tensor_repr(self)

    def __format__(self, format_spec):
        """A 0-d tensor formats like its number (f"{loss:.4f}"); others as object does (str, or TypeError
        for a format spec), as PyTorch's."""
        if self.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    # ---------------------------------------------------------------- copies and in-place writes
    def detach(self) -> Tensor:
        t = self._alias()
        t._base = self._base
        return t

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self._requires_grad = False
        return self

    def _copy_storage(self):
        """A new contiguous tensor with a copy of the values and this requires_grad; no graph node (the ops
        layer's clone() records CloneBackward0 on top of this)."""
        t = self._contiguous_copy()
        t._requires_grad = self._requires_grad
        return t

    clone = _copy_storage   # until rawdev.ops installs the differentiable one

    def copy_(self, src: Tensor, non_blocking: builtins.bool = False) -> Tensor:
        """Copy src's values into this tensor's storage (cast to this dtype; src broadcast to this shape)."""
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
        if src._shape != self._shape:
            try:
                np.broadcast_shapes(tuple(src._shape), tuple(self._shape))
                if np.broadcast_shapes(tuple(src._shape), tuple(self._shape)) != tuple(self._shape):
                    raise ValueError
            except ValueError:
                raise RuntimeError(f"The size of tensor a ({self._shape[-1] if self.ndim else 1}) must match the "
                                   f"size of tensor b ({src._shape[-1] if src.ndim else 1}) at non-singleton "
                                   f"dimension {max(self.ndim - 1, 0)}") from None
        return self._write(src, non_blocking)

    def _write(self, src, non_blocking=False):
        """src's values into this tensor's storage: cast to this dtype, broadcast to this shape, any layout
        (a view writes its base). No autograd checks (copy_ and the in-place ops make them); bumps the version."""
        if self.is_cuda or src.is_cuda:
            _parts.cuda_io.copy_into(self, src, non_blocking=non_blocking)
        else:
            dst = self._host_storage()
            if src._dtype is self._dtype and src._shape == self._shape:
                np.copyto(dst, src._host_storage())
            else:
                vals = np.broadcast_to(src._values(), tuple(self._shape))
                np.copyto(dst, _dt.to_storage(vals, self._dtype))
        self._bump_version()
        return self

    def zero_(self) -> Tensor:
        if self._data is not None:
            self._host_storage()[...] = 0
        else:
            _parts.cuda_io.memset_zero(self)
        self._bump_version()
        return self

    def fill_(self, value: Any) -> Tensor:
        if isinstance(value, Tensor):
            if value.numel() != 1:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                                   f"{value.dim()} dimensions.")
            value = value.item()
        if self._data is not None:
            self._host_storage()[...] = _dt.to_storage(value, self._dtype)
        else:
            _parts.cuda_io.fill(self, value)
        self._bump_version()
        return self

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may "
                               "be because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        new = self._copy_storage()
        if type(self) is not Tensor:
            t = type(self).__new__(type(self))
            t._init_cpu(np.empty(0, np.float32), _dt.float32)
            t._assign(new)
            new = t
        new._requires_grad = self._requires_grad
        memo[id(self)] = new
        if self._grad is not None:
            import copy
            new._grad = copy.deepcopy(self._grad, memo)
        if self.__dict__:
            import copy
            # a copy is a new leaf: the autograd bookkeeping of the original (its AccumulateGrad node, which points
            # at the original, output numbers, view replay marks) stays behind, so the copy's gradients are its own
            own = {k: v for k, v in self.__dict__.items() if k not in _AUTOGRAD_PRIVATE}
            new.__dict__.update(copy.deepcopy(own, memo))
        return new

    # ---------------------------------------------------------------- moves and casts
    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """to(device=None, dtype=None, non_blocking=False, copy=False) / to(dtype) / to(other_tensor).

        Returns self when nothing changes (and copy=False), else a new tensor; this tensor is untouched.
        (rawdev.ops replaces this with the differentiable version that also casts on the device.)
        """
        dev, dt, non_blocking, copy = _parse_to(args, kwargs)
        dev = as_device(dev) if dev is not None else self._device
        dt = dt or self._dtype
        if dev == self._device and dt is self._dtype and not copy:
            return self
        return _parts.moves.transfer_tensor(self, dev, dt, non_blocking=non_blocking)

    def cuda(self, device: Any = None, non_blocking: builtins.bool = False) -> Tensor:
        dev = as_device("cuda" if device is None else device)  # an int is a cuda index, as in PyTorch
        if dev.type != "cuda":
            raise RuntimeError("Invalid device, must be cuda device")
        return self.to(dev, non_blocking=non_blocking)

    def cpu(self, non_blocking: builtins.bool = False) -> Tensor:
        return self.to(CPU, non_blocking=non_blocking)

    def float(self) -> Tensor:
        return self.to(dtype=_dt.float32)

    def half(self) -> Tensor:
        return self.to(dtype=_dt.float16)

    def bfloat16(self) -> Tensor:
        return self.to(dtype=_dt.bfloat16)

    def double(self) -> Tensor:
        return self.to(dtype=_dt.float64)

    def long(self) -> Tensor:
        return self.to(dtype=_dt.int64)

    def int(self) -> Tensor:
        return self.to(dtype=_dt.int32)

    def byte(self) -> Tensor:
        return self.to(dtype=_dt.uint8)

    def bool(self) -> Tensor:
        return self.to(dtype=_dt.bool)


def _parse_to(args, kwargs):
    """PyTorch's Tensor.to / Module.to overloads -> (device|None, dtype|None, non_blocking, copy)."""
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    non_blocking = bool(kwargs.pop("non_blocking", False))
    copy = bool(kwargs.pop("copy", False))
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    args = list(args)
    if args and isinstance(args[0], Tensor):
        other = args.pop(0)
        dev, dt = other.device, other.dtype
    elif args and (isinstance(args[0], (_dt.dtype, np.dtype))
                   or (isinstance(args[0], type) and issubclass(args[0], np.generic))):
        dt = args.pop(0)
    elif args and (args[0] is None or isinstance(args[0], (str, _device_cls, int))):
        dev = args.pop(0)
        if args and (args[0] is None or isinstance(args[0], (_dt.dtype, np.dtype))):
            dt = args.pop(0)
    if args and isinstance(args[0], bool):
        non_blocking = args.pop(0)
        if args and isinstance(args[0], bool):
            copy = args.pop(0)
    if args:
        raise TypeError(f"to() received an invalid combination of arguments - got {tuple(args)!r}")
    if isinstance(dev, int) and not isinstance(dev, bool):
        dev = _device_cls("cuda", dev)
    return dev, _dt.as_dtype(dt), non_blocking, copy
