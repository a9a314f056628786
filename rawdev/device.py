"""rawdev.device: where a tensor lives ("cpu" or "cuda:N"), with torch.device's parsing and wording."""

import threading

__all__ = ["device", "as_device", "current_cuda_index", "set_current_cuda_index"]

# The current CUDA device, per thread as the driver's current context is ("cuda" without an index).
_current = threading.local()


def current_cuda_index():
    return getattr(_current, "index", 0)


def set_current_cuda_index(index):
    _current.index = int(index)

_TYPES = ("cpu", "cuda")


class device:
    """device("cuda:0"), device("cuda", 0), device("cpu"), device(0) == device("cuda:0").

    Immutable and hashable; equal when type and index are equal (an index of None means "the current
    device" for cuda, as in PyTorch, and compares unequal to an explicit index).
    """

    __slots__ = ("_type", "_index")

    def __init__(self, type, index=None):  # noqa: A002 (PyTorch's parameter name)
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): a device object cannot be combined with an index")
            self._type, self._index = type._type, type._index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            self._type, self._index = "cuda", type
            return
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got ({_tn(type)})")
        s = type.strip()
        kind, sep, idx = s.partition(":")
        if kind not in _TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}")
        if sep:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type}")
            if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if index is not None:
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"device(): argument 'index' must be int, not {_tn(index)}")
            if index < 0:
                raise RuntimeError("Device index must not be negative")
            if kind == "cpu" and index != 0:
                raise RuntimeError(f"CPU device index must be -1 or zero, got {index}")
            if kind == "cpu":
                index = None
        self._type, self._index = kind, index

    @property
    def type(self):
        return self._type

    @property
    def index(self):
        return self._index

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self._type == other._type and self._index == other._index

    def __hash__(self):
        return hash((self._type, self._index))

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __reduce__(self):
        return (device, (self._type, self._index))


def _tn(x):
    return type(x).__name__


CPU = device("cpu")


# One device object per (type, index) for what as_device parses or resolves: tensors made from "cuda" or "cuda:0"
# then share their device object, and the per-op device checks pass on identity (`is`) before __eq__.
_interned: dict = {}


def _intern(d):
    key = (d._type, d._index)
    hit = _interned.get(key)
    if hit is None:
        hit = _interned.setdefault(key, d)
    return hit


def as_device(d):
    """None -> None; "cuda" -> device("cuda", 0) (the index resolved); anything else -> device."""
    if d is None:
        return None
    if not isinstance(d, device):
        d = _intern(device(d))
    if d._type == "cuda" and d._index is None:
        return _intern(device("cuda", current_cuda_index()))  # "cuda" means the current device, as in PyTorch
    return d
