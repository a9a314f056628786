"""Reading PyTorch's own .pt files (torch.save's zip format) without PyTorch and without running code.

A torch.save file is a zip archive (stored, not compressed) holding `<name>/data.pkl` (a pickle of the
object), `<name>/data/<key>` (the raw bytes of each storage), `<name>/byteorder` ("little"/"big") and
`<name>/version`. The pickle refers to storages through persistent ids
`('storage', torch.FloatStorage, key, location, numel)` and rebuilds tensors with
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`.

`read_pt` unpickles data.pkl with a restricted unpickler (pickle's Python implementation, limited to the
opcodes `torch.load(weights_only=True)` accepts, each operand checked): `find_class` returns rawdev's own
stand-ins for a short allowlist of globals (the tensor/parameter rebuild functions, the typed storage classes,
dtypes, torch.Size, torch.device, collections.OrderedDict and builtins set/complex) and refuses every other
global by name, so nothing from the file is ever imported or called. Its work is linear in the pickle's size:
every container is walked once however often it is shared, dict keys and set elements are small plain values
(their hash is bounded), and `_Ctx.work` counts the steps so the tests can hold it to that. Rebuilt tensors are
placeholder objects without a __dict__ until the pickle is done; then the whole result is walked (only
containers, scalars, strings, dtypes and devices may appear), each storage is read once, checked against
its entry's size, and the tensors are built as views of it (tensors that share a storage share memory on
the cpu). Any problem is a CheckpointError naming the file, the entry and what is wrong.
"""

import io
import math
import pickle
import typing
import zipfile
from collections import OrderedDict

import numpy as np

from .. import dtypes as _dt
from ..device import device as _device
from ..safe_globals import WeightsOnlyError
from ..tensor.core import Tensor
from .ptobjects import ClassRef, ObjRef
from .ptobjects import build as build_object
from .ptobjects import find as find_object_class

__all__ = ["read_pt", "is_legacy_pickle", "LEGACY_HINT"]

_STORAGES = {"FloatStorage": _dt.float32, "DoubleStorage": _dt.float64, "HalfStorage": _dt.float16,
             "BFloat16Storage": _dt.bfloat16, "LongStorage": _dt.int64, "IntStorage": _dt.int32,
             "ShortStorage": _dt.int16, "CharStorage": _dt.int8, "ByteStorage": _dt.uint8,
             "BoolStorage": _dt.bool}
_DTYPES = {"float32": _dt.float32, "float": _dt.float32, "float16": _dt.float16, "half": _dt.float16,
           "bfloat16": _dt.bfloat16, "float64": _dt.float64, "double": _dt.float64, "int64": _dt.int64,
           "long": _dt.int64, "int32": _dt.int32, "int": _dt.int32, "int16": _dt.int16, "short": _dt.int16,
           "int8": _dt.int8, "uint8": _dt.uint8, "bool": _dt.bool}
MAX_DEPTH = 200
LEGACY_HINT = ("re-save it with PyTorch >= 1.6 as a zip file (`torch.save(torch.load(path, weights_only=True), "
               "out)`, the default format) or as safetensors (`safetensors.torch.save_file(state_dict, out)`)")


def _short(x):
    """A bounded description of a value from the file (never str() of a container: it may be huge)."""
    if x is None or type(x) in (bool, int, float):
        return repr(x)[:40]
    if type(x) is str:
        return repr(x[:40])
    return f"a {type(x).__name__}"


def _err(msg):
    from ..load_placement import CheckpointError
    return CheckpointError(msg)


def PtWeightsOnlyError(msg):  # noqa: N802  (made like an exception class)
    from ..load_placement import WeightsOnlyCheckpointError
    return WeightsOnlyCheckpointError(msg)


_LEGACY_MAGIC = (0x1950A86A20F9469CFC6C).to_bytes(10, "little")   # torch.serialization's MAGIC_NUMBER


def is_legacy_pickle(head):
    """True when the first 14 bytes are PyTorch's legacy torch.save header: a pickle (PROTO n) whose first
    object is LONG1 MAGIC_NUMBER (a safetensors header length can start with b"\\x80\\x02" too)."""
    return len(head) >= 14 and head[0] == 0x80 and head[2:4] == b"\x8a\x0a" and bytes(head[4:14]) == _LEGACY_MAGIC


