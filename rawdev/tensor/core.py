"""rawdev.Tensor: contiguous storage + shape + dtype + device. No math lives here (autograd/ops add it).

Storage layout (the contract other layers build on):
  cpu  : `_data` is a C-contiguous numpy array of the *storage* dtype (uint16 for bfloat16) whose shape
         is the tensor's shape; views are numpy views of it. `_buf` keeps alive whatever owns the memory
         when it is not numpy's (a PinnedBuffer after a non-blocking .cpu()), and `_pending` is an event
         that must complete before the host may read `_data` (a DtoH still in flight).
  cuda : `_data` is None; the bytes are `_buf` (a runtime DeviceBuffer, possibly a module's arena) at byte
         offset `_offset`, `numel * itemsize` long, C-contiguous. `data_ptr()` = `_buf.ptr + _offset`.
         Device work on it is ordered on the device's compute stream.
`_vc` is the version counter, a one-element list shared by a tensor and its views/detached aliases
(`_version` reads it; in-place writers call `_bump_version()`).
"""

import operator

import numpy as np

from .. import dtypes as _dt
from ..device import CPU, as_device, device as _device_cls
from .size import Size, parse_size

__all__ = ["Tensor"]


# PyTorch's warning when a non-leaf's .grad is read: it is never populated unless retain_grad() was called.
_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


