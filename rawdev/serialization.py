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
dtypes are the same, and a missing rawdev key order falls back to the file's order.
"""

import json
import math
import os
import struct
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
from safetensors import safe_open

from . import dtypes as _dt
from .device import as_device
from .tensor.core import Tensor

__all__ = ["save", "load", "CheckpointError"]

_ORDER_KEY = "rawdev.keys"
_FORMAT = "rawdev"
MAX_HEADER = 100_000_000          # safetensors' own limit on the JSON header
# every dtype name the safetensors format defines, with its size in bits
_ST_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F4": 4, "F6_E2M3": 6,
            "F6_E3M2": 6, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
            "C64": 64, "F64": 64, "I64": 64, "U64": 64}


class CheckpointError(RuntimeError):
    """A checkpoint file rawdev cannot load: what is wrong, in which file, for which tensor."""


def _bad(path, why):
    return CheckpointError(f"rawdev.load: '{path}' is not a readable safetensors file ({why}). rawdev checkpoints "
                           "are safetensors files written by rawdev.save or safetensors.torch.save_file.")


def save(obj, f, metadata=None):
    """Save a state_dict (mapping of str -> Tensor, on any device) to the path f as safetensors.

    Cuda tensors are read back in one batched copy per device. metadata: extra str -> str pairs.
    The same state_dict (same names, dtypes, shapes, values, metadata) always gives the same bytes.
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
        if k == "__metadata__":
            raise ValueError("rawdev.save: '__metadata__' is reserved by the safetensors format; rename the tensor")
    meta = {"format": _FORMAT, _ORDER_KEY: json.dumps([k for k, _ in items])}
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
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    path = os.fspath(f)
    tmp = path + ".tmp"
    # Write then rename: a crash mid-save never leaves a truncated checkpoint under the real name.
    try:
        with open(tmp, "wb") as fh:
            fh.write(struct.pack("<Q", len(text)))
            fh.write(text)
            for arr in blobs:
                if arr.nbytes:
                    fh.write(memoryview(arr.reshape(-1).view(np.uint8)))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class _Entry:
    __slots__ = ("name", "st", "dtype", "shape", "begin", "end")

    def __init__(self, name, st, dtype, shape, begin, end):
        self.name, self.st, self.dtype, self.shape, self.begin, self.end = name, st, dtype, shape, begin, end

    @property
    def nbytes(self):
        return self.end - self.begin


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key '{k}' appears twice")
        out[k] = v
    return out


def _fmt(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


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
    for name, e in header.items():
        where = f"tensor '{name}'"
        if not isinstance(e, dict) or set(e) - {"dtype", "shape", "data_offsets"} or len(e) != 3:
            raise _bad(path, f"{where}: an entry must hold exactly dtype, shape and data_offsets")
        st, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
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
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.begin < at:
            raise _bad(path, f"tensor '{e.name}': its bytes {[e.begin, e.end]} overlap another tensor's")
        if e.begin > at:
            raise _bad(path, f"tensor '{e.name}': {e.begin - at} bytes before it belong to no tensor")
        at = e.end
    if at != data_len:
        raise _bad(path, f"{data_len - at} bytes after the last tensor belong to no tensor")
    return meta, entries, data_start


def host_memory_available():
    """Bytes of host memory a load may use: MemAvailable from /proc/meminfo (else free physical pages)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _check_budget(path, entries, where, budget):
    """Refuse, naming the tensor that crosses it, a load whose tensors exceed `budget` bytes of `where`."""
    total = 0
    for e in sorted(entries, key=lambda e: -e.nbytes):
        total += e.nbytes
        if total > budget:
            raise CheckpointError(
                f"rawdev.load: '{path}' does not fit in {where}: tensor '{e.name}' ({e.st} {list(e.shape)}, "
                f"{_fmt(e.nbytes)}) brings the checkpoint to {_fmt(total)} of {_fmt(sum(x.nbytes for x in entries))}, "
                f"more than the {_fmt(budget)} available")


def load(f, map_location=None):
    """Load a safetensors file into an OrderedDict of Tensors, in the order they were saved.

    map_location: None or "cpu" -> cpu tensors; "cuda"/"cuda:N"/device -> all tensors placed there in
    one staged copy. (Loading into a model: model.load_state_dict(rawdev.load(path)) copies into the
    model's storage wherever it lives, batched the same way.) A file that is not a well-formed
    checkpoint raises CheckpointError (a RuntimeError) before anything is allocated.
    """
    path = os.fspath(f)
    if not os.path.exists(path):
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{path}'")
    dev = as_device(map_location) if map_location is not None else None
    meta, entries, data_start = read_header(path)
    _check_budget(path, entries, "host memory", host_memory_available())
    if dev is not None and dev.type == "cuda" and entries:
        from .cuda import mem_get_info
        free, _ = mem_get_info(dev)
        _check_budget(path, entries, f"the free memory of {dev}", free)
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
        e = by_name[k]
        arr = np.array(arrays[k], dtype=e.dtype.storage, copy=True, order="C")  # own, writable memory
        if arr.shape != e.shape:
            raise _bad(path, f"tensor '{k}': read shape {list(arr.shape)}, header says {list(e.shape)}")
        out[k] = Tensor._make_cpu(arr, e.dtype)
    if dev is not None and dev.type == "cuda" and out:
        from .tensor.moves import move_tensors
        move_tensors(list(out.items()), dev, what=f"checkpoint {os.path.basename(path)}")
    return out
