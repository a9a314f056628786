"""rawdev's dtypes: the element types a Tensor can hold, and how each maps onto numpy storage.

numpy has no bfloat16, so a bfloat16 tensor stores its raw 16-bit patterns in a uint16 array;
`to_numpy_values`/`from_numpy_values` convert to and from float32 at the edges (round to nearest
even, like PyTorch's cast). Everything else stores in the numpy dtype of the same name.
"""

import numpy as np

# What `from rawdev.dtypes import *` gives rawdev's top level: the dtypes and their aliases (the helpers
# below stay in rawdev.dtypes).
__all__ = [
    "dtype", "float32", "float", "float16", "half", "bfloat16", "float64", "double",
    "int64", "long", "int32", "int", "int16", "short", "int8", "uint8", "bool",
    "get_default_dtype", "set_default_dtype", "finfo", "iinfo",
    "qint8", "quint8", "qint32", "qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
    "per_channel_symmetric", "per_channel_affine_float_qparams",
]


class dtype:
    """One element type. Compared by identity: there is exactly one object per type."""

    __slots__ = ("name", "itemsize", "storage", "is_floating_point", "is_signed", "st_name", "_legacy",
                 "is_quantized")

    def __init__(self, name, storage, is_floating_point, is_signed, st_name, legacy):
        self.name = name
        self.storage = np.dtype(storage)        # numpy dtype of the storage array
        self.itemsize = self.storage.itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed
        self.st_name = st_name                  # the safetensors header's name for it
        self._legacy = legacy                   # PyTorch's legacy type name ("FloatTensor"), for typename()
        self.is_quantized = False               # qint8/quint8/qint32: integer storage plus scale/zero_point

    def __repr__(self):
        return f"rawdev.{self.name}"

    def __reduce__(self):  # dtypes are singletons; copy/deepcopy must keep them so
        return (from_name, (self.name,))

    @property
    def value_dtype(self):
        """numpy dtype of the *values* (float32 for bfloat16, else the storage dtype)."""
        return np.dtype(np.float32) if self is bfloat16 else self.storage


float32 = dtype("float32", np.float32, True, True, "F32", "FloatTensor")
float16 = dtype("float16", np.float16, True, True, "F16", "HalfTensor")
bfloat16 = dtype("bfloat16", np.uint16, True, True, "BF16", "BFloat16Tensor")
float64 = dtype("float64", np.float64, True, True, "F64", "DoubleTensor")
int64 = dtype("int64", np.int64, False, True, "I64", "LongTensor")
int32 = dtype("int32", np.int32, False, True, "I32", "IntTensor")
int16 = dtype("int16", np.int16, False, True, "I16", "ShortTensor")
int8 = dtype("int8", np.int8, False, True, "I8", "CharTensor")
uint8 = dtype("uint8", np.uint8, False, False, "U8", "ByteTensor")
bool = dtype("bool", np.bool_, False, False, "BOOL", "BoolTensor")  # noqa: A001 (PyTorch's name)


def _quantized(name, storage, signed, legacy):
    d = dtype(name, storage, False, signed, None, legacy)
    d.is_quantized = True
    return d


# Quantized dtypes: the storage holds the integer representation; the scale and zero point live on the
# quantized tensor (rawdev.tensor.quantized). Not in ALL: no ordinary op, cast or file entry has them.
qint8 = _quantized("qint8", np.int8, True, "QInt8Tensor")
quint8 = _quantized("quint8", np.uint8, False, "QUInt8Tensor")
qint32 = _quantized("qint32", np.int32, True, "QInt32Tensor")
QUANTIZED = (qint8, quint8, qint32)