class Tensor:
    __slots__ = ("_data", "_buf", "_offset", "_shape", "_dtype", "_device", "_vc", "_pending", "_base",
                 "_requires_grad", "_grad", "grad_fn", "__dict__", "__weakref__")

    # ---------------------------------------------------------------- construction
    def __init__(self, *args, dtype=None, device=None):
        """Tensor() / Tensor(2, 3) (uninitialized float32) / Tensor([1, 2]) (data, float32)."""
        dt = _dt.as_dtype(dtype) or _dt.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], (int, Size, tuple)):
            src = args[0]
            arr = src._values() if isinstance(src, Tensor) else np.asarray(src)
            self._init_cpu(_dt.to_storage(arr, dt), dt)
        else:
            shape = parse_size(args) if args else Size((0,))
            self._init_cpu(np.empty(shape, dtype=dt.storage), dt)
        if device is not None and as_device(device).type == "cuda":
            self._assign(self.to(device))

    def _init_cpu(self, arr, dt, buf=None, pending=None):
        self._data, self._buf, self._offset, self._pending = arr, buf, 0, pending
        self._shape, self._dtype, self._device = Size(arr.shape), dt, CPU
        self._vc, self._base = [0], None
        self._requires_grad, self._grad, self.grad_fn = False, None, None

    @classmethod
    def _make_cpu(cls, arr, dt=None, requires_grad=False, buf=None, pending=None):
        """Wrap a C-contiguous numpy storage array (shared, not copied)."""
        t = cls.__new__(cls)
        dt = dt or _dt.from_numpy_dtype(arr.dtype)
        if arr.dtype != dt.storage:
            raise TypeError(f"storage array dtype {arr.dtype} does not match {dt}")
        if not arr.flags.c_contiguous:
            raise ValueError("rawdev tensors are contiguous: expected a C-contiguous array "
                             "(np.ascontiguousarray makes one)")
        t._init_cpu(arr, dt, buf, pending)
        t._requires_grad = bool(requires_grad)
        return t

    @classmethod
    def _make_cuda(cls, buf, offset, shape, dt, dev, requires_grad=False):
        """Wrap bytes of a runtime DeviceBuffer: `buf.ptr + offset`, shape, dtype, on device dev."""
        t = cls.__new__(cls)
        t._set_cuda(buf, offset, Size(shape), dt, as_device(dev))
        t._vc, t._base = [0], None
        t._requires_grad, t._grad, t.grad_fn = bool(requires_grad), None, None
        return t

    def _set_cuda(self, buf, offset, shape, dt, dev):
        self._data, self._buf, self._offset, self._pending = None, buf, int(offset), None
        self._shape, self._dtype, self._device = shape, dt, dev

    def _set_cpu(self, arr, dt, buf=None, pending=None):
        self._data, self._buf, self._offset, self._pending = arr, buf, 0, pending
        self._shape, self._dtype, self._device = Size(arr.shape), dt, CPU

    def _assign(self, other):
        """Make self use other's storage (shape/dtype/device follow): `param.data = t`, moves."""
        self._data, self._buf, self._offset, self._pending = other._data, other._buf, other._offset, other._pending
        self._shape, self._dtype, self._device = other._shape, other._dtype, other._device

    def _alias(self, shape=None, offset_elems=0, cls=None):
        """A view sharing storage and version counter; `shape` must cover a contiguous range."""
        t = (cls or Tensor).__new__(cls or Tensor)
        shape = self._shape if shape is None else Size(shape)
        if self._data is not None:
            flat = self._data.reshape(-1)
            n = shape.numel()
            arr = flat[offset_elems:offset_elems + n].reshape(shape)
            t._data, t._buf, t._offset, t._pending = arr, self._buf, 0, self._pending
        else:
            t._data, t._buf, t._pending = None, self._buf, None
            t._offset = self._offset + offset_elems * self._dtype.itemsize
        t._shape, t._dtype, t._device = shape, self._dtype, self._device
        t._vc, t._base = self._vc, (self._base if self._base is not None else self)
        t._requires_grad, t._grad, t.grad_fn = False, None, None
        return t

    # ---------------------------------------------------------------- metadata
    @property
    def shape(self):
        return self._shape

    def size(self, dim=None):
        if dim is None:
            return self._shape
        return self._shape[self._wrap_dim(dim)]

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_cpu(self):
        return self._device.type == "cpu"

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    def numel(self):
        return self._shape.numel()

    def nelement(self):
        return self.numel()

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self._dtype.itemsize

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_contiguous(self, memory_format=None):
        return True

    def contiguous(self, memory_format=None):
        return self

    def data_ptr(self):
        """Address of the first element: a host address on cpu, a device address on cuda."""
        if self._data is not None:
            return self._data.ctypes.data if self._data.size else 0
        return self._buf.ptr + self._offset if self._buf is not None else 0

    @property
    def _version(self):
        return self._vc[0]

    def _bump_version(self):
        self._vc[0] += 1

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        flag = bool(flag)
        if self.grad_fn is not None and not flag:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
        if flag and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = flag

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        if self._grad is None and self.grad_fn is not None and not self._retains():
            import warnings
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    def _retains(self):
        ref = getattr(self.grad_fn, "_retained", None)
        return ref is not None and ref() is self

    @grad.setter
    def grad(self, g):
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
    def data(self):
        """A detached alias of the same storage; assigning replaces this tensor's storage."""
        return self.detach()

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(other).__name__}")
        self._assign(other)

    def type(self, dtype=None, non_blocking=False):
        """No argument: the legacy type name ("rawdev.FloatTensor", "rawdev.cuda.FloatTensor")."""
        if dtype is None:
            return f"rawdev.{'cuda.' if self.is_cuda else ''}{self._dtype._legacy}"
        return self.to(dtype=_dt.from_name(dtype), non_blocking=non_blocking)

    # ---------------------------------------------------------------- views (metadata only)
    def _wrap_dim(self, dim, ndim=None):
        n = self.ndim if ndim is None else ndim
        lo, hi = (-n, n - 1) if n else (-1, 0)
        dim = operator.index(dim)
        if not lo <= dim <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
        return dim % n if n else 0

    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], _dt.dtype):
            raise NotImplementedError("view(dtype) is not supported")
        return self._alias(self._infer_shape(shape))

    def reshape(self, *shape):
        return self._alias(self._infer_shape(shape))

    def view_as(self, other):
        return self.view(other.shape)

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self._alias((1,))
        s, e = self._wrap_dim(start_dim), self._wrap_dim(end_dim)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        shp = self._shape
        mid = 1
        for d in shp[s:e + 1]:
            mid *= d
        return self._alias(tuple(shp[:s]) + (mid,) + tuple(shp[e + 1:]))

    def _infer_shape(self, shape):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        shape = [operator.index(d) for d in shape]
        n = self.numel()
        infer = [i for i, d in enumerate(shape) if d == -1]
        if len(infer) > 1:
            raise RuntimeError("only one dimension can be inferred")
        for d in shape:
            if d < -1:
                raise RuntimeError(f"invalid shape dimension {d}")
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if infer:
            if known == 0 or n % known:
                raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {n}")
            shape[infer[0]] = n // known
        elif known != n:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {n}")
        return Size(shape)

    def _axis0(self, idx):
        """Normalize a first-axis index to (start, stop, keepdim) or raise PyTorch's errors."""
        if self.ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        n = self._shape[0]
        if isinstance(idx, tuple):
            rest = idx[1:]
            if any(not (r is Ellipsis or r == slice(None)) for r in rest) or not idx:
                raise NotImplementedError(
                    "rawdev.Tensor indexing makes views only along the first axis (an int or a step-1 slice); "
                    "general indexing belongs to the ops layer")
            idx = idx[0]
        if isinstance(idx, slice):
            start, stop, step = idx.indices(n)
            if step != 1:
                raise NotImplementedError("rawdev.Tensor views need step-1 slices (storage stays contiguous)")
            return start, max(start, stop), True
        if isinstance(idx, bool) or not hasattr(idx, "__index__"):
            raise NotImplementedError(
                f"rawdev.Tensor indexing supports an int or a step-1 slice on the first axis, not "
                f"{type(idx).__name__}")
        i = operator.index(idx)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for dimension 0 with size {n}")
        i %= n
        return i, i + 1, False

    def __getitem__(self, idx):
        start, stop, keep = self._axis0(idx)
        row = self._shape[1:].numel()
        shape = ((stop - start,) + tuple(self._shape[1:])) if keep else tuple(self._shape[1:])
        return self._alias(shape, start * row)

    def __setitem__(self, idx, value):
        self._check_inplace_write(view=True)
        from ..autograd.grad_mode import is_grad_enabled
        if is_grad_enabled() and (self._requires_grad or (isinstance(value, Tensor) and value._requires_grad)):
            # PyTorch records CopySlices here; rawdev's tape does not, and writing anyway would give
            # silently wrong gradients.
            raise NotImplementedError("rawdev's autograd does not record indexed writes (CopySlices): assigning "
                                      "into a tensor that is part of a graph, or a value that requires grad, "
                                      "needs torch.no_grad() or an out-of-place formulation")
        view = self[idx]
        if isinstance(value, Tensor):
            view.copy_(value)
        else:
            view.fill_(value) if np.ndim(value) == 0 else view.copy_(Tensor._from_values(value, self._dtype))
        self._bump_version() if view._vc is not self._vc else None

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
        """A fresh host numpy array of the storage bytes (reads the device when on cuda)."""
        if self._data is not None:
            return np.array(self._host_storage(), copy=True)
        from . import cuda_io
        return cuda_io.download(self)

    def _values(self):
        """numpy array of the values (float32 for bfloat16); shares memory on cpu where it can."""
        if self._data is not None:
            return _dt.to_values(self._host_storage(), self._dtype)
        return _dt.to_values(self._storage_copy(), self._dtype)

    def numpy(self, *, force=False):
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
        from . import cuda_io
        handle = cuda_io.stream_handle(self._device)
        return {"version": 3, "shape": tuple(self._shape), "typestr": self._dtype.storage.str,
                "data": (self.data_ptr() if self.numel() else 0, False), "strides": None,
                "stream": handle if handle else 1}  # 0 is not allowed by the spec: 1 = legacy default

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._values().reshape(-1)[0].item()

    def tolist(self):
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

    # ---------------------------------------------------------------- copies and in-place writes
    def detach(self):
        t = self._alias()
        t._base = self._base
        return t

    def detach_(self):
        self.grad_fn = None
        self._requires_grad = False
        return self

    def _copy_storage(self):
        """A new tensor with a copy of the values and this requires_grad; no graph node (the ops layer's
        clone() records CloneBackward0 on top of this)."""
        if self._data is not None:
            t = Tensor._make_cpu(np.array(self._host_storage(), copy=True), self._dtype)
        else:
            from . import cuda_io
            t = cuda_io.clone(self)
        t._requires_grad = self._requires_grad
        return t

    clone = _copy_storage   # until rawdev.ops installs the differentiable one

    def _check_inplace_write(self, view=False):
        """PyTorch refuses an in-place write into a leaf that requires grad while grad mode is on (the
        write would not be in the graph): parameters are set under torch.no_grad()."""
        if self._requires_grad and self.grad_fn is None:
            from ..autograd.grad_mode import is_grad_enabled
            if is_grad_enabled():
                raise RuntimeError(("a view of " if view else "") + "a leaf Variable that requires grad is being "
                                   "used in an in-place operation.")

    def copy_(self, src, non_blocking=False):
        """Copy src's values into this tensor's storage (cast to this dtype; src broadcast to this shape)."""
        self._check_inplace_write()
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
        if self.is_cuda or src.is_cuda:
            from . import cuda_io
            cuda_io.copy_into(self, src, non_blocking=non_blocking)
        else:
            dst = self._host_storage()
            if src._dtype is self._dtype and src._shape == self._shape:
                np.copyto(dst, src._host_storage())
            else:
                vals = np.broadcast_to(src._values(), tuple(self._shape))
                np.copyto(dst, _dt.to_storage(vals, self._dtype))
        self._bump_version()
        return self

    def zero_(self):
        self._check_inplace_write()
        if self._data is not None:
            self._host_storage()[...] = 0
        else:
            from . import cuda_io
            cuda_io.memset_zero(self)
        self._bump_version()
        return self

    def fill_(self, value):
        self._check_inplace_write()
        if isinstance(value, Tensor):
            if value.numel() != 1:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                                   f"{value.dim()} dimensions.")
            value = value.item()
        if self._data is not None:
            self._host_storage()[...] = _dt.to_storage(value, self._dtype)
            self._bump_version()
        else:
            full = np.broadcast_to(_dt.to_storage(value, self._dtype), tuple(self._shape))
            self.copy_(Tensor._make_cpu(np.ascontiguousarray(full), self._dtype))
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
            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    # ---------------------------------------------------------------- moves and casts
    def to(self, *args, **kwargs):
        """to(device=None, dtype=None, non_blocking=False, copy=False) / to(dtype) / to(other_tensor).

        Returns self when nothing changes (and copy=False), else a new tensor; this tensor is untouched.
        """
        dev, dt, non_blocking, copy = _parse_to(args, kwargs)
        dev = as_device(dev) if dev is not None else self._device
        dt = dt or self._dtype
        if dev == self._device and dt is self._dtype and not copy:
            return self
        if self._requires_grad and dt.is_floating_point:
            from ..autograd.grad_mode import is_grad_enabled
            if is_grad_enabled():   # as PyTorch: a differentiable copy (ToCopyBackward0), not a new leaf
                from ..ops.functions import to_copy
                return to_copy(self, dev, dt, non_blocking)
        if self.is_cuda and dev == self._device:
            from ..ops import cuda as _cuda_ops
            if _cuda_ops.can_cast(self._dtype, dt):   # one cast kernel, no round trip through the host
                return _cuda_ops.cast(self, dt)
        from .. import moves
        return moves.transfer_tensor(self, dev, dt, non_blocking=non_blocking)

    def cuda(self, device=None, non_blocking=False):
        dev = as_device("cuda" if device is None else device)  # an int is a cuda index, as in PyTorch
        if dev.type != "cuda":
            raise RuntimeError("Invalid device, must be cuda device")
        return self.to(dev, non_blocking=non_blocking)

    def cpu(self, non_blocking=False):
        return self.to(CPU, non_blocking=non_blocking)

    def float(self):
        return self.to(dtype=_dt.float32)

    def half(self):
        return self.to(dtype=_dt.float16)

    def bfloat16(self):
        return self.to(dtype=_dt.bfloat16)

    def double(self):
        return self.to(dtype=_dt.float64)

    def long(self):
        return self.to(dtype=_dt.int64)

    def int(self):
        return self.to(dtype=_dt.int32)

    def byte(self):
        return self.to(dtype=_dt.uint8)

    def bool(self):
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
    elif args and (isinstance(args[0], (_dt.dtype, np.dtype)) or (isinstance(args[0], type) and issubclass(args[0], np.generic))):
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
