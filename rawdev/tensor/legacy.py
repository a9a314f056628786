"""PyTorch's legacy typed constructors (`FloatTensor`, `LongTensor`, ..., `cuda.FloatTensor`) and the type names
`Tensor.type(...)` reads and writes.

Each is a class whose instances are never made: calling it builds an ordinary Tensor of its dtype and device
(PyTorch's legacy_tensor_ctor: no argument is an empty (0,) tensor, ints or a Size are sizes of an uninitialized
tensor, a sequence or numpy array is data, a tensor of the same type is returned as an alias), and
`isinstance(t, FloatTensor)` is true for a float32 cpu tensor, as in PyTorch.
"""
import numpy as np

from .. import dtypes as _dt
from .core import Tensor
from .size import Size

__all__ = ["LEGACY_CPU", "LEGACY_CUDA", "legacy_type", "type_name"]


class _LegacyMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls._dtype and obj.is_cuda == cls._cuda

    def __call__(cls, *args, device=None):
        from .factory import empty, tensor
        dev = device if device is not None else ("cuda" if cls._cuda else "cpu")
        if len(args) == 1 and isinstance(args[0], Tensor):
            other = args[0]
            if not isinstance(other, cls):
                raise TypeError(f"expected {type_name(cls._dtype, cls._cuda)} (got {other.type()})")
            return other.detach()
        if not args or (len(args) == 1 and isinstance(args[0], Size)) or all(
                isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            sizes = tuple(args[0]) if args and isinstance(args[0], Size) else (tuple(args) if args else (0,))
            return empty(sizes, dtype=cls._dtype, device=dev)
        if len(args) == 1:
            data = args[0]
            if not isinstance(data, (list, tuple, np.ndarray, range)):
                raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
            return tensor(np.asarray(list(data) if isinstance(data, range) else data), dtype=cls._dtype, device=dev)
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)})")

    def __repr__(cls):
        return f"<class '{type_name(cls._dtype, cls._cuda)}'>"


def _make(dt, cuda):
    name = dt._legacy
    return _LegacyMeta(name, (), {"_dtype": dt, "_cuda": cuda, "__module__": "rawdev.cuda" if cuda else "rawdev",
                                  "__doc__": f"Legacy constructor of {'cuda ' if cuda else ''}{dt.name} tensors."})


LEGACY_CPU = {dt._legacy: _make(dt, False) for dt in _dt.ALL}
LEGACY_CUDA = {dt._legacy: _make(dt, True) for dt in _dt.ALL}


def type_name(dt, cuda):
    """'rawdev.FloatTensor' / 'rawdev.cuda.LongTensor': the legacy name of a dtype on a device."""
    return f"rawdev.{'cuda.' if cuda else ''}{dt._legacy}"


def legacy_type(spec):
    """(dtype, cuda or None) for a Tensor.type argument: a legacy class, 'torch.cuda.FloatTensor' /
    'rawdev.FloatTensor' / 'FloatTensor', or a dtype (its device unchanged: None)."""
    if isinstance(spec, _LegacyMeta):
        return spec._dtype, spec._cuda
    if isinstance(spec, str):
        parts = spec.split(".")
        if parts[-1] in LEGACY_CPU:
            if parts[0] in ("torch", "rawdev") and len(parts) in (2, 3) and (len(parts) == 2 or parts[1] == "cuda"):
                return LEGACY_CPU[parts[-1]]._dtype, len(parts) == 3
            if len(parts) == 1:
                return LEGACY_CPU[parts[-1]]._dtype, False
        if len(parts) <= 2 and parts[-1] in {d.name for d in _dt.ALL} | {"float", "double", "half", "long", "int"}:
            return _dt.from_name(parts[-1]), None
        raise ValueError(f"invalid type: '{spec}'")
    return _dt.from_name(spec), None
