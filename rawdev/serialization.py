"""rawdev.save / rawdev.load: state_dicts as safetensors files (never pickle).

Written with the safetensors library's own serializer (the one safetensors.numpy uses), one TensorSpec
per tensor; bfloat16 goes in as its raw 16-bit patterns with the "bfloat16" dtype, so the header says
BF16 exactly as PyTorch's safetensors.torch.save_file writes it. The header keeps each dtype; the
metadata keeps the key order (safetensors sorts tensors in the file).

Files written by PyTorch's safetensors.torch.save_file(model.state_dict()) load too: the names and
dtypes are the same, and a missing rawdev key order falls back to the file's order.
"""

import json
import os
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
import safetensors
from safetensors import deserialize, safe_open, serialize_file

try:
    from safetensors import TensorSpec  # safetensors >= 0.7: pointer + length, no copy
except ImportError:  # pragma: no cover - older safetensors takes {"dtype", "shape", "data": bytes}
    TensorSpec = None

from . import dtypes as _dt
from .device import as_device
from .tensor.core import Tensor

__all__ = ["save", "load"]

_ORDER_KEY = "rawdev.keys"
_FORMAT = "rawdev"
# dtype names safetensors' TensorSpec takes (numpy's names; "bfloat16" for BF16).
_SPEC_NAME = {_dt.float32: "float32", _dt.float16: "float16", _dt.bfloat16: "bfloat16", _dt.float64: "float64",
              _dt.int64: "int64", _dt.int32: "int32", _dt.uint8: "uint8", _dt.bool: "bool"}


def save(obj, f, metadata=None):
    """Save a state_dict (mapping of str -> Tensor, on any device) to the path f as safetensors.

    Cuda tensors are read back in one batched copy per device. metadata: extra str -> str pairs.
    """
    if isinstance(obj, Tensor):
        raise TypeError("rawdev.save stores a state_dict (a mapping of names to tensors) in a safetensors "
                        "file; wrap a single tensor as {'tensor': t}")
    if not isinstance(obj, Mapping):
        raise TypeError(f"rawdev.save stores a state_dict (a mapping of names to tensors) in a safetensors file; "
                        f"got {type(obj).__name__} (rawdev never pickles arbitrary objects)")
    items = list(obj.items())
    for k, v in items:
        if not isinstance(k, str):
            raise TypeError(f"rawdev.save: state_dict keys must be str, got {type(k).__name__} ({k!r})")
        if not isinstance(v, Tensor):
            raise TypeError(f"rawdev.save: value for '{k}' is a {type(v).__name__}, not a Tensor; safetensors "
                            "files hold tensors only")
    from .tensor.moves import to_host_arrays
    arrays = to_host_arrays(items)
    specs, alive = {}, []
    for (k, v), (_, arr) in zip(items, arrays):
        arr = np.ascontiguousarray(arr)
        alive.append(arr)
        if TensorSpec is None:
            specs[k] = {"dtype": _SPEC_NAME[v.dtype], "shape": list(v.shape), "data": arr.tobytes()}
        else:
            specs[k] = TensorSpec(dtype=_SPEC_NAME[v.dtype], shape=list(v.shape),
                                  data_ptr=arr.ctypes.data if arr.nbytes else 0, data_len=arr.nbytes)
    meta = {"format": _FORMAT, _ORDER_KEY: json.dumps([k for k, _ in items])}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("rawdev.save: metadata must map str to str")
        meta.update(metadata)
    path = os.fspath(f)
    tmp = path + ".tmp"
    # Write then rename: a crash mid-save never leaves a truncated checkpoint under the real name.
    serialize_file(specs, tmp, metadata=meta)
    os.replace(tmp, path)
    del alive


def load(f, map_location=None):
    """Load a safetensors file into an OrderedDict of Tensors, in the order they were saved.

    map_location: None or "cpu" -> cpu tensors; "cuda"/"cuda:N"/device -> all tensors placed there in
    one staged copy. (Loading into a model: model.load_state_dict(rawdev.load(path)) copies into the
    model's storage wherever it lives, batched the same way.)
    """
    path = os.fspath(f)
    if not os.path.exists(path):
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{path}'")
    try:
        with safe_open(path, framework="np") as fh:
            meta = fh.metadata() or {}
            keys = list(fh.keys())
            dtypes = {k: fh.get_slice(k).get_dtype() for k in keys}
            arrays = {k: fh.get_tensor(k) for k in keys if dtypes[k] != "BF16"}
        if any(d == "BF16" for d in dtypes.values()):
            # numpy has no bfloat16: read those tensors' raw bytes through safetensors' deserializer.
            with open(path, "rb") as fh:
                raw = dict(deserialize(fh.read()))
            for k, d in dtypes.items():
                if d == "BF16":
                    arrays[k] = np.frombuffer(raw[k]["data"], dtype=np.uint16).reshape(raw[k]["shape"])
    except (safetensors.SafetensorError, ValueError, OSError, json.JSONDecodeError) as e:
        raise RuntimeError(f"rawdev.load: '{path}' is not a readable safetensors file ({e}). rawdev checkpoints "
                           "are safetensors files written by rawdev.save or safetensors.torch.save_file.") from e
    order = keys
    if _ORDER_KEY in meta:
        try:
            saved = json.loads(meta[_ORDER_KEY])
            if sorted(saved) == sorted(keys):
                order = saved
        except (ValueError, TypeError):
            pass
    out = OrderedDict()
    for k in order:
        d = dtypes[k]
        try:
            dt = _dt.from_name(d)
        except TypeError:
            raise RuntimeError(f"rawdev.load: '{k}' in '{path}' has dtype {d}, which rawdev tensors cannot hold "
                               f"(supported: {', '.join(x.st_name for x in _dt.ALL)})") from None
        arr = arrays[k]
        arr = np.array(arr, dtype=dt.storage, copy=True, order="C")  # own, writable memory
        out[k] = Tensor._make_cpu(arr, dt)
    dev = as_device(map_location) if map_location is not None else None
    if dev is not None and dev.type == "cuda" and out:
        from .tensor.moves import move_tensors
        move_tensors(list(out.items()), dev, what=f"checkpoint {os.path.basename(path)}")
    return out
