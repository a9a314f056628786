"""Quantized tensors (PyTorch's QuantizedCPU tensors): integers plus the affine map back to reals.

A QuantizedTensor is a Tensor whose dtype is rawdev.qint8 / quint8 / qint32 and whose storage holds the integer
representation; the quantization parameters (a scale and zero point, or one per channel along an axis) ride on
it. PyTorch's formulas:

    quantize:   q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax)
    dequantize: x = (q - zero_point) * scale        (float32)

What a program may ask of one is what PyTorch's quantized tensors answer in the dynamic quantization tutorials:
dequantize(), int_repr(), q_scale(), q_zero_point(), q_per_channel_scales/zero_points/axis(), qscheme(),
is_quantized, shape/size/dim/numel, detach/clone, repr. Every other op raises PyTorch's NotImplementedError
("Could not run 'aten::add.Tensor' with arguments from the 'QuantizedCPU' backend ...") instead of computing on
the integers: the methods are replaced on the class, and the storage array handed to the numpy backend is a
guarded ndarray whose ufuncs and array functions raise the same error (so rawdev.add(q, 1) stops too).
Quantized tensors live on the cpu, as PyTorch's quantized kernels (fbgemm, qnnpack) do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import quantized_cpu_error as not_implemented
from .core import Tensor

__all__ = ["QuantizedTensor", "quantize_per_tensor", "quantize_per_channel", "qrange", "not_implemented"]

_DUNDER = {"__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__rsub__": "sub",
           "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
           "__rtruediv__": "div", "__itruediv__": "div_", "__floordiv__": "floor_divide",
           "__rfloordiv__": "floor_divide", "__mod__": "remainder", "__rmod__": "remainder", "__pow__": "pow",
           "__rpow__": "pow", "__matmul__": "mm", "__rmatmul__": "mm", "__neg__": "neg", "__abs__": "abs",
           "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__eq__": "eq", "__ne__": "ne",
           "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor", "__invert__": "bitwise_not",
           "__getitem__": "index.Tensor", "__setitem__": "index_put_", "__float__": "_local_scalar_dense",
           "__int__": "_local_scalar_dense", "__bool__": "is_nonzero", "__index__": "_local_scalar_dense",
           "__iter__": "unbind.int", "__array__": "_local_scalar_dense"}
# what a quantized tensor answers itself (the rest of Tensor's public methods raise)
_KEEP = frozenset({
    "size", "dim", "numel", "nelement", "ndimension", "element_size", "is_contiguous", "get_device",
    "is_floating_point", "is_complex", "stride", "storage_offset", "requires_grad_", "detach", "detach_", "clone",
    "dequantize", "int_repr", "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
    "q_per_channel_axis", "qscheme", "cpu", "cuda", "to", "is_same_size", "is_neg", "is_conj", "is_inference",
    "is_pinned", "is_shared", "contiguous", "register_hook", "retain_grad", "backward"})


class _GuardedStorage(np.ndarray):
    """The integer storage as the numpy backend sees it: any ufunc or array function on it raises PyTorch's
    QuantizedCPU error (rawdev.add(q, 1) reaches numpy with this array and stops there)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise not_implemented(ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        raise not_implemented(func.__name__)


def qrange(dtype: _dt.dtype) -> tuple[int, int]:
    """(qmin, qmax) of a quantized dtype: qint8 [-128, 127], quint8 [0, 255], qint32 [-2**31, 2**31 - 1].

    Args:
        dtype: rawdev.qint8, quint8 or qint32.

    Returns:
        The integer range as a pair.

    Example:
        >>> qrange(rawdev.quint8)
        (0, 255)
    """
    info = np.iinfo(dtype.storage)
    return int(info.min), int(info.max)


def _check_qdtype(dtype, fn):
    d = _dt.as_dtype(dtype)
    if d is None or not getattr(d, "is_quantized", False):
        raise RuntimeError(f"{fn}: expected a quantized dtype (rawdev.qint8, rawdev.quint8 or rawdev.qint32), "
                           f"got {d!r}")
    return d


def _float_input(x, fn):
    if not isinstance(x, Tensor) or isinstance(x, QuantizedTensor):
        raise TypeError(f"{fn}(): argument 'input' must be a float Tensor, not {type(x).__name__}")
    if x.device.type != "cpu":
        raise NotImplementedError(f"{fn}: rawdev quantizes cpu tensors only (its quantized kernels, like "
                                  "PyTorch's fbgemm and qnnpack ones, run on the cpu); call .cpu() first")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"Quantize only works on Float Tensor, got {x.dtype}")
    return np.asarray(x.detach().float()._values(), dtype=np.float64)


