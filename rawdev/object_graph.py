"""Whole Python objects as data: what rawdev.save stores for anything that is not a plain state_dict.

`flatten(obj)` walks the object and returns its tensors (each once, named "t.0", "t.1", ...) and a JSON-able
description of everything else; `unflatten(...)` rebuilds it. The description is a tree of one-key-tagged
dicts:

- scalars: {"none"}, {"bool"}, {"int": "123"} (as a string: any size), {"float": "0.1"} (repr: exact, nan/inf),
  {"str"}, {"bytes": base64}, {"complex": [re, im]}, {"slice"/"range": [start, stop, step]}
- rawdev values: {"tensor": name, "device", "requires_grad", "param"}, {"dtype": name}, {"device": "cuda:0"},
  {"qtensor": name of its integers, "dtype": "qint8", "qscheme", "scale"/"zero_point" or "scales"/"zero_points"
  (ndarrays)/"axis"} (a quantized tensor), {"qscheme": name}
- numpy: {"ndarray": name, "dtype": "<f8", "shape": [...]} (its bytes are a safetensors tensor: typed when
  rawdev has the dtype, else raw uint8 bytes), {"npscalar": ...} the same for a numpy scalar
- containers: {"dict": [[k, v], ...], "ordered"/"default"}, {"list"}, {"tuple"}, {"set", "frozen"},
  {"namedtuple": "mod:Class", "items"}
- names: {"global": "mod:qualname"} (a class or module-level function), {"enum": "mod:Class", "name"},
  {"method": <object>, "name"} (a bound method)
- objects: {"object": "mod:Class", "attrs": [[name, v], ...], "slots": [...], "items"/"dict": ...} for
  instances of plain Python classes (every class of its MRO written in Python), rebuilt with cls.__new__(cls)
  and their attributes set directly: no __init__, __reduce__ or __setstate__ runs.

Containers and objects carry an "id"; a second reference to the same one is {"ref": id}, so shared objects
(a Parameter in a module and in an optimizer's param_groups, a submodule used twice) stay shared, cycles
included. What cannot be described (lambdas and nested functions, open files, generators, locks, C-extension
objects) is refused at save time with the attribute path that reaches it ("model.fc.hook").
"""

from __future__ import annotations

import base64
import enum
import types
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from . import dtypes as _dt
from .device import device as _device_cls
from .safe_globals import global_name, resolve
from .tensor.core import Tensor

__all__ = ["flatten", "unflatten", "describable_class", "array_names", "root_label"]

_HEAPTYPE = 1 << 9   # Py_TPFLAGS_HEAPTYPE: a class written in Python (class statement), not a C type
_MAX_DEPTH = 400
_MODULE_DICTS = ("._modules", "._parameters", "._buffers")
# numpy dtypes rawdev tensors hold, stored typed (others go as raw bytes with their numpy dtype string)
_NP_TO_DT = {np.dtype(d.storage): d for d in _dt.ALL if d is not _dt.bfloat16}


def describable_class(cls: type) -> bool:
    """True when every class in cls's MRO is written in Python (or is object): an instance is then its
    __dict__/__slots__ and nothing hidden in C (which files, locks, generators and sockets are)."""
    return all(c is object or (c.__flags__ & _HEAPTYPE) for c in cls.__mro__)


def _named(obj) -> str | None:
    """'module:qualname' when obj (a class or function) is reachable by that import path, else None."""
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str) or "<" in qual:
        return None
    import sys
    target: Any = sys.modules.get(mod)
    for p in qual.split("."):
        target = getattr(target, p, None)
    if target is obj:
        return global_name(obj)
    if target is not None and getattr(obj, "__wrapped__", None) is target:
        # an op behind the autocast hook: the wrapper keeps the implementation's __module__, and is reachable
        # under its own name from the public module that exports it (F.relu is rawdev.nn.functional:relu)
        for public in _PUBLIC_OP_MODULES:
            m = sys.modules.get(public)
            if m is not None and getattr(m, qual, None) is obj:
                return f"{public}:{qual}"
    return None


_PUBLIC_OP_MODULES = ("rawdev.nn.functional", "rawdev", "rawdev.special", "rawdev.linalg", "rawdev.fft")


def _slots(cls) -> list[str]:
    names: list[str] = []
    for c in cls.__mro__:
        s = c.__dict__.get("__slots__", ())
        for n in ((s,) if isinstance(s, str) else s):
            if n not in ("__dict__", "__weakref__") and n not in names:
                names.append(n)
    return names