class _StorageType:
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _StorageRef:
    __slots__ = ("key", "dtype", "location", "numel", "type_name")

    def __init__(self, key, dtype, location, numel, type_name):
        self.key, self.dtype, self.location, self.numel, self.type_name = key, dtype, location, numel, type_name


class _TensorRef:
    """A tensor the pickle asked for; becomes a Tensor once the pickle is done and checked."""
    __slots__ = ("storage", "offset", "size", "stride", "requires_grad", "param")

    def __init__(self, storage, offset, size, stride, requires_grad, param=False):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.requires_grad, self.param = requires_grad, param


class _Ctx:
    def __init__(self, name):
        self.name = name
        self.work = 0   # steps taken on this file's pickle (opcodes, container items, key nodes, walk visits)

    def bad(self, why):
        return _err(f"rawdev.load: '{self.name}' is not a readable PyTorch checkpoint: {why}")


def _ints(ctx, x, what, n=None):
    if not isinstance(x, (tuple, list)) or len(x) > 64 or not all(type(v) is int for v in x):
        raise ctx.bad(f"a tensor's {what} {_short(x)} is not a tuple of at most 64 ints")
    if n is not None and len(x) != n:
        raise ctx.bad(f"a tensor's {what} {tuple(x)} has {len(x)} entries, its size has {n}")
    return tuple(x)


def _make_functions(ctx):
    def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                          metadata=None):
        if not isinstance(storage, _StorageRef):
            raise ctx.bad(f"_rebuild_tensor_v2 got {type(storage).__name__} as its storage")
        size = _ints(ctx, size, "size")
        stride = _ints(ctx, stride, "stride", len(size))
        if type(storage_offset) is not int or storage_offset < 0:
            raise ctx.bad(f"a tensor's storage offset {_short(storage_offset)} is not an int >= 0")
        if any(d < 0 for d in size) or any(s < 0 for s in stride):
            raise ctx.bad(f"a tensor of storage '{storage.key}' has a negative size or stride ({size}, {stride})")
        if math.prod(size) > 0:
            last = storage_offset + sum((d - 1) * s for d, s in zip(size, stride))
            if last >= storage.numel:
                raise ctx.bad(f"a tensor (offset {storage_offset}, size {list(size)}, stride {list(stride)}) reaches "
                              f"element {last} of storage '{storage.key}', which holds {storage.numel}")
        isz = storage.dtype.itemsize
        if math.prod(size) * isz > 1 << 40:
            raise ctx.bad(f"a tensor of storage '{storage.key}' has size {list(size)}, more than 1 TiB")
        if not isinstance(requires_grad, bool):
            raise ctx.bad(f"a tensor's requires_grad is {type(requires_grad).__name__}, not bool")
        if backward_hooks is not None and (not isinstance(backward_hooks, dict) or backward_hooks):
            raise ctx.bad("a tensor carries backward hooks (code), which rawdev does not load")
        return _TensorRef(storage, storage_offset, size, stride, requires_grad)

    def rebuild_parameter(data, requires_grad=True, backward_hooks=None, *state):
        if not isinstance(data, _TensorRef) or not isinstance(requires_grad, bool):
            raise ctx.bad("_rebuild_parameter got something other than a tensor and a bool")
        if backward_hooks is not None and (not isinstance(backward_hooks, dict) or backward_hooks):
            raise ctx.bad("a parameter carries backward hooks (code), which rawdev does not load")
        if state and state[0] not in (None, {}, ()) and not (isinstance(state[0], dict) and not state[0]):
            raise ctx.bad("a parameter carries extra Python state, which rawdev does not load")
        return _TensorRef(data.storage, data.offset, data.size, data.stride, requires_grad, param=True)

    def size(x=()):
        return _ints(ctx, x, "torch.Size")

    def device(kind, index=None):
        if not isinstance(kind, (str, int)) or (index is not None and type(index) is not int):
            raise ctx.bad(f"torch.device({_short(kind)}, {_short(index)}) is not a device")
        try:
            return _device(kind, index) if index is not None else _device(kind)
        except (ValueError, TypeError, RuntimeError) as e:
            raise ctx.bad(f"torch.device({_short(kind)}): {str(e)[:80]}") from None

    def odict(*args):
        if len(args) > 1:
            raise ctx.bad("OrderedDict() got more than one argument")
        if not args:
            return OrderedDict()
        src = args[0]
        if type(src) not in (dict, OrderedDict, list, tuple):
            raise ctx.bad(f"OrderedDict() got {_short(src)}, not a dict or a list of pairs")
        ctx.work += len(src)
        pairs = list(src.items()) if isinstance(src, dict) else [p for p in src]
        for p in pairs:
            if type(p) not in (tuple, list):
                raise ctx.bad(f"OrderedDict() got an item that is {_short(p)}, not a (key, value) pair")
            if len(p) != 2:
                raise ctx.bad(f"OrderedDict() got an item of {len(p)} values, not a (key, value) pair")
            _check_key(ctx, p[0])
        return OrderedDict(pairs)

    def make_set(items=()):
        if type(items) not in (list, tuple):
            raise ctx.bad(f"set() got {_short(items)}, not a list")
        for x in items:
            _check_key(ctx, x)
        return set(items)

    return {("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor_v2,
            ("torch._utils", "_rebuild_parameter"): rebuild_parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): rebuild_parameter,
            ("torch", "Size"): size, ("torch", "device"): device,
            ("collections", "OrderedDict"): odict,
            ("builtins", "set"): make_set, ("builtins", "complex"): complex}


