"""rawdev.save / rawdev.load: state_dicts as safetensors files (never pickle).

Saving writes the safetensors layout itself (8-byte little-endian header length, a JSON header padded
with spaces to 8 bytes, then the tensors' bytes), so the same state_dict always gives the same bytes:
tensors ordered as safetensors orders them (by alignment, then name), metadata keys sorted. bfloat16
goes in as its raw 16-bit patterns with dtype "BF16", exactly as PyTorch's safetensors.torch.save_file
writes it. The metadata keeps the key order (the file sorts tensors).

Loading validates before it allocates anything: the header length against the file's real size, the
JSON, every entry's dtype (rawdev's types; F8/F4 and unknown names are refused by name), shape, offsets
(inside the data, no overlap, bytes = shape x itemsize) and a memory budget (host memory, and the
device's free memory for map_location='cuda'), so a hostile or damaged file ends in a
`CheckpointError` naming the file, the tensor and what is wrong — never a panic from inside
safetensors or a foreign exception. Only then are the tensors read, with safetensors' own reader.

Files written by PyTorch's safetensors.torch.save_file(model.state_dict()) load too: the names and
dtypes are the same, and a missing rawdev key order falls back to the file's order. PyTorch's own torch.save
zip files are read by rawdev.utils.ptfile (a restricted unpickler that never imports or calls anything from
the file); rawdev never writes pickle.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections import OrderedDict
from collections.abc import Mapping
from typing import IO, Any

import numpy as np
from safetensors import safe_open

from . import dtypes as _dt
from .device import as_device
from .load_placement import (
    CheckpointError,
    WeightsOnlyCheckpointError,
    _bad,
    _check_budget,
    _Entry,
    _fmt,
    _place,
    device_memory_available,
    host_memory_available,
)
from .object_graph import check_text as _check_text
from .safe_globals import WeightsOnlyError, add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from .tensor.core import Tensor

__all__ = ["save", "load", "CheckpointError", "add_safe_globals", "safe_globals", "get_safe_globals",
           "clear_safe_globals"]

_ORDER_KEY = "rawdev.keys"
_STRUCT_KEY = "rawdev.structure"     # a non-state_dict object: its structure, tensors by name
_DEVICES_KEY = "rawdev.devices"      # a state_dict's tensors saved from a device: {name: "cuda:0"}
_FORMAT = "rawdev"
MAX_HEADER = 100_000_000          # safetensors' own limit on the JSON header
# every dtype name the safetensors format defines, with its size in bits
_ST_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F4": 4, "F6_E2M3": 6,
            "F6_E3M2": 6, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
            "C64": 64, "F64": 64, "I64": 64, "U64": 64}


def save(obj: Any, f: str | os.PathLike | IO[bytes], metadata: dict[str, str] | None = None,
         pickle_module: Any = None, pickle_protocol: Any = None, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save obj to f (a path or a binary file object) as a safetensors file, never with pickle.

    A state_dict (a mapping of str -> Tensor) is stored as plain safetensors: each tensor under its name, so
    safetensors.torch.load_file reads it too. Anything else people save — nested dicts (any keys), lists and
    tuples of tensors, ints, floats, bools, strings, None, dtypes, devices: a training checkpoint with model,
    optimizer and scheduler state_dicts, the epoch and the loss — is stored as its tensors (each once, however
    often it appears) plus the structure as JSON in the file's metadata. Cuda tensors are read back in one
    batched copy per device; the same object always gives the same bytes. metadata: extra str -> str pairs.
    The pickle arguments are PyTorch's and are ignored: rawdev never pickles.

    Example:
        >>> rawdev.save({"epoch": 3, "model_state_dict": model.state_dict(),
        ...              "optimizer_state_dict": opt.state_dict(), "loss": 0.25}, "ckpt.pt")
    """
    if not (isinstance(obj, Mapping) and obj and all(isinstance(k, str) and isinstance(v, Tensor)
                                                    and not v.is_quantized for k, v in obj.items())):
        from .object_graph import flatten
        items, structure = flatten(obj)
        _write(items, f, {"format": _FORMAT, _STRUCT_KEY: json.dumps(structure, separators=(",", ":"),
                                                                    ensure_ascii=False)}, metadata)
        return
    items = list(obj.items())
    for k, v in items:
        if not isinstance(k, str):
            raise TypeError(f"rawdev.save: state_dict keys must be str, got {type(k).__name__} ({k!r})")
        if not isinstance(v, Tensor):
            raise TypeError(f"rawdev.save: value for '{k}' is a {type(v).__name__}, not a Tensor; safetensors "
                            "files hold tensors only")
        _check_text(k, "the state_dict key")
        if k == "__metadata__":
            raise ValueError("rawdev.save: '__metadata__' is reserved by the safetensors format; rename the tensor")
    meta = {"format": _FORMAT, _ORDER_KEY: json.dumps([k for k, _ in items])}
    on_devices = {k: str(v.device) for k, v in items if v.device.type != "cpu"}
    if on_devices:   # where they were saved from: load(map_location=None) puts them back there, as PyTorch
        meta[_DEVICES_KEY] = json.dumps(on_devices, sort_keys=True)
    _write(items, f, meta, metadata)