def check_text(s: str, what: str) -> None:
    """A string that goes into the file's UTF-8 JSON header must be encodable: a lone surrogate ("\\ud800", from
    os.fsdecode of a bad file name, say) cannot be, and is refused naming where it is."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"rawdev.save: {what} {s[:80]!r} is not valid Unicode text (a lone surrogate "
                         f"U+{ord(s[e.start]):04X} at index {e.start}); a safetensors header is UTF-8 JSON and cannot "
                         "hold it, so nothing was written") from None


class _Encoder:
    def __init__(self):
        self.items: list[tuple[str, Tensor]] = []
        self.tensor_names: dict[int, str] = {}
        self.ids: dict[int, int] = {}
        self.keep: list[Any] = []   # keeps every object seen alive, so no id() is reused during the walk

    def _refuse(self, x, where, why=""):
        t = type(x)
        what = f"{t.__module__}.{t.__qualname__}"
        if isinstance(x, types.FunctionType):
            what = f"the function {x.__qualname__}"
            why = why or ("a lambda or nested function has no import path; define it at module level or leave it "
                          "out of what you save" if "<" in x.__qualname__ else "it cannot be imported by its name")
        raise TypeError(f"rawdev.save: cannot store {where}, {what}: {why or 'it is not data'} (rawdev never "
                        "pickles arbitrary objects: it stores tensors, numpy arrays, numbers, strings, containers, "
                        "and objects of Python classes made of those)")

    def _shared(self, x):
        """{"ref": id} when x was seen already; else registers x and returns (None, its new id)."""
        k = id(x)
        if k in self.ids:
            return {"ref": self.ids[k]}, None
        self.ids[k] = len(self.ids)
        self.keep.append(x)
        return None, self.ids[k]

    def _array(self, arr: np.ndarray, where):
        if arr.dtype.hasobject or arr.dtype.fields is not None or arr.dtype.kind not in "biufcSUmM":
            self._refuse(arr, where, f"a numpy array of dtype {arr.dtype} (objects or records) is not plain data")
        name = f"t.{len(self.items)}"
        c = np.ascontiguousarray(arr)
        dt = _NP_TO_DT.get(c.dtype.newbyteorder("=")) if c.dtype.isnative else None
        if dt is not None:
            self.items.append((name, Tensor._make_cpu(c.copy(), dt)))
        else:   # a dtype rawdev tensors lack (uint32, complex, strings, big-endian): its raw bytes
            self.items.append((name, Tensor._make_cpu(c.reshape(-1).view(np.uint8).copy(), _dt.uint8)))
        return {"ndarray": name, "dtype": c.dtype.str, "shape": [int(n) for n in c.shape]}

    def enc(self, x: Any, where: str, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise ValueError(f"rawdev.save: {where} is nested more than {_MAX_DEPTH} levels deep")
        t = type(x)
        if x is None:
            return {"none": 0}
        if t is bool:
            return {"bool": x}
        if t is int:
            return {"int": str(x)}
        if t is float:
            return {"float": repr(x)}
        if t is str:
            check_text(x, where)
            return {"str": x}
        if t is bytes:
            return {"bytes": base64.b64encode(x).decode("ascii")}
        if t is complex:
            return {"complex": [repr(x.real), repr(x.imag)]}
        if isinstance(x, Tensor) and x.is_quantized:
            return self._quantized(x, where)
        if isinstance(x, _dt.qscheme):
            return {"qscheme": x.name}
        if isinstance(x, Tensor):
            name = self.tensor_names.get(id(x))
            if name is None:
                name = self.tensor_names[id(x)] = f"t.{len(self.items)}"
                self.keep.append(x)
                self.items.append((name, x.detach()))
            from .nn.parameter import Parameter
            return {"tensor": name, "device": str(x.device), "requires_grad": bool(x.requires_grad),
                    "param": isinstance(x, Parameter)}
        if isinstance(x, _dt.dtype):
            return {"dtype": x.name}
        if isinstance(x, _device_cls):
            return {"device": str(x)}
        if isinstance(x, np.ndarray):
            return self._array(x, where)
        if isinstance(x, np.generic):
            d = self._array(np.asarray(x), where)
            return {"npscalar": d["ndarray"], "dtype": d["dtype"]}
        if t is slice or t is range:
            return {t.__name__: [self.enc(v, where, depth + 1) for v in (x.start, x.stop, x.step)]}
        if isinstance(x, type) or isinstance(x, (types.FunctionType, types.BuiltinFunctionType)):
            name = _named(x)
            if name is None:
                self._refuse(x, where)
            return {"global": name}
        if isinstance(x, types.MethodType):
            fn = getattr(x, "__func__", None)
            return {"method": self.enc(x.__self__, f"{where}.__self__", depth + 1),
                    "name": getattr(fn, "__name__", "")}
        if isinstance(x, enum.Enum):
            name = _named(t)
            if name is None:
                self._refuse(x, where, "its Enum class has no import path")
            return {"enum": name, "name": x.name}
        ref, oid = self._shared(x)
        if ref is not None:
            return ref
        if t in (dict, OrderedDict, defaultdict):
            # a module's submodules, parameters and buffers are named as attributes: model.fc.weight
            owner = next((where[:-len(s)] for s in _MODULE_DICTS if where.endswith(s)), None)
            out: dict[str, Any] = {"id": oid, "dict": [[self.enc(k, f"{where} (a key)", depth + 1),
                                                        self.enc(v, f"{owner}.{k}" if owner else f"{where}[{k!r}]",
                                                                 depth + 1)]
                                                       for k, v in x.items()]}
            if t is OrderedDict:
                out["ordered"] = True
            if t is defaultdict:
                out["default"] = self.enc(x.default_factory, f"{where}.default_factory", depth + 1)
            return out
        if t is list:
            return {"id": oid, "list": [self.enc(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(x)]}
        if t is tuple:
            return {"id": oid, "tuple": [self.enc(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(x)]}
        if t in (set, frozenset):
            return {"id": oid, "set": [self.enc(v, f"{where} (an element)", depth + 1) for v in x],
                    "frozen": t is frozenset}
        from .tensor.size import Size
        if t is Size:
            return {"id": oid, "size": [int(v) for v in x]}
        if isinstance(x, tuple) and isinstance(getattr(t, "_fields", None), tuple):
            name = _named(t)
            if name is None:
                self._refuse(x, where, "its namedtuple class has no import path (define it at module level)")
            return {"id": oid, "namedtuple": name,
                    "items": [self.enc(v, f"{where}.{f}", depth + 1) for f, v in zip(t._fields, x)]}
        return self._object(x, where, depth, oid)

    def _quantized(self, x, where):
        """A quantized tensor: its integers as a tensor of their storage type, its parameters in the structure."""
        name = self.tensor_names.get(id(x))
        if name is None:
            name = self.tensor_names[id(x)] = f"t.{len(self.items)}"
            self.keep.append(x)
            self.items.append((name, x.int_repr()))
        out: dict[str, Any] = {"qtensor": name, "dtype": x.dtype.name, "qscheme": x.qscheme().name}
        if x.qscheme() is _dt.per_tensor_affine:
            out["scale"], out["zero_point"] = repr(float(x.q_scale())), str(int(x.q_zero_point()))
        else:
            out["scales"] = self._array(x.q_per_channel_scales().numpy(), where)
            out["zero_points"] = self._array(x.q_per_channel_zero_points().numpy(), where)
            out["axis"] = int(x.q_per_channel_axis())
        return out

    def _object(self, x, where, depth, oid):
        t = type(x)
        base = next((b for b in (dict, list) if issubclass(t, b)), None)
        # a dict or list subclass written in Python: its items plus its attributes
        plain = describable_class(t) or (base is not None and all(
            c is object or c is base or (c.__flags__ & _HEAPTYPE) for c in t.__mro__))
        if not plain:
            self._refuse(x, where)
        name = _named(t)
        if name is None:
            self._refuse(x, where, "its class has no import path (a class defined inside a function?)")
        out: dict[str, Any] = {"id": oid, "object": name}
        d = getattr(x, "__dict__", None)
        if d is not None:
            out["attrs"] = [[k, self.enc(v, f"{where}.{k}", depth + 1)] for k, v in d.items()]
        slots = [(n, getattr(x, n)) for n in _slots(t) if hasattr(x, n)]
        if slots:
            out["slots"] = [[k, self.enc(v, f"{where}.{k}", depth + 1)] for k, v in slots]
        if base is dict:
            out["dict"] = [[self.enc(k, f"{where} (a key)", depth + 1), self.enc(v, f"{where}[{k!r}]", depth + 1)]
                           for k, v in dict.items(x)]
        elif base is list:
            out["list"] = [self.enc(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(list.__iter__(x))]
        return out


def root_label(obj: Any) -> str:
    """How an error message names the object saved: "model", "optimizer", or "the object"."""
    from .nn.module import Module
    from .optim.optimizer import Optimizer
    return "model" if isinstance(obj, Module) else "optimizer" if isinstance(obj, Optimizer) else "the object"


def flatten(obj: Any) -> tuple[list[tuple[str, Tensor]], Any]:
    """(tensors as [(name, Tensor)], structure): obj described as data; see the module docstring.
    Raises TypeError naming the attribute path of what cannot be described."""
    e = _Encoder()
    structure = e.enc(obj, root_label(obj))
    return e.items, structure


def array_names(structure: Any) -> set[str]:
    """The names of the tensors that hold numpy arrays' bytes in a structure."""
    found, stack = set(), [structure]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for key in ("ndarray", "npscalar"):
                if isinstance(x.get(key), str):
                    found.add(x[key])
            stack.extend(v for v in x.values() if isinstance(v, (dict, list)))
        elif isinstance(x, list):
            stack.extend(x)
    return found