def _check_key(ctx, x):
    """A dict key or set element must be a plain value whose hash is cheap: a scalar, a string, a dtype, a device
    or a small tuple of those (a crafted tuple-of-shared-tuples would take exponential time to hash)."""
    budget = [256]

    def plain(v, depth):
        budget[0] -= 1
        ctx.work += 1
        if budget[0] < 0 or depth > 4:
            return False
        if v is None or type(v) in (bool, int, float, complex, str, bytes) or isinstance(v, (_dt.dtype, _device)):
            return True
        return type(v) is tuple and all(plain(e, depth + 1) for e in v)

    if not plain(x, 0):
        raise ctx.bad(f"a dict key or set element is {_short(x)}, not a plain value")


_Base = pickle._Unpickler   # the Python implementation: its opcodes can be overridden one by one

# The opcodes torch.load(weights_only=True) accepts (torch/_weights_only_unpickler.py); every other one (DICT,
# LIST, FROZENSET, ADDITEMS, MEMOIZE, STACK_GLOBAL, the text and protocol 4/5 forms...) is refused as it is.
_ALLOWED_OPS = ("PROTO", "STOP", "GLOBAL", "REDUCE", "NEWOBJ", "BUILD", "MARK", "APPEND", "APPENDS", "SETITEM",
                "SETITEMS", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE", "EMPTY_TUPLE",
                "EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "BININT", "BININT1", "BININT2", "BINFLOAT", "BINUNICODE",
                "SHORT_BINSTRING", "LONG1", "BINPERSID", "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT")
_OP_NAMES = {op.code.encode("latin-1")[0]: op.name for op in __import__("pickletools").opcodes}


def _refuse_op(code):
    def refuse(self):
        raise self.ctx.bad(f"its pickle uses opcode {_OP_NAMES.get(code, hex(code))} ({code}), which "
                           f"torch.load(weights_only=True) refuses too (Unsupported operand {code})")
    return refuse


def _counted(fn):
    def step(self):
        self.ctx.work += 1
        fn(self)
    return step


