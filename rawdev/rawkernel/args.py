"""Checking a user kernel's launch arguments against its parameters, and turning them into values to pack.

Each parameter is a `Param`: its name, its PTX type (the width the kernel reads) and, when the CUDA source
was at hand, whether it is a pointer and its C type. Arguments may be rawdev tensors (their device
address), numpy scalars (their own type must match the parameter's), Python scalars (converted to the
parameter's type: a Python float becomes a `float` for a `.f32` parameter and a `double` for `.f64`, never
the other one) and bytes for a struct passed by value. Whatever does not fit is a TypeError that names
the parameter.
"""
import numbers
import struct
from dataclasses import dataclass

import numpy as np

from . import csig

INT_WIDTHS = {"u8": 8, "s8": 8, "b8": 8, "u16": 16, "s16": 16, "b16": 16, "u32": 32, "s32": 32, "b32": 32,
              "u64": 64, "s64": 64, "b64": 64}
FLOAT_WIDTHS = {"f16": 16, "f32": 32, "f64": 64}


@dataclass(frozen=True)
class Param:
    name: str             # the C name when known, else the PTX one (kernel_param_0)
    ptype: str            # u32, f32, b8[16], ...
    pointer: bool | None  # None: the PTX cannot say (a .u64 without the source)
    ctype: str | None     # the C type (a pointer's element type), when the source says

    def describe(self):
        c = f"{self.ctype}{'*' if self.pointer else ''} " if self.ctype else ("pointer " if self.pointer else "")
        return f"{c}{self.name} (.{self.ptype})"

    def packed_type(self):
        """The type the runtime's Kernel packs: f16 travels as its 16 bits, signed integers as their unsigned
        two's complement (a value is converted before it gets there)."""
        if self.ptype == "f16":
            return "u16"
        if self.ptype in INT_WIDTHS:
            return "u" + self.ptype[1:]
        return self.ptype


def params_for(entry_params, source=None, cname=None):
    """[Param] for a PTX entry's [(ptx name, ptx type)], with what `source`'s signature of `cname` adds."""
    c = csig.kernel_params(source, cname) if source and cname else None
    if c is not None and len(c) != len(entry_params):
        c = None   # the source and the PTX disagree (a macro, an overload): trust the PTX alone
    out = []
    for i, (pname, ptype) in enumerate(entry_params):
        if c is not None:
            cn, ptr, ctype = c[i]
            out.append(Param(cn or pname, ptype, ptr, ctype))
        else:
            out.append(Param(pname, ptype, None if ptype in ("u64", "b64", "s64") else False, None))
    return out


def signature(kernel_name, params):
    return f"{kernel_name}(" + ", ".join(p.describe() for p in params) + ")"


def _is_tensor(a):
    from ..tensor import Tensor
    return isinstance(a, Tensor)