def _round_clamp(v: np.ndarray, zero_point: Any, dtype) -> np.ndarray:
    """clamp(rint(v) + zero_point): the zero point is added after rounding, as PyTorch's quantize_val (rounding
    v + zero_point would break ties towards the other even number for an odd zero point)."""
    lo, hi = qrange(dtype)
    return np.clip(np.rint(v) + zero_point, lo, hi).astype(dtype.storage)


class QuantizedTensor(Tensor):
    """A quantized cpu tensor: the integer representation and its per-tensor or per-channel affine parameters.
    Made by rawdev.quantize_per_tensor / quantize_per_channel (and by quantized modules)."""

    # set by _make (instance attributes: Tensor's __slots__ include __dict__)
    _qint: np.ndarray                  # the integers, a plain C-contiguous array
    _qscheme: _dt.qscheme
    _scale: Any                        # per tensor: a float and an int (None per channel)
    _zp: Any
    _scales: Any                       # per channel: float64 scales, int64 zero points (arrays), along _axis
    _zps: Any
    _axis: Any

    @property
    def is_quantized(self) -> bool:   # type: ignore[override]
        return True

    # ------------------------------------------------------------------ the quantization parameters
    def int_repr(self) -> Tensor:
        """The integers as an ordinary tensor (int8 for qint8, uint8 for quint8, int32 for qint32)."""
        ints = self._qint
        return Tensor._make_cpu(np.array(ints, copy=True), _dt.from_numpy_dtype(ints.dtype))

    def dequantize(self) -> Tensor:
        """(int_repr - zero_point) * scale as a float32 tensor (per channel: along q_per_channel_axis())."""
        ints = self._qint.astype(np.int64)
        if self._qscheme is _dt.per_tensor_affine:
            out = (ints - self._zp).astype(np.float32) * np.float32(self._scale)
        else:
            shape = [1] * ints.ndim
            shape[self._axis] = -1
            scales = self._scales.reshape(shape).astype(np.float32)
            out = (ints - self._zps.reshape(shape)).astype(np.float32) * scales
        return Tensor._make_cpu(np.ascontiguousarray(out, dtype=np.float32), _dt.float32)

    def q_scale(self) -> float:
        """The scale of a per-tensor quantized tensor."""
        self._per_tensor("q_scale")
        return self._scale

    def q_zero_point(self) -> int:
        """The zero point of a per-tensor quantized tensor."""
        self._per_tensor("q_zero_point")
        return self._zp

    def q_per_channel_scales(self) -> Tensor:
        """The scales (float64) of a per-channel quantized tensor."""
        self._per_channel("q_per_channel_scales")
        return Tensor._make_cpu(self._scales.copy(), _dt.float64)

    def q_per_channel_zero_points(self) -> Tensor:
        """The zero points (int64) of a per-channel quantized tensor."""
        self._per_channel("q_per_channel_zero_points")
        return Tensor._make_cpu(self._zps.copy(), _dt.int64)

    def q_per_channel_axis(self) -> int:
        """The axis a per-channel quantized tensor's parameters run along."""
        self._per_channel("q_per_channel_axis")
        return self._axis

    def qscheme(self) -> _dt.qscheme:
        """rawdev.per_tensor_affine or rawdev.per_channel_affine."""
        return self._qscheme

    def _per_tensor(self, what):
        if self._qscheme is not _dt.per_tensor_affine:
            raise RuntimeError(f"Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.  "
                               f"({what} of a {self._qscheme.name} quantized tensor)")

    def _per_channel(self, what):
        if self._qscheme is _dt.per_tensor_affine:
            raise RuntimeError(f"Expected quantizer->qscheme() == kPerChannelAffine to be true, but got false.  "
                               f"({what} of a per_tensor_affine quantized tensor)")

    # ------------------------------------------------------------------ copies, moves, printing
    def _like(self, ints):
        return _make(ints, self._dtype, self._qscheme, self._scale, self._zp, self._scales, self._zps, self._axis)

    def detach(self) -> Tensor:
        return self._like(self._qint)

    def detach_(self) -> Tensor:
        return self

    def clone(self, *, memory_format: Any = None) -> Tensor:
        return self._like(self._qint.copy())

    def contiguous(self, memory_format: Any = None) -> Tensor:
        return self

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = self.clone()
        return memo[id(self)]

    def cpu(self, memory_format: Any = None) -> Tensor:
        return self

    def cuda(self, device: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Tensor:
        raise _no_cuda()

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """Only to the cpu (itself) or to its own dtype; any other device or dtype raises."""
        from ..device import device as _device_cls
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, (str, _device_cls)) and str(a).startswith("cuda"):
                raise _no_cuda()
            if isinstance(a, _dt.dtype) and a is not self._dtype:
                raise not_implemented("_to_copy")
            if isinstance(a, Tensor):
                raise not_implemented("_to_copy")
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        return self

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        from .printing import tensor_repr
        body = tensor_repr(self.dequantize())[:-1]
        size = tuple(int(n) for n in self._shape)
        if self._qscheme is _dt.per_tensor_affine:
            params = f"scale={self._scale}, zero_point={self._zp}"
        else:
            params = (f"scale={self.q_per_channel_scales()!r}, zero_point={self.q_per_channel_zero_points()!r}, "
                      f"axis={self._axis}")
        return (f"{body}, size={size}, dtype={self._dtype!r},\n       quantization_scheme={self._qscheme!r}, "
                f"{params})")

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, protocol):
        raise TypeError("rawdev never pickles tensors; rawdev.save stores quantized tensors (their integers and "
                        "parameters) in safetensors files")