class _Unpickler(_Base):
    """pickle's reader limited to PyTorch's weights_only opcodes, with find_class/persistent_load restricted, calls
    (REDUCE) only of the allowlist's functions, and the opcodes that store into containers (SETITEM(S),
    APPEND(S)) and set attributes (BUILD) checked. Every opcode and every container item counts as work."""
    dispatch: typing.ClassVar[dict] = {}

    def __init__(self, data, ctx, weights_only=None):
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.ctx = ctx
        self.weights_only = weights_only
        self.allowed = _make_functions(ctx)
        self.callable = {id(f) for f in self.allowed.values()}

    def pop_mark(self):
        items = super().pop_mark()
        self.ctx.work += len(items)
        return items

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if isinstance(func, ClassRef):
            raise self.ctx.bad(f"the pickle calls the class {func.name} (REDUCE), which rawdev never does; "
                               "torch.save builds objects with NEWOBJ and BUILD")
        if id(func) not in self.callable:
            raise self.ctx.bad(f"REDUCE (a call) of {_short(func)}, which is not an allowlisted function")
        if type(args) is not tuple:
            raise self.ctx.bad(f"REDUCE (a call) with arguments {_short(args)}, not a tuple")
        self.stack[-1] = func(*args)

    def load_newobj(self):
        args = self.stack.pop()
        cls = self.stack[-1]
        if isinstance(cls, ClassRef) and type(args) is tuple:   # a whole module: a placeholder until BUILD
            self.stack[-1] = ObjRef(cls, args)
            return
        raise self.ctx.bad(f"NEWOBJ (creating an object) of {_short(cls)}, which rawdev does not do")

    def load_append(self):
        value = self.stack.pop()
        if type(self.stack[-1]) is not list:
            raise self.ctx.bad(f"APPEND on {_short(self.stack[-1])}, not a list")
        self.stack[-1].append(value)

    def load_appends(self):
        items = self.pop_mark()
        if type(self.stack[-1]) is not list:
            raise self.ctx.bad(f"APPENDS on {_short(self.stack[-1])}, not a list")
        self.stack[-1].extend(items)

    def _dict_target(self, op):
        target = self.stack[-1]
        if type(target) not in (dict, OrderedDict):
            raise self.ctx.bad(f"{op} on {_short(target)}, not a dict")
        return target

    def load_setitem(self):
        value = self.stack.pop()
        key = self.stack.pop()
        _check_key(self.ctx, key)
        self._dict_target("SETITEM")[key] = value

    def load_setitems(self):
        items = self.pop_mark()
        target = self._dict_target("SETITEMS")
        for i in range(0, len(items) - 1, 2):
            _check_key(self.ctx, items[i])
            target[items[i]] = items[i + 1]

    def load_build(self):
        state = self.stack.pop()
        if isinstance(self.stack[-1], ObjRef) and self.stack[-1].state is None:   # a whole module's __dict__
            self.stack[-1].state = state
            return
        if type(self.stack[-1]) not in (dict, OrderedDict):   # a state_dict's _metadata: dropped
            raise self.ctx.bad(f"BUILD (setting attributes) on {_short(self.stack[-1])}, which rawdev does not do")
        del state

    def find_class(self, module, name):
        if module == "__builtin__":   # protocol 2 names builtins as Python 2 did
            module = "builtins"
        if (module, name) in self.allowed:
            return self.allowed[(module, name)]
        if module == "torch" and name in _STORAGES:
            return _StorageType(name, _STORAGES[name])
        if module == "torch" and name in _DTYPES:
            return _DTYPES[name]
        try:   # whole modules: torch.nn's layers as rawdev's, other classes under the weights_only rules
            ref = find_object_class(module, name, self.weights_only)
        except WeightsOnlyError as e:
            raise PtWeightsOnlyError(f"rawdev.load: refusing to load global '{module}.{name}' from {self.ctx.name}: "
                                     f"only tensors, containers and scalars are allowed (weights_only). {e}") from None
        if ref is not None:
            return ref
        hint = ""
        if module == "__main__" or module.startswith("torch.nn.") or module.startswith("torch.optim."):
            hint = "; save model.state_dict() (or optimizer.state_dict()) with torch.save, not the object itself"
        raise _err(f"rawdev.load: refusing to load global '{module}.{name}' from {self.ctx.name}: only tensors, "
                   f"containers and scalars are allowed (weights_only){hint}")

    def persistent_load(self, pid):
        ctx = self.ctx
        if not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage":
            raise ctx.bad(f"unknown persistent id {_short(pid)} (only ('storage', type, key, location, numel))")
        _, st, key, location, numel = pid
        if not isinstance(st, _StorageType):
            raise ctx.bad(f"a storage's type is {_short(st)}, not one of torch's typed storages "
                          f"({', '.join(_STORAGES)})")
        if not isinstance(key, str) or not key or "/" in key or not isinstance(location, str):
            raise ctx.bad(f"a storage's key {_short(key)} or location {_short(location)} is malformed")
        if type(numel) is not int or numel < 0:
            raise ctx.bad(f"storage '{key}' claims {_short(numel)} elements")
        return _StorageRef(key, st.dtype, location, numel, st.name)