def convert(kernel_name, params, args):
    """(values for the runtime Kernel, the device index the tensors are on or None) for `args`.

    Args:
        kernel_name: for messages.
        params: the kernel's [Param].
        args: what the user passed.

    Returns:
        (list of ints/floats/bytes in the packed types of `params`, cuda device index of the tensor arguments or
        None when there are none).

    Raises:
        TypeError: a wrong count, a tensor for a value, a float for a pointer, a cpu tensor, a numpy scalar of
            another width, a tensor whose dtype is not the pointer's element type.
        ValueError: an integer that does not fit its parameter.

    Example:
        >>> convert("k", [Param("n", "u32", False, "int")], (5,))
        ([5], None)
    """
    args = tuple(args)
    if len(args) != len(params):
        raise TypeError(f"{kernel_name} takes {len(params)} argument(s), got {len(args)}\n"
                        f"  kernel signature: {signature(kernel_name, params)}")
    out, device = [], None
    for i, (a, p) in enumerate(zip(args, params)):
        where = f"argument {i} ({p.describe()}) of {kernel_name}"
        if _is_tensor(a):
            if a.device.type != "cuda":
                raise TypeError(f"{where} is a tensor on {a.device}: a kernel reads device memory only; move it "
                                "with .cuda() or .to('cuda') first")
            if p.pointer is False or p.ptype not in ("u64", "b64", "s64"):
                raise TypeError(f"{where} is a value, not a pointer: got a Tensor ({a.dtype}); pass a number")
            want = csig.dtype_of(p.ctype)
            if want is not None and a.dtype.name != want:
                raise TypeError(f"{where} points to {p.ctype} ({want}): got a Tensor of dtype {a.dtype.name}")
            index = a.device.index or 0
            if device is not None and index != device:
                raise ValueError(f"{where} is on cuda:{index} but earlier tensor arguments are on cuda:{device}: a "
                                 "kernel runs on one device")
            device = index
            out.append(a.data_ptr())
            continue
        if p.ptype.startswith("b8["):
            # a struct by value (float2, __half, a user's struct): its bytes, or a numpy scalar of its size
            # (numpy.float16 for __half, a structured scalar for a struct)
            if isinstance(a, np.generic) and a.dtype.itemsize == int(p.ptype[3:-1]):
                a = a.tobytes()
            if not isinstance(a, (bytes, bytearray, memoryview)):
                raise TypeError(f"{where} is a struct passed by value: pass its {p.ptype[3:-1]} bytes (or a numpy "
                                f"scalar of that size), got {type(a).__name__}")
            out.append(bytes(a))
            continue
        if isinstance(a, np.generic):
            out.append(_numpy_scalar(where, p, a))
            continue
        if isinstance(a, bool) or isinstance(a, numbers.Integral):
            out.append(_python_int(where, p, int(a)))
            continue
        if isinstance(a, numbers.Real):
            if p.ptype not in FLOAT_WIDTHS:
                kind = "a pointer" if p.pointer else "an integer"
                raise TypeError(f"{where} is {kind}: got float {a!r}")
            out.append(_float(p, float(a)))
            continue
        raise TypeError(f"{where}: unsupported argument type {type(a).__name__} (pass a rawdev tensor, a numpy "
                        "scalar, a Python int/float, or bytes for a struct)")
    return out, device


def _float(p, v):
    if p.ptype == "f16":
        return struct.unpack("<H", struct.pack("<e", v))[0]
    return v


def _python_int(where, p, v):
    if p.ptype in FLOAT_WIDTHS:
        return _float(p, float(v))
    if p.pointer:
        if v < 0 or v >= 1 << 64:
            raise ValueError(f"{where}: {v} is not a device address")
        return v   # a raw device address (tensor.data_ptr())
    bits = INT_WIDTHS[p.ptype]
    if not -(1 << (bits - 1)) <= v < (1 << bits):
        raise ValueError(f"{where}: {v} does not fit in {bits} bits")
    return v % (1 << bits)


def _numpy_scalar(where, p, a):
    width = 8 * a.dtype.itemsize
    if p.pointer:
        raise TypeError(f"{where} is a pointer: got a numpy {a.dtype} scalar; pass a tensor")
    if p.ptype in FLOAT_WIDTHS:
        if a.dtype.kind != "f" or width != FLOAT_WIDTHS[p.ptype]:
            raise TypeError(f"{where} needs a {FLOAT_WIDTHS[p.ptype]}-bit float: got numpy.{a.dtype} (pass "
                            f"numpy.float{FLOAT_WIDTHS[p.ptype]} or a Python float)")
        return _float(p, float(a))
    if a.dtype.kind not in "iub" or width != INT_WIDTHS[p.ptype]:
        raise TypeError(f"{where} needs a {INT_WIDTHS[p.ptype]}-bit integer: got numpy.{a.dtype} (pass "
                        f"numpy.int{INT_WIDTHS[p.ptype]} or a Python int)")
    return _python_int(where, p, int(a))