def _no_cuda() -> NotImplementedError:
    return NotImplementedError("rawdev's quantized tensors live on the cpu only (their kernels, like PyTorch's "
                               "fbgemm and qnnpack ones, are cpu kernels): call .dequantize() first to move the "
                               "values to cuda")


def _raiser(op):
    def refuse(self, *args, **kwargs):
        raise not_implemented(op)
    refuse.__name__ = refuse.__qualname__ = op
    return refuse


_CLOSED = False


def _close_ops():
    """Replace every Tensor method a quantized tensor has no kernel for by one raising PyTorch's error. Done at
    the first quantized tensor, when rawdev.ops has put all its methods on Tensor."""
    global _CLOSED
    import inspect
    own = set(vars(QuantizedTensor))
    for name in dir(Tensor):
        if name.startswith("_") or name in _KEEP or name in own:
            continue
        attr = inspect.getattr_static(Tensor, name)
        if isinstance(attr, property):
            if name in ("T", "mT", "H", "mH", "real", "imag"):
                setattr(QuantizedTensor, name, property(_raiser(name)))
            continue
        if callable(attr):
            setattr(QuantizedTensor, name, _raiser(name))
    for dunder, op in _DUNDER.items():
        setattr(QuantizedTensor, dunder, _raiser(op))
    _CLOSED = True


def _make(ints, dtype, scheme, scale=None, zp=None, scales=None, zps=None, axis=None) -> QuantizedTensor:
    """A QuantizedTensor over the integer array ints (kept; C-contiguous)."""
    if not _CLOSED:
        _close_ops()
    ints = np.ascontiguousarray(ints, dtype=dtype.storage)
    q = QuantizedTensor.__new__(QuantizedTensor)
    q._init_cpu(ints.view(_GuardedStorage), dtype)
    q._qint, q._qscheme, q._axis = ints, scheme, axis
    q._scale = None if scale is None else float(scale)
    q._zp = None if zp is None else int(zp)
    q._scales = None if scales is None else np.asarray(scales, dtype=np.float64)
    q._zps = None if zps is None else np.asarray(zps, dtype=np.int64)
    return q


