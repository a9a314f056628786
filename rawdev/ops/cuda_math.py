"""The cuda path of binary_math.ptx: binary math (pow, atan2, fmod, remainder, floor division, copysign, hypot),
logical/bitwise ops on bytes, float classification and nan_to_num."""
import numpy as np

from .. import dtypes as _dt
from .cuda_launch import _bcast, _ew, _f32, _rdev, empty

__all__ = ["binary_i64", "scalar_i64", "binary_math", "logical", "logical_not", "classify", "nan_to_num",
           "BINARY_MATH", "LOGICAL", "CLASSIFY"]

BINARY_MATH = {"pow": 0, "atan2": 1, "fmod": 2, "remainder": 3, "floor_divide": 4, "copysign": 5, "hypot": 6}
LOGICAL = {"logical_and": 0, "logical_or": 1, "logical_xor": 2, "bitwise_and": 3, "bitwise_or": 4, "bitwise_xor": 5}
CLASSIFY = {"isnan": 0, "isinf": 1, "isfinite": 2, "isposinf": 3, "isneginf": 4, "signbit": 5, "nonzero": 6}


def _pair(a, b, dt):
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    return _bcast(a, shape), _bcast(b, shape), shape


_I64 = {"add": 0, "mul": 1, "floor_divide": 2, "remainder": 3, "fmod": 4, "bitwise_and": 5, "bitwise_or": 6,
        "bitwise_xor": 7, "maximum": 8, "minimum": 9}


def binary_i64(a, b, op, alpha=1):
    """int64 a <op> b (broadcast): add (a + alpha·b), mul, floor_divide, remainder, fmod."""
    a, b, shape = _pair(a, b, _dt.int64)
    z = empty(shape, _dt.int64, a.device, f"{op} output")
    _ew(_rdev(a), "binary_i64", [z.data_ptr(), a.data_ptr(), b.data_ptr(), int(alpha), _I64[op], z.numel()],
        z.numel(), op)
    return z


def scalar_i64(x, s, op):
    """int64 x + s (op "add"), x·s ("mul") or s − x ("rsub") with an integer scalar."""
    z = empty(tuple(x.shape), _dt.int64, x.device, f"{op} output")
    _ew(_rdev(x), "scalar_i64", [z.data_ptr(), x.data_ptr(), int(s), {"add": 0, "mul": 1, "rsub": 2}[op],
                                 z.numel()], z.numel(), op)
    return z


def _ints(*ts):
    return all(t.dtype is _dt.int64 for t in ts)


def binary_math(a, b, op):
    """float32 a <op> b (broadcast); int64 pairs for floor_divide, remainder and fmod."""
    if op in _I64 and _ints(a, b):
        return binary_i64(a, b, op)
    _f32(op, a, b)
    a, b, shape = _pair(a, b, _dt.float32)
    z = empty(shape, _dt.float32, a.device, f"{op} output")
    _ew(_rdev(a), "binary_math_f32", [z.data_ptr(), a.data_ptr(), b.data_ptr(), BINARY_MATH[op], z.numel()],
        z.numel(), op)
    return z


def _bytes(op, *ts):
    for t in ts:
        if t.dtype not in (_dt.bool, _dt.uint8):
            raise TypeError(f"{op} on cuda supports bool and uint8 tensors (byte kernels), got {t.dtype}")


def logical(a, b, op, out_dt):
    """a <op> b on bool/uint8 bytes (broadcast); out_dt bool (logical) or the operands' dtype (bitwise);
    bitwise ops of int64 operands run the int64 kernel."""
    if op.startswith("bitwise") and a.dtype not in (_dt.bool, _dt.uint8):   # int8..int64: the int64 kernel
        from .cuda_int import int_cast
        wide = [t if t.dtype is _dt.int64 else int_cast(t, _dt.int64) for t in (a, b)]
        z = binary_i64(wide[0], wide[1], op)
        return z if out_dt is _dt.int64 else int_cast(z, out_dt)
    _bytes(op, a, b)
    a, b, shape = _pair(a, b, a.dtype)
    z = empty(shape, out_dt, a.device, f"{op} output")
    _ew(_rdev(a), "logical_u8", [z.data_ptr(), a.data_ptr(), b.data_ptr(), LOGICAL[op], z.numel()], z.numel(), op)
    return z


def logical_not(x, bitwise):
    if bitwise and x.dtype not in (_dt.bool, _dt.uint8):
        from .cuda_int import int_cast, int_unary
        z = int_unary(x if x.dtype is _dt.int64 else int_cast(x, _dt.int64), "bitwise_not")
        return z if x.dtype is _dt.int64 else int_cast(z, x.dtype)
    _bytes("bitwise_not" if bitwise else "logical_not", x)
    out_dt = x.dtype if bitwise else _dt.bool
    z = empty(tuple(x.shape), out_dt, x.device, "not output")
    op = 1 if bitwise and x.dtype is _dt.uint8 else 0
    _ew(_rdev(x), "not_u8", [z.data_ptr(), x.data_ptr(), op, z.numel()], z.numel(), "logical_not")
    return z


def classify(x, op):
    _f32(op, x)
    z = empty(tuple(x.shape), _dt.bool, x.device, f"{op} output")
    _ew(_rdev(x), "classify_f32", [z.data_ptr(), x.data_ptr(), CLASSIFY[op], z.numel()], z.numel(), op)
    return z


def nan_to_num(x, nan, posinf, neginf):
    _f32("nan_to_num", x)
    y = empty(tuple(x.shape), _dt.float32, x.device, "nan_to_num output")
    _ew(_rdev(x), "nan_to_num_f32", [y.data_ptr(), x.data_ptr(), float(nan), float(posinf), float(neginf),
                                     y.numel()], y.numel(), "nan_to_num")
    return y