def unflatten(structure: Any, tensors: dict[str, Tensor], weights_only: bool | None,
              bad: Callable[[str], Exception]) -> Any:
    """Rebuild what flatten described. tensors: the file's tensors by name, already where they belong.
    Classes are resolved under the weights_only rules (rawdev.safe_globals.resolve); a malformed structure is
    bad(why)."""
    memo: dict[int, Any] = {}
    made: dict[str, Tensor] = {}

    def cls_of(name, where, kind):
        try:
            obj = resolve(name, weights_only, where)
        except ValueError as e:
            raise bad(str(e)) from None
        if kind == "class" and not isinstance(obj, type):
            raise bad(f"{where}: {name} is not a class")
        return obj

    def tensor(x):
        name = x["tensor"]
        if name in made:
            return made[name]
        t = tensors[name]
        if x.get("param"):
            from .nn.parameter import Parameter
            t = Parameter(t, requires_grad=bool(x.get("requires_grad", True)))
        elif x.get("requires_grad") and t.dtype.is_floating_point:
            t = t.requires_grad_()
        made[name] = t
        return t

    def qtensor(x):
        name = x["qtensor"]
        if name in made:
            return made[name]
        from .tensor import quantized as _q
        dt = _dt.from_name(x["dtype"])
        scheme = _dt._qscheme_from_name(x["qscheme"])
        ints = tensors[name]
        if not dt.is_quantized or ints.dtype.storage != dt.storage:
            raise bad(f"a quantized tensor's integers ({ints.dtype}) do not match its dtype {dt}")
        vals = np.asarray(ints.cpu()._values())
        if scheme is _dt.per_tensor_affine:
            q = _q._make(vals.copy(), dt, scheme, scale=float(x["scale"]), zp=int(x["zero_point"]))
        else:
            q = _q._make(vals.copy(), dt, scheme, scales=array(x["scales"]), zps=array(x["zero_points"]),
                         axis=int(x["axis"]))
        made[name] = q
        return q

    def array(x):
        t = tensors[x["ndarray"] if "ndarray" in x else x["npscalar"]]
        dt = np.dtype(x["dtype"])
        if dt.hasobject or dt.fields is not None or dt.kind not in "biufcSUmM":
            raise bad(f"a numpy array has dtype {x['dtype'][:20]!r}, which is not plain data")
        raw = t._storage_copy() if hasattr(t, "_storage_copy") else t.numpy()
        raw = np.ascontiguousarray(raw)
        if "npscalar" in x:
            shape: tuple = ()
        else:
            shape = tuple(int(n) for n in x["shape"])
        if raw.dtype == dt and raw.shape == shape:
            return raw.copy()
        flat = raw.reshape(-1).view(np.uint8)
        if flat.nbytes != int(np.prod(shape, dtype=np.int64)) * dt.itemsize:
            raise bad(f"a numpy array of {x['dtype'][:20]} {list(shape)} does not match its {flat.nbytes} bytes")
        arr = flat.view(dt).reshape(shape).copy()
        return arr[()] if "npscalar" in x else arr

    def fill_object(obj, x, depth, where):
        for key in ("attrs", "slots"):
            for k, v in x.get(key, ()):
                if not isinstance(k, str):
                    raise bad(f"{where}: an attribute name is not a string")
                val = dec(v, depth + 1, f"{where}.{k}")
                if key == "attrs":
                    obj.__dict__[k] = val
                else:
                    object.__setattr__(obj, k, val)
        if "dict" in x:
            for k, v in x["dict"]:
                dict.__setitem__(obj, dec(k, depth + 1, where), dec(v, depth + 1, where))
        if "list" in x:
            list.extend(obj, [dec(v, depth + 1, where) for v in x["list"]])

    def dec(x, depth, where):
        if depth > _MAX_DEPTH:
            raise bad("its structure is nested too deeply")
        if not isinstance(x, dict) or len(x) < 1:
            raise bad(f"its structure holds {str(x)[:60]!r}, not an encoded value")
        try:
            if "none" in x:
                return None
            if "bool" in x and isinstance(x["bool"], bool):
                return x["bool"]
            if "int" in x:
                return int(x["int"])
            if "float" in x:
                return float(x["float"])
            if "str" in x and isinstance(x["str"], str):
                return x["str"]
            if "bytes" in x:
                return base64.b64decode(x["bytes"], validate=True)
            if "complex" in x:
                return complex(float(x["complex"][0]), float(x["complex"][1]))
            if "tensor" in x:
                return tensor(x)
            if "qtensor" in x:
                return qtensor(x)
            if "qscheme" in x and len(x) == 1:
                return _dt._qscheme_from_name(x["qscheme"])
            if "ndarray" in x or "npscalar" in x:
                return array(x)
            if "dtype" in x:
                return _dt.from_name(x["dtype"])
            if "device" in x:
                return _device_cls(x["device"])
            if "slice" in x or "range" in x:
                kind = slice if "slice" in x else range
                a, b, c = (dec(v, depth + 1, where) for v in x[kind.__name__])
                if kind is range:
                    return range(a, b, c)
                return slice(a, b, c)
            if "ref" in x:
                return memo[int(x["ref"])]
            if "global" in x:
                return cls_of(x["global"], where, "any")
            if "enum" in x:
                cls = cls_of(x["enum"], where, "class")
                if not issubclass(cls, enum.Enum):
                    raise bad(f"{where}: {x['enum']} is not an Enum")
                return cls[x["name"]]
            if "method" in x:
                owner = dec(x["method"], depth + 1, where)
                name = x["name"]
                if not isinstance(name, str) or not name.isidentifier():
                    raise bad(f"{where}: a bound method's name {str(name)[:40]!r} is not an identifier")
                bound = getattr(owner, name)
                if not isinstance(bound, types.MethodType) or bound.__self__ is not owner:
                    raise bad(f"{where}: {name!r} of the rebuilt object is not one of its methods")
                return bound
            oid = int(x["id"])
            if "dict" in x and "object" not in x:
                if "default" in x:
                    factory = dec(x["default"], depth + 1, where)
                    if factory is not None and not callable(factory):
                        raise bad(f"{where}: a defaultdict's factory is not callable")
                    out: Any = defaultdict(factory)
                else:
                    out = OrderedDict() if x.get("ordered") else {}
                memo[oid] = out
                for k, v in x["dict"]:
                    out[dec(k, depth + 1, where)] = dec(v, depth + 1, f"{where}[...]")
                return out
            if "list" in x and "object" not in x:
                out = memo[oid] = []
                out.extend(dec(v, depth + 1, f"{where}[...]") for v in x["list"])
                return out
            if "tuple" in x:
                out = memo[oid] = tuple(dec(v, depth + 1, f"{where}[...]") for v in x["tuple"])
                return out
            if "size" in x:
                from .tensor.size import Size
                out = memo[oid] = Size([int(v) for v in x["size"]])
                return out
            if "set" in x:
                vals = [dec(v, depth + 1, where) for v in x["set"]]
                out = memo[oid] = frozenset(vals) if x.get("frozen") else set(vals)
                return out
            if "namedtuple" in x:
                cls = cls_of(x["namedtuple"], where, "class")
                if not (issubclass(cls, tuple) and hasattr(cls, "_fields")):
                    raise bad(f"{where}: {x['namedtuple']} is not a namedtuple class")
                vals = [dec(v, depth + 1, where) for v in x["items"]]
                if len(vals) != len(cls._fields):
                    raise bad(f"{where}: {x['namedtuple']} has {len(cls._fields)} fields, the file {len(vals)}")
                out = memo[oid] = tuple.__new__(cls, vals)
                return out
            if "object" in x:
                cls = cls_of(x["object"], where, "class")
                base = next((b for b in (dict, list) if issubclass(cls, b)), None)
                ok = describable_class(cls) or (base is not None and all(
                    c is object or c is base or (c.__flags__ & _HEAPTYPE) for c in cls.__mro__))
                if not ok or issubclass(cls, (Tensor, BaseException, type)):
                    raise bad(f"{where}: {x['object']} is not a plain Python class rawdev rebuilds")
                obj = cls.__new__(cls)
                memo[oid] = obj
                fill_object(obj, x, depth, where)
                return obj
        except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
            raise bad(f"its structure is malformed at {where} ({type(e).__name__}: {str(e)[:120]})") from None
        raise bad(f"its structure holds an unknown entry {sorted(x)[:3]}")

    return dec(structure, 0, "the object")