def quantize_per_tensor(input: Any, scale: Any, zero_point: Any, dtype: Any) -> Any:  # noqa: A002
    """Quantize a float tensor with one scale and zero point: clamp(round_half_even(x / scale) + zero_point).

    Args:
        input: a float cpu tensor (or a list of them, quantized with the matching scales and zero points).
        scale: the scale (a float or a one-element tensor).
        zero_point: the zero point (an int or a one-element tensor).
        dtype: rawdev.qint8, rawdev.quint8 or rawdev.qint32.

    Returns:
        A QuantizedTensor (qscheme rawdev.per_tensor_affine); a list for a list input.

    Example:
        >>> q = rawdev.quantize_per_tensor(rawdev.tensor([-1.0, 0.0, 1.0, 2.0]), 0.1, 10, rawdev.quint8)
        >>> q.int_repr()
        tensor([  0,  10,  20,  30], dtype=rawdev.uint8)
    """
    if isinstance(input, (list, tuple)):
        scales = scale.tolist() if isinstance(scale, Tensor) else list(scale)
        zps = zero_point.tolist() if isinstance(zero_point, Tensor) else list(zero_point)
        return [quantize_per_tensor(x, s, z, dtype) for x, s, z in zip(input, scales, zps)]
    d = _check_qdtype(dtype, "quantize_per_tensor")
    vals = _float_input(input, "quantize_per_tensor")
    s = float(scale.item() if isinstance(scale, Tensor) else scale)
    z = int(zero_point.item() if isinstance(zero_point, Tensor) else zero_point)
    return _make(_round_clamp(vals / s, z, d), d, _dt.per_tensor_affine, scale=s, zp=z)


def quantize_per_channel(input: Tensor, scales: Tensor, zero_points: Tensor, axis: int,  # noqa: A002
                         dtype: Any) -> QuantizedTensor:
    """Quantize a float tensor with a scale and zero point per slice along axis.

    Args:
        input: a float cpu tensor.
        scales: a 1-D tensor of input.shape[axis] scales.
        zero_points: a 1-D tensor of as many zero points.
        axis: the channel dimension.
        dtype: rawdev.qint8, rawdev.quint8 or rawdev.qint32.

    Returns:
        A QuantizedTensor (qscheme rawdev.per_channel_affine).

    Example:
        >>> x = rawdev.tensor([[-1.0, 0.0], [1.0, 2.0]])
        >>> rawdev.quantize_per_channel(x, rawdev.tensor([0.1, 0.01]), rawdev.tensor([10, 0]), 0,
        ...                             rawdev.quint8).int_repr()
        tensor([[  0,  10],
                [100, 200]], dtype=rawdev.uint8)
    """
    d = _check_qdtype(dtype, "quantize_per_channel")
    vals = _float_input(input, "quantize_per_channel")
    axis = int(axis)
    if axis < 0:
        axis += vals.ndim
    if not 0 <= axis < vals.ndim:
        raise IndexError(f"quantize_per_channel: axis {axis} is out of range for a {vals.ndim}-d input")
    s = np.asarray(scales._values() if isinstance(scales, Tensor) else scales, dtype=np.float64).reshape(-1)
    z = np.asarray(zero_points._values() if isinstance(zero_points, Tensor) else zero_points).reshape(-1)
    z = z.astype(np.int64)
    if s.size != vals.shape[axis] or z.size != vals.shape[axis]:
        raise RuntimeError(f"quantize_per_channel: expected {vals.shape[axis]} scales and zero points (the size "
                           f"of axis {axis}), got {s.size} and {z.size}")
    shape = [1] * vals.ndim
    shape[axis] = -1
    ints = _round_clamp(vals / s.reshape(shape), z.reshape(shape), d)
    return _make(ints, d, _dt.per_channel_affine, scales=s, zps=z, axis=axis)
