"""Dtype conversion on the device: the cast kernels between float32 and bool/uint8/int32/int64/float16/
bfloat16, two-step paths through float32 or int64 where no direct kernel is shipped, integer-to-integer casts
(rawdev/ops/cuda_int.py)."""
from .. import dtypes as _dt
from .cuda_launch import _ew, _rdev, clone, dense, empty, has_kernel

_CAST_NAMES = {_dt.bool: "bool", _dt.uint8: "u8", _dt.int32: "i32", _dt.int64: "i64", _dt.float16: "f16",
               _dt.bfloat16: "bf16", _dt.float32: "f32"}


def _cast_kernel(src, dst):
    """The shipped kernel converting src to dst (one side is always float32), or None."""
    if src is dst or _dt.float32 not in (src, dst) or src not in _CAST_NAMES or dst not in _CAST_NAMES:
        return None
    name = f"cast_{_CAST_NAMES[src]}_{_CAST_NAMES[dst]}"
    return name if has_kernel(name) else None


def _cast_path(src, dst):
    """The dtypes a conversion goes through on the device: [src, dst] for one kernel, [src, mid, dst] for two
    (16-bit floats to each other and to integers go through float32; int8/int16 to floats through int64,
    exact), or None where none applies."""
    from .cuda_int import INT_CODES
    if src is dst or _cast_kernel(src, dst) or (src in INT_CODES and dst in INT_CODES):
        return [src, dst]
    for mid in (_dt.float32, _dt.int64):
        if mid not in (src, dst) and _cast_path_1(src, mid) and _cast_path_1(mid, dst):
            return [src, mid, dst]
    return None


def _cast_path_1(src, dst):
    from .cuda_int import INT_CODES
    return src is dst or _cast_kernel(src, dst) is not None or (src in INT_CODES and dst in INT_CODES)


def can_cast(src, dst):
    return _cast_path(src, dst) is not None


def cast(x, dt):
    """x converted to dt on the device: one kernel (two through float32 or int64 where no direct one is shipped;
    can_cast(x.dtype, dt) must hold)."""
    x = dense(x)
    path = _cast_path(x.dtype, dt)
    if path is None:
        raise NotImplementedError(f"no cast kernel from {x.dtype} to {dt} is shipped")
    if len(path) == 3:
        return cast(cast(x, path[1]), dt)
    if x.dtype is dt:
        return clone(x, "cast output")
    name = _cast_kernel(x.dtype, dt)
    if name is None:
        from .cuda_int import int_cast
        return int_cast(x, dt)
    y = empty(x.shape, dt, x.device, "cast output")
    _ew(_rdev(x), name, [y.data_ptr(), x.data_ptr(), x.numel()], x.numel(), f"to({dt})")
    return y