class qscheme:
    """A quantization scheme (PyTorch's torch.qscheme): how a quantized tensor maps integers to reals.

    Example:
        >>> rawdev.quantize_per_tensor(rawdev.ones(2), 0.1, 0, rawdev.qint8).qscheme()
        rawdev.per_tensor_affine
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"rawdev.{self.name}"

    def __reduce__(self):  # singletons, as dtypes
        return (_qscheme_from_name, (self.name,))


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
_QSCHEMES = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric, per_channel_symmetric,
                                 per_channel_affine_float_qparams)}


def _qscheme_from_name(name):
    return _QSCHEMES[name]


# PyTorch's aliases.
float = float32  # noqa: A001
half = float16
double = float64
long = int64
int = int32  # noqa: A001
short = int16

ALL = (float32, float16, bfloat16, float64, int64, int32, int16, int8, uint8, bool)
_BY_NAME = {d.name: d for d in ALL}
_BY_ST = {d.st_name: d for d in ALL}
_BY_NUMPY = {d.storage: d for d in ALL if d is not bfloat16}


_default = float32


def get_default_dtype():
    """The dtype of float literals and of zeros/ones/randn/... without a dtype (float32 unless set)."""
    return _default


def set_default_dtype(d):
    global _default
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _default = d


def from_name(name):
    """dtype from "float32" / "rawdev.float32" / "torch.float32" / a safetensors name ("F32")."""
    if isinstance(name, dtype):
        return name
    key = str(name).split(".")[-1]
    if key in _BY_NAME:
        return _BY_NAME[key]
    if key in ("qint8", "quint8", "qint32"):
        return {"qint8": qint8, "quint8": quint8, "qint32": qint32}[key]
    if key in _BY_ST:
        return _BY_ST[key]
    raise TypeError(f"unknown dtype {name!r}; rawdev supports {', '.join(d.name for d in ALL)}")


def from_numpy_dtype(np_dtype):
    """The dtype whose storage is np_dtype; TypeError (PyTorch's wording) for one rawdev can't hold."""
    nd = np.dtype(np_dtype)
    if nd.byteorder == ">":
        nd = nd.newbyteorder("<")
    try:
        return _BY_NUMPY[nd]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{nd.name}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.") from None


def from_numpy_dtype_fast(nd):
    """from_numpy_dtype for a numpy dtype object (an array's .dtype), with the lookup first."""
    return _BY_NUMPY.get(nd) or from_numpy_dtype(nd)


def as_dtype(d):
    """Accept a rawdev dtype, a numpy dtype / type, or a name; return the rawdev dtype."""
    if d is None or isinstance(d, dtype):
        return d
    if isinstance(d, str):
        return from_name(d)
    return from_numpy_dtype(d)


# -- bfloat16 bit conversions (numpy has no bfloat16) --------------------------------------------

def f32_to_bf16_bits(a):
    """float32 values -> bfloat16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32)
    rounding = ((u >> 16) & 1) + np.uint32(0x7FFF)
    out = ((u + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | 0x0040).astype(np.uint16)  # keep sign, force a quiet NaN
    return out


def bf16_bits_to_f32(b):
    """bfloat16 bit patterns (uint16) -> float32 values (exact)."""
    b = np.ascontiguousarray(b, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)


def to_values(storage_array, dt):
    """Storage array of dtype dt -> a numpy array of values (float32 for bfloat16, else a view)."""
    return bf16_bits_to_f32(storage_array) if dt is bfloat16 else storage_array


def to_storage(values, dt):
    """Values (anything numpy takes) -> a new C-contiguous storage array of dtype dt."""
    if dt is bfloat16:
        v = values
        if isinstance(v, np.ndarray) and v.dtype == np.uint16:
            raise TypeError("ambiguous uint16 array for bfloat16: pass float values")
        return f32_to_bf16_bits(np.asarray(v, dtype=np.float32))
    return np.array(values, dtype=dt.storage, order="C", copy=True)


def convert_storage(arr, src, dst):
    """Storage array of dtype src -> new storage array of dtype dst (a copy, even when equal)."""
    if src is dst:
        return np.array(arr, copy=True, order="C")
    return to_storage(to_values(arr, src), dst)


import builtins as _builtins  # noqa: E402  (int, float and bool are dtypes in this module)

# -- finfo / iinfo (PyTorch's fields) ---------------------------------------------------------------

class finfo:
    """Machine limits of a floating dtype: bits, eps, max, min, tiny (= smallest_normal), resolution, dtype."""

    def __init__(self, type=None):  # noqa: A002 (PyTorch's argument name)
        d = as_dtype(type) if type is not None else get_default_dtype()
        if not d.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            f"'torch.finfo' (got {d!r})")
        if d is bfloat16:
            self.bits, self.eps, self.max, self.tiny, self.resolution = 16, 2.0 ** -7, 3.3895313892515355e38, \
                2.0 ** -126, 0.01
        else:
            fi = np.finfo(d.storage)
            self.bits, self.eps, self.max = _builtins.int(fi.bits), _builtins.float(fi.eps), _builtins.float(fi.max)
            self.tiny, self.resolution = _builtins.float(fi.smallest_normal), 10.0 ** -fi.precision
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: bits, min, max, dtype."""

    def __init__(self, type):  # noqa: A002
        d = as_dtype(type)
        if d.is_floating_point:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            f"'{d!r}'")
        if d is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        ii = np.iinfo(d.storage)
        self.bits, self.min, self.max = _builtins.int(ii.bits), _builtins.int(ii.min), _builtins.int(ii.max)
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