def _write(items, f, meta, metadata):
    """Write [(name, Tensor)] and the metadata as safetensors to a path (atomically) or a binary file."""
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("rawdev.save: metadata must map str to str")
        meta.update(metadata)
    from .tensor.moves import to_host_arrays
    arrays = dict(to_host_arrays(items))
    # safetensors' order: larger elements first (so every tensor starts aligned to its itemsize), then by name
    order = sorted(items, key=lambda kv: (-kv[1].dtype.itemsize, kv[0]))
    header, offset, blobs = {"__metadata__": dict(sorted(meta.items()))}, 0, []
    for k, v in order:
        arr = np.ascontiguousarray(arrays[k])
        header[k] = {"dtype": v.dtype.st_name, "shape": [int(n) for n in v.shape],
                     "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        blobs.append(arr)
    for k, v in meta.items():
        _check_text(k, "the metadata key")
        _check_text(v, f"the metadata value of {k!r}")
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)

    def emit(fh, copy=False):
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for arr in blobs:
            if arr.nbytes:
                view = memoryview(arr.reshape(-1).view(np.uint8))
                fh.write(view.tobytes() if copy else view)

    if hasattr(f, "write"):   # a binary file object (io.BytesIO, an open file), which may keep what it is given
        emit(f, copy=True)
        return
    # a unique temporary beside the target, fsynced, renamed over it (see rawdev/utils/atomic_file.py)
    from .utils.atomic_file import write_atomically
    write_atomically(f, emit)


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key '{k}' appears twice")
        out[k] = v
    return out