for _code in range(256):
    _name = _OP_NAMES.get(_code)
    if _name in _ALLOWED_OPS:
        _fn = _Unpickler.__dict__.get("load_" + _name.lower()) or _Base.dispatch[_code]
        _Unpickler.dispatch[_code] = _counted(_fn)
    else:
        _Unpickler.dispatch[_code] = _refuse_op(_code)


def _archive(zf, ctx):
    names = zf.namelist()
    pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pkl) != 1:
        raise ctx.bad(f"the zip holds {len(pkl)} '<name>/data.pkl' entries, torch.save writes one")
    for info in zf.infolist():
        if info.compress_type != zipfile.ZIP_STORED:
            raise ctx.bad(f"zip entry '{info.filename}' is compressed (method {info.compress_type}); torch.save "
                          "stores entries uncompressed")
    return pkl[0][:-len("data.pkl")]


def _walk(x, fn, depth=0, ctx=None, memo=None):
    """Rebuild x with every _TensorRef replaced by fn(ref); refuse anything that is not plain data. Each container
    is rebuilt once (memo by id) however many times it is shared, so the walk is linear in the pickle's size."""
    if depth > MAX_DEPTH:
        raise ctx.bad(f"its object is nested more than {MAX_DEPTH} levels deep")
    ctx.work += 1
    if isinstance(x, _TensorRef):
        return fn(x)
    if x is None or type(x) in (bool, int, float, complex, str, bytes) or isinstance(x, (_dt.dtype, _device)):
        return x
    if id(x) in memo:
        return memo[id(x)]
    t = type(x)
    if t in (dict, OrderedDict):
        out = t()
        memo[id(x)] = out
        for k, v in x.items():
            _check_key(ctx, k)   # re-hashing the key below costs what checking it does
            out[_walk(k, fn, depth + 1, ctx, memo)] = _walk(v, fn, depth + 1, ctx, memo)
        # attributes BUILD set on an OrderedDict (a state_dict's _metadata) are dropped: fresh containers come back
        return out
    if t is list:
        out = []
        memo[id(x)] = out
        out.extend(_walk(v, fn, depth + 1, ctx, memo) for v in x)
        return out
    if t in (tuple, set):
        out = t(_walk(v, fn, depth + 1, ctx, memo) for v in x)
        memo[id(x)] = out
        for v in x if t is set else ():
            _check_key(ctx, v)   # the set's elements are hashed again
        return out
    if isinstance(x, ObjRef):   # a whole module (or allowed object): built once its state is walked
        out = build_object(x, _walk(x.state, fn, depth + 1, ctx, memo), ctx.bad)
        memo[id(x)] = out
        return out
    if isinstance(x, _StorageRef):
        raise ctx.bad(f"it holds a bare storage ('{x.key}'); rawdev loads tensors, not storages")
    raise ctx.bad(f"it holds a {t.__name__} object, not a tensor, container or scalar")


def _read_storages(zf, prefix, refs, ctx, byteorder):
    """{key: 1-D writable numpy storage array}, each storage read once and checked against its entry."""
    from ..load_placement import _check_budget, _Entry, _fmt, host_memory_available
    by_key = {}
    for r in refs:
        s = r.storage
        prev = by_key.get(s.key)
        if prev is not None and (prev.dtype is not s.dtype or prev.numel != s.numel):
            raise ctx.bad(f"storage '{s.key}' is referred to as both {prev.type_name}({prev.numel}) and "
                          f"{s.type_name}({s.numel})")
        by_key[s.key] = s
    entries = []
    for key, s in by_key.items():
        entry = f"{prefix}data/{key}"
        try:
            info = zf.getinfo(entry)
        except KeyError:
            raise ctx.bad(f"storage '{key}' has no zip entry '{entry}'") from None
        need = s.numel * s.dtype.itemsize
        if info.file_size != need:
            raise ctx.bad(f"zip entry '{entry}' holds {info.file_size} bytes but {s.type_name} of {s.numel} "
                          f"elements needs {need}")
        entries.append(_Entry(key, s.type_name, s.dtype, (s.numel,), 0, need))
    _check_budget(ctx.name, entries, "host memory", host_memory_available())
    out = {}
    for key, s in by_key.items():
        raw = zf.read(f"{prefix}data/{key}")
        if len(raw) != s.numel * s.dtype.itemsize:
            raise ctx.bad(f"zip entry '{prefix}data/{key}' read {_fmt(len(raw))}, expected "
                          f"{_fmt(s.numel * s.dtype.itemsize)}")
        st = s.dtype.storage
        if byteorder == "big" and st.itemsize > 1:
            arr = np.frombuffer(raw, dtype=st.newbyteorder(">")).astype(st)
        else:
            arr = np.frombuffer(raw, dtype=st).copy()
        out[key] = arr
    return out


