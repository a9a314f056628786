"""The bytes of an RPC message, without pickle: a JSON header and the tensors' raw bytes after it.

Values travel as data — None, bool, int, float, str, bytes, lists, tuples, dicts, numpy arrays, tensors (cpu, with
their dtype, shape and requires_grad), RRefs (owner and id), WorkerInfo, RemoteModules (their module's RRef) — and
functions and classes travel by reference (module and qualified name), as pickle sends them: the receiver imports
them from its own copy of the program, so a lambda or a function defined inside another cannot be sent. Receiving
runs no code from the message beyond importing the module a reference names and calling what the sender asked for,
which is what an RPC is.

`encode` takes hooks for the tensors and RRefs it meets (distributed autograd records the tensors a message
carries; an RRef becomes its ids); `decode` takes the matching hooks on the receiving side.
"""
from __future__ import annotations

import base64
import importlib
import json
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import dtypes as _dt
from ...tensor.core import Tensor

__all__ = ["encode", "decode", "function_ref", "resolve_ref", "frame", "unframe"]


def function_ref(obj: Any, path: str) -> list[str]:
    """[module, qualified name] of a module-level function, class or method, refusing what cannot be imported."""
    module, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if module is None or qual is None or "<lambda>" in qual or "<locals>" in qual:
        raise TypeError(f"RPC: {path} is {obj!r}, which cannot be sent: functions and classes travel by reference "
                        f"(module and name), so a lambda or a function defined inside another function cannot; "
                        f"define it at module level")
    return [module, qual]


def resolve_ref(ref: list[str]) -> Any:
    module, qual = ref
    obj: Any = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def _storage(t: Tensor) -> np.ndarray:
    c = t.detach()
    if c.device.type != "cpu":
        c = c.cpu()
    return np.ascontiguousarray(c.contiguous()._host_storage())


class _Encoder:
    def __init__(self, on_tensor: Callable[[Tensor, int], None] | None, on_rref: Callable[[Any], Any] | None) -> None:
        self.blobs: list[bytes] = []
        self.on_tensor, self.on_rref = on_tensor, on_rref

    def pack(self, obj: Any, path: str) -> Any:
        if obj is None or isinstance(obj, (bool, str, int)):
            return obj
        if isinstance(obj, float):
            return obj if np.isfinite(obj) else {"__f": repr(obj)}
        if isinstance(obj, Tensor):
            if obj.device.type != "cpu":
                raise RuntimeError(
                    f"RPC: {path} is a {obj.device} tensor. TensorPipe RPC backend only supports CPU tensors by "
                    f"default, please move your tensors to CPU before sending them over RPC, or call "
                    f"`set_device_map` on `TensorPipeRpcBackendOptions` to explicitly configure device mapping.")
            index = len(self.blobs)
            self.blobs.append(_storage(obj).tobytes())
            if self.on_tensor is not None:
                self.on_tensor(obj, index)
            return {"__T": [index, obj.dtype.st_name, list(obj.shape), bool(obj.requires_grad)]}
        if isinstance(obj, (bytes, bytearray)):
            return {"__b": base64.b64encode(bytes(obj)).decode()}
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                raise TypeError(f"RPC: {path} is a numpy array of objects, which cannot be sent")
            index = len(self.blobs)
            arr = np.ascontiguousarray(obj)
            self.blobs.append(arr.tobytes())
            return {"__a": [index, arr.dtype.str, list(arr.shape)]}
        if isinstance(obj, np.generic):
            return self.pack(obj.item(), path)
        if isinstance(obj, list):
            return [self.pack(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"__t": [self.pack(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            return {"__d": [[self.pack(k, f"{path} key"), self.pack(v, f"{path}[{k!r}]")] for k, v in obj.items()]}
        if self.on_rref is not None:
            packed = self.on_rref(obj)
            if packed is not None:
                return packed
        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
            return {"__fn": function_ref(obj, path)}
        raise TypeError(f"RPC: {path} of type {type(obj).__module__}.{type(obj).__qualname__} cannot be sent: rawdev's "
                        f"RPC carries tensors, RRefs, numbers, strings, bytes, lists, tuples, dicts, numpy arrays and "
                        f"module-level functions and classes (no pickle); wrap an object in an RRef to use it remotely")


def encode(obj: Any, on_tensor: Callable[[Tensor, int], None] | None = None,
           on_rref: Callable[[Any], Any] | None = None) -> tuple[Any, list[bytes]]:
    """(JSON-able form, tensor/array blobs) of `obj`."""
    enc = _Encoder(on_tensor, on_rref)
    return enc.pack(obj, "the message"), enc.blobs


def decode(form: Any, blobs: list[bytes], on_tensor: Callable[[Tensor, int], None] | None = None,
           on_ref: Callable[[str, list[Any]], Any] | None = None) -> Any:
    """The object `encode` made `form` and `blobs` from (tensors are new cpu tensors)."""
    def un(v: Any) -> Any:
        if isinstance(v, list):
            return [un(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "__T" in v:
            index, st_name, shape, requires_grad = v["__T"]
            dt = _dt.from_name(st_name)
            arr = np.frombuffer(blobs[index], dtype=dt.storage).reshape(shape).copy()
            t = Tensor._make_cpu(arr, dt)
            if requires_grad:
                t.requires_grad_(True)
            if on_tensor is not None:
                on_tensor(t, index)
            return t
        if "__a" in v:
            index, dtype, shape = v["__a"]
            return np.frombuffer(blobs[index], dtype=np.dtype(dtype)).reshape(shape).copy()
        if "__f" in v:
            return float(v["__f"])
        if "__b" in v:
            return base64.b64decode(v["__b"])
        if "__t" in v:
            return tuple(un(x) for x in v["__t"])
        if "__d" in v:
            return {_hashable(un(k)): un(x) for k, x in v["__d"]}
        if "__fn" in v:
            return resolve_ref(v["__fn"])
        if "__R" in v and on_ref is not None:
            return on_ref("R", v["__R"])
        if "__W" in v and on_ref is not None:
            return on_ref("W", v["__W"])
        if "__M" in v and on_ref is not None:
            return on_ref("M", v["__M"])
        raise ValueError(f"RPC: not an encoded value: {str(v)[:200]}")
    return un(form)


def _hashable(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k


def frame(header: dict[str, Any], blobs: list[bytes]) -> bytes:
    """One message: 8-byte total length, 4-byte header length, the header JSON, the blobs (sizes in the header)."""
    header = dict(header, blob_sizes=[len(b) for b in blobs])
    head = json.dumps(header, separators=(",", ":")).encode()
    body = struct.pack(">I", len(head)) + head + b"".join(blobs)
    return struct.pack(">Q", len(body)) + body


def unframe(body: bytes) -> tuple[dict[str, Any], list[bytes]]:
    (nh,) = struct.unpack(">I", body[:4])
    header = json.loads(body[4:4 + nh].decode())
    blobs, pos = [], 4 + nh
    for n in header.pop("blob_sizes"):
        blobs.append(body[pos:pos + n])
        pos += n
    return header, blobs