def read_header(path):
    """Parse and check a safetensors file's header without reading its tensors.

    Returns (metadata: dict str->str, [_Entry] in file order, data_start). Raises CheckpointError naming
    the problem (and the tensor) for anything a reader could trip on."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise _bad(path, f"the file is {size} bytes long, shorter than the 8-byte header length")
            n = struct.unpack("<Q", head)[0]
            if n > MAX_HEADER:
                raise _bad(path, f"the header claims {n} bytes; safetensors headers are at most {MAX_HEADER}")
            if 8 + n > size:
                raise _bad(path, f"the header claims {n} bytes but the file has only {size - 8} after the length "
                                 "(truncated?)")
            raw = fh.read(n)
    except OSError as e:
        raise CheckpointError(f"rawdev.load: cannot read '{path}': {e}") from None
    if len(raw) != n:
        raise _bad(path, "the file changed while it was read")
    try:
        text = raw.decode("utf-8")
        header = json.loads(text, object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _bad(path, f"its header is not valid JSON: {str(e)[:200]}") from None
    if not isinstance(header, dict):
        raise _bad(path, f"its header is a JSON {type(header).__name__}, not an object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise _bad(path, "its __metadata__ is not a mapping of strings to strings")
    data_start, data_len = 8 + n, size - 8 - n
    entries = []
    for name, ent in header.items():
        where = f"tensor '{name}'"
        if not isinstance(ent, dict) or set(ent) - {"dtype", "shape", "data_offsets"} or len(ent) != 3:
            raise _bad(path, f"{where}: an entry must hold exactly dtype, shape and data_offsets")
        st, shape, offs = ent["dtype"], ent["shape"], ent["data_offsets"]
        if not isinstance(st, str):
            raise _bad(path, f"{where}: dtype {st!r} is not a name")
        if st not in _ST_BITS:
            raise CheckpointError(f"rawdev.load: '{name}' in '{path}' has dtype {st[:40]!r}, which is not a "
                                  f"safetensors dtype (supported by rawdev: {', '.join(x.st_name for x in _dt.ALL)})")
        try:
            dt = _dt.from_name(st)
        except TypeError:
            raise CheckpointError(f"rawdev.load: '{name}' in '{path}' has dtype {st}, which rawdev tensors cannot hold "
                                  f"(supported: {', '.join(x.st_name for x in _dt.ALL)})") from None
        if (not isinstance(shape, list) or len(shape) > 64
                or not all(type(d) is int and 0 <= d < 2 ** 63 for d in shape)):
            raise _bad(path, f"{where}: shape {str(shape)[:80]} is not a list of at most 64 sizes >= 0")
        if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs)
                or not 0 <= offs[0] <= offs[1]):
            raise _bad(path, f"{where}: data_offsets {str(offs)[:80]} are not [begin, end] with 0 <= begin <= end")
        want = math.prod(shape) * dt.itemsize
        if offs[1] - offs[0] != want:
            raise _bad(path, f"{where}: shape {shape} of {st} needs {want} bytes but data_offsets {offs} hold "
                             f"{offs[1] - offs[0]}")
        if offs[1] > data_len:
            raise _bad(path, f"{where}: its bytes {offs} end past the file's {data_len} bytes of data (truncated?)")
        entries.append(_Entry(name, st, dt, tuple(shape), offs[0], offs[1]))
    at = 0
    for ent in sorted(entries, key=lambda x: (x.begin, x.end)):
        if ent.begin < at:
            raise _bad(path, f"tensor '{ent.name}': its bytes {[ent.begin, ent.end]} overlap another tensor's")
        if ent.begin > at:
            raise _bad(path, f"tensor '{ent.name}': {ent.begin - at} bytes before it belong to no tensor")
        at = ent.end
    if at != data_len:
        raise _bad(path, f"{data_len - at} bytes after the last tensor belong to no tensor")
    return meta, entries, data_start


def load(f: str | os.PathLike | IO[bytes], map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load what rawdev.save wrote (or a safetensors state_dict) from a path or a binary file object.

    A state_dict comes back as an OrderedDict of Tensors in the order it was saved; any other saved object
    comes back as it was (containers, numbers, strings, tensors, numpy arrays, whole modules and optimizers;
    an object saved twice is one object). map_location: None (a state_dict on the cpu; tensors of other
    objects back on the device they were saved from), "cpu", "cuda"/"cuda:N" or a device (everything
    there, one staged copy per device), a
    dict mapping saved locations to new ones ({"cuda:1": "cuda:0"}), or a callable(tensor, location) that
    returns the tensor to use. PyTorch's own torch.save zip files (.pt) load too, through a restricted
    unpickler that refuses every global but tensors, storages, dtypes, torch.Size/device and plain
    containers, and maps torch.nn's standard layers to rawdev's (rawdev.utils.ptfile). Loading never runs code
    from the file. weights_only (PyTorch 2.6's rule; None means True): rawdev's own classes always load, any
    other class a file names only with weights_only=False or once allowed with add_safe_globals/safe_globals;
    else a pickle.UnpicklingError with PyTorch's "Weights only load failed" message. mmap and the pickle
    arguments are accepted for PyTorch's signature.
    A file that is not a well-formed checkpoint raises CheckpointError (a RuntimeError) before anything is allocated.

    Example:
        >>> ckpt = rawdev.load("ckpt.pt", weights_only=True)
        >>> model.load_state_dict(ckpt["model_state_dict"])
    """
    if hasattr(f, "read"):   # a binary file object: its bytes go through the same checks from a temporary file
        data = f.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"rawdev.load: the file object must be opened in binary mode (read() gave "
                            f"{type(data).__name__})")
        if data[:4] == b"PK\x03\x04":
            from .utils.ptfile import read_pt
            return read_pt(bytes(data), getattr(f, "name", "<file object>"), map_location, weights_only=weights_only)
        import tempfile
        with tempfile.TemporaryDirectory(prefix="rawdev-load-") as d:
            tmp = os.path.join(d, "checkpoint.safetensors")
            with open(tmp, "wb") as fh:
                fh.write(data)
            return load(tmp, map_location, weights_only=weights_only)
    path = os.fspath(f)
    if not os.path.exists(path):
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{path}'")
    with open(path, "rb") as fh:
        magic = fh.read(14)
    if magic[:4] == b"PK\x03\x04":   # PyTorch's torch.save zip format: read through a restricted unpickler
        from .utils.ptfile import read_pt
        return read_pt(path, path, map_location, weights_only=weights_only)
    from .utils.ptfile import LEGACY_HINT, is_legacy_pickle
    if is_legacy_pickle(magic):
        raise CheckpointError(f"rawdev.load: '{path}' is a legacy (non-zip) PyTorch pickle, written by torch.save "
                              f"with _use_new_zipfile_serialization=False or PyTorch < 1.6, which rawdev does not "
                              f"read: {LEGACY_HINT}")
    mapper = map_location if (callable(map_location) or isinstance(map_location, Mapping)) else None
    dev = as_device(map_location) if map_location is not None and mapper is None else None
    meta, entries, data_start = read_header(path)
    _check_budget(path, entries, "host memory", host_memory_available())
    if dev is not None and dev.type == "cuda" and entries:
        free, cached = device_memory_available(dev)
        _check_budget(path, entries, f"the free memory of {dev} ({_fmt(cached)} of it cached by rawdev's pool)",
                      free + cached)
    arrays = {}
    try:
        plain = [e for e in entries if e.st != "BF16"]
        if plain:
            with safe_open(path, framework="np") as fh:
                for e in plain:
                    arrays[e.name] = fh.get_tensor(e.name)
        if len(plain) < len(entries):   # numpy has no bfloat16: read those tensors' raw bits directly
            with open(path, "rb") as fh:
                for e in entries:
                    if e.st == "BF16":
                        fh.seek(data_start + e.begin)
                        buf = fh.read(e.nbytes)
                        if len(buf) != e.nbytes:
                            raise _bad(path, f"tensor '{e.name}': the file ended early")
                        arrays[e.name] = np.frombuffer(buf, dtype="<u2").reshape(e.shape)
    except CheckpointError:
        raise
    except BaseException as e:   # safetensors raises PanicException, a BaseException
        if isinstance(e, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        raise _bad(path, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}") from None
    keys = [e.name for e in entries]
    order = keys
    if _ORDER_KEY in meta:
        try:
            saved = json.loads(meta[_ORDER_KEY])
            if isinstance(saved, list) and sorted(map(str, saved)) == sorted(keys) and len(set(saved)) == len(saved):
                order = saved
        except (ValueError, TypeError, RecursionError):
            pass
    out = OrderedDict()
    by_name = {e.name: e for e in entries}
    for k in order:
        ent = by_name[k]
        arr = np.array(arrays[k], dtype=ent.dtype.storage, copy=True, order="C")  # own, writable memory
        if arr.shape != ent.shape:
            raise _bad(path, f"tensor '{k}': read shape {list(arr.shape)}, header says {list(ent.shape)}")
        out[k] = Tensor._make_cpu(arr, ent.dtype)
    structure = None
    if _STRUCT_KEY in meta:
        try:
            structure = json.loads(meta[_STRUCT_KEY])
        except (ValueError, RecursionError) as e:
            raise _bad(path, f"its structure is not valid JSON: {str(e)[:100]}") from None
    devices = None
    if structure is None and _DEVICES_KEY in meta:
        try:
            devices = json.loads(meta[_DEVICES_KEY])
        except (ValueError, RecursionError):
            devices = None
        if not isinstance(devices, dict) or not all(isinstance(v, str) and k in out for k, v in devices.items()):
            raise _bad(path, f"its {_DEVICES_KEY} metadata is not a mapping of its tensors to devices")
    arrays_kept = {}
    if structure is not None:   # numpy arrays' bytes stay numpy arrays on the host, wherever tensors go
        from .object_graph import array_names
        arrays_kept = {k: out.pop(k) for k in array_names(structure) if k in out}
    _place(path, out, structure, dev, mapper, devices)
    out.update(arrays_kept)
    if structure is None:
        return out
    from .object_graph import unflatten
    try:
        return unflatten(structure, out, weights_only, lambda why: _bad(path, why))
    except WeightsOnlyError as e:   # also a CheckpointError, as from a .pt file
        if isinstance(e, CheckpointError):
            raise
        raise WeightsOnlyCheckpointError(str(e)) from None