def read_pt(src, name, map_location=None, weights_only=None):
    """Load a torch.save zip file (a path or bytes) as rawdev objects; see the module docstring."""
    from collections.abc import Mapping

    from ..device import as_device
    from ..load_placement import CheckpointError, _place
    ctx = _Ctx(name)
    try:
        with zipfile.ZipFile(io.BytesIO(src) if isinstance(src, (bytes, bytearray)) else src) as zf:
            prefix = _archive(zf, ctx)
            byteorder = "little"
            if f"{prefix}byteorder" in zf.namelist():
                byteorder = zf.read(f"{prefix}byteorder").decode("ascii", "replace").strip()
                if byteorder not in ("little", "big"):
                    raise ctx.bad(f"its byteorder entry says {byteorder[:20]!r}, not 'little' or 'big'")
            data = zf.read(f"{prefix}data.pkl")
            try:
                obj = _Unpickler(data, ctx, weights_only).load()
            except CheckpointError:
                raise
            except RecursionError:
                raise ctx.bad(f"'{prefix}data.pkl' is nested too deeply") from None
            except Exception as e:   # a malformed pickle: any of pickle's many exception types
                raise ctx.bad(f"'{prefix}data.pkl' is not a valid pickle ({type(e).__name__}: "
                              f"{str(e)[:120]})") from None
            refs = []
            _walk(obj, lambda r: refs.append(r), ctx=ctx, memo={})
            storages = _read_storages(zf, prefix, refs, ctx, byteorder)
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as e:
        raise ctx.bad(f"its zip structure is damaged ({e})") from None
    except RecursionError:
        raise ctx.bad("its object is nested too deeply") from None
    except Exception as e:   # zlib/struct/OS errors from a damaged archive
        raise ctx.bad(f"{type(e).__name__}: {str(e)[:160]}") from None

    built, names, locs = {}, {}, {}

    def build(r):
        if id(r) in built:
            return r
        s = r.storage
        base = storages[s.key]
        n = len(built)
        if math.prod(r.size) == 0:
            arr = np.empty(r.size, dtype=base.dtype)
        else:
            isz = base.dtype.itemsize
            arr = np.lib.stride_tricks.as_strided(base[r.offset:], shape=r.size,
                                                  strides=tuple(st * isz for st in r.stride))
        built[id(r)] = f"tensor{n}"
        names[f"tensor{n}"] = Tensor._make_cpu(arr, s.dtype)
        locs[f"tensor{n}"] = s.location
        return r

    try:
        _walk(obj, build, ctx=ctx, memo={})
    except (ValueError, TypeError, MemoryError) as e:
        raise ctx.bad(f"a tensor cannot be built from its storage ({type(e).__name__}: {str(e)[:120]})") from None
    mapper = map_location if (callable(map_location) or isinstance(map_location, Mapping)) else None
    dev = as_device(map_location) if map_location is not None and mapper is None else None
    _place(name, names, None, dev, mapper, locs)
    final = {}

    def finish(r):
        if id(r) in final:
            return final[id(r)]
        t = names[built[id(r)]]
        if r.param:
            from ..nn.parameter import Parameter
            t = Parameter(t, requires_grad=r.requires_grad and t.dtype.is_floating_point)
        elif r.requires_grad and t.dtype.is_floating_point:
            t = t.requires_grad_()
        final[id(r)] = t
        return t

    return _walk(obj, finish, ctx=ctx, memo={})

