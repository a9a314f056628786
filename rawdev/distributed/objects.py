"""The wire form of the objects that broadcast_object_list / all_gather_object / gather_object /
scatter_object_list carry: tagged JSON instead of pickle, so receiving an object never runs code.

Accepted: None, bool, int, float (nan and inf included), str, bytes, list, tuple, dict (keys of these types),
numpy arrays and numpy scalars, nested freely. Anything else (tensors, class instances, functions) raises a
TypeError naming its type: send tensors with the tensor collectives, or convert them with .tolist() / .numpy().
"""
import base64
import json

import numpy as np

__all__ = ["encode", "decode"]


def _pack(obj, path):
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else {"__f": repr(obj)}
    if isinstance(obj, (bytes, bytearray)):
        return {"__b": base64.b64encode(bytes(obj)).decode()}
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError(f"object at {path}: numpy arrays of dtype object cannot be sent (only numeric arrays)")
        arr = np.ascontiguousarray(obj)
        return {"__a": [arr.dtype.str, list(arr.shape), base64.b64encode(arr.tobytes()).decode()]}
    if isinstance(obj, np.generic):
        return _pack(obj.item(), path)
    if isinstance(obj, list):
        return [_pack(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return {"__t": [_pack(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, dict):
        return {"__d": [[_pack(k, f"{path} key"), _pack(v, f"{path}[{k!r}]")] for k, v in obj.items()]}
    raise TypeError(f"object at {path} of type {type(obj).__module__}.{type(obj).__qualname__} cannot be sent: "
                    f"rawdev's object collectives carry None, bool, int, float, str, bytes, list, tuple, dict and "
                    f"numpy arrays (no pickle); send tensors with the tensor collectives or as .tolist()/.numpy()")


def _unpack(v):
    if isinstance(v, list):
        return [_unpack(x) for x in v]
    if isinstance(v, dict):
        if "__f" in v:
            return float(v["__f"])
        if "__b" in v:
            return base64.b64decode(v["__b"])
        if "__a" in v:
            dtype, shape, data = v["__a"]
            return np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(shape).copy()
        if "__t" in v:
            return tuple(_unpack(x) for x in v["__t"])
        if "__d" in v:
            return {_hashable(_unpack(k)): _unpack(x) for k, x in v["__d"]}
        raise ValueError(f"not an encoded object: {v!r}")
    return v


def _hashable(k):
    return tuple(k) if isinstance(k, list) else k


def encode(obj):
    """bytes for `obj` (see the module docstring for what is accepted).

    Args:
        obj: the object to encode.

    Returns:
        UTF-8 JSON bytes.

    Example:
        >>> decode(encode({"a": (1, 2.5, b"x")}))
        {'a': (1, 2.5, b'x')}
    """
    return json.dumps(_pack(obj, "obj")).encode()


def decode(data):
    """The object `encode` made `data` from."""
    return _unpack(json.loads(bytes(data).decode()))
