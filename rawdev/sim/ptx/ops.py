"""Numeric helpers called by the decoded PTX (the generated block functions).

Everything here works on numpy lane arrays (one element per thread) and follows PTX semantics:
integers wrap, f32 results are rounded to float32, fma rounds once, float→int conversions
saturate, shifts clamp.
"""

from __future__ import annotations

import threading

import numpy as np

u8, s8, u16, s16, u32, s32, u64, s64 = np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64
f16, f32, f64 = np.float16, np.float32, np.float64

_M29 = np.uint64(0x1FFFFFFF)
_MID29 = np.uint64(0x10000000)
_EXP32 = np.uint32(0x7F800000)
_FLT_MIN = np.float32(1.1754943508222875e-38)
_DBL_TINY = np.float64(2.0 ** -1022)


# ----------------------------------------------------------------------------- floating point
def _pick(x, sel):
    x = np.asarray(x)
    return x[sel].astype(f64) if x.ndim else np.full(sel.shape, x, f64)


def _fma32_fix(a, b, c, r, bad):
    """Exact single-rounding fma for the lanes in ``bad`` (f64 result on an f32 tie, or tiny)."""
    sel = np.flatnonzero(bad)
    aa, bb, cc = _pick(a, sel), _pick(b, sel), _pick(c, sel)
    pr = aa * bb                        # exact (24+24 bits)
    s = pr + cc
    z = s - pr                          # TwoSum error term
    err = (pr - (s - z)) + (cc - z)
    if not err.any():   # every flagged sum was exact in float64 (few-bit operands): its one rounding is r's
        return r
    # is s exactly an f32 rounding midpoint?
    sub = np.abs(s) < 2.0 ** -126
    u = s.view(u64)
    mid_norm = (u & _M29) == _MID29
    t = s * 2.0 ** 150
    mid_sub = (t == np.floor(t)) & (np.fmod(np.abs(t), 2.0) == 1.0)
    mid = np.where(sub, mid_sub, mid_norm) & (err != 0) & np.isfinite(s)
    if mid.any():
        s = np.where(mid, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    out = r.copy()
    out[sel] = s.astype(f32)
    return out


_TLS = threading.local()


def scratch(n, k, dt):
    """A per-thread reusable work buffer (fresh large arrays cost page faults on every use); dt is a numpy
    scalar type (the key is the type object itself: np.dtype() per call costs as much as the lookup)."""
    try:
        bufs = _TLS.bufs
    except AttributeError:
        bufs = _TLS.bufs = {}
    b = bufs.get((k, dt))
    if b is None or b.shape[0] < n:
        b = bufs[(k, dt)] = np.empty(max(n, 1024), dt)
    return b[:n]


def fma32(a, b, c):
    """fma.rn.f32: a*b+c rounded once to float32.

    Computed in float64 (the product is exact there); the one case where rounding the float64
    sum to float32 can differ from a single rounding is a float64 sum that lands exactly on a
    float32 tie (or in the float32 subnormal range): those lanes are redone exactly — unless c is 0,
    where the float64 value is a*b exactly and rounding it once is the fma (a GEMM's first step,
    or a scale whose factor has few significant bits, lands on ties often).
    """
    n = max(np.size(a), np.size(b), np.size(c))
    P = np.multiply(a, b, out=scratch(n, 0, f64), dtype=f64)   # exact: 24 + 24 significant bits
    P += c
    r = P.astype(f32)
    U = P.view(u64)
    np.bitwise_and(U, _M29, out=U)      # P is not needed any more
    bad = np.equal(U, _MID29, out=scratch(n, 2, np.bool_))
    tiny = np.less(np.abs(r, out=scratch(n, 3, f32)), _FLT_MIN, out=scratch(n, 4, np.bool_))
    if tiny.any():
        bad |= tiny & (r != 0)
        bad |= tiny & (np.asarray(a) != 0) & (np.asarray(b) != 0)
    if bad.any():
        bad &= np.asarray(c) != 0
        if bad.any():
            r = _fma32_fix(a, b, c, r, bad)
    return r


def fma32_rows(A, B, C):
    """Independent fma.rn.f32 instructions of one block run as one call: (fma32(A[i], B[i], C[i]) for each i).
    A GEMM's inner loop is 16 such instructions per step (a 4x4 outer product); stacked, their lanes pay
    fma32's fixed cost once. Operands that do not stack into one float32 [k, n] array (a scalar, another
    dtype) run one by one. Each lane's value is the one fma32 gives it alone: the arithmetic is elementwise."""
    try:   # np.array of equal-shape arrays stacks them (at half np.stack's cost); unequal shapes raise
        a, b, c = np.array(A), np.array(B), np.array(C)
    except ValueError:   # shapes differ (a 0-d operand beside lane arrays)
        a = None
    if a is None or a.ndim != 2 or not (a.dtype == b.dtype == c.dtype == f32 and a.shape == b.shape == c.shape):
        return tuple(fma32(x, y, z) for x, y, z in zip(A, B, C))
    return tuple(fma32(a.reshape(-1), b.reshape(-1), c.reshape(-1)).reshape(a.shape))


def fma64(a, b, c):
    """fma.rn.f64 (computed in extended precision; exact unless the product needs > 64 bits)."""
    ld = np.longdouble
    return (np.asarray(a, ld) * np.asarray(b, ld) + np.asarray(c, ld)).astype(f64)


def fmax(a, b):
    """max.f32/.f64 (without .NaN): a where a > b or b is NaN, else b (the native engine computes the same). numpy's
    fmax picks the sign of a zero result by its loop (the first operand's below 8 elements, the second's from 8 on),
    so a lane's max(+0, -0) would depend on how many lanes ran together."""
    return np.where((a > b) | (b != b), a, b)


def fmin(a, b):
    """min.f32/.f64 (without .NaN): a where a < b or b is NaN, else b (as fmax)."""
    return np.where((a < b) | (b != b), a, b)


def ftz32(x):
    x = np.asarray(x)
    return np.where(np.abs(x) < _FLT_MIN, x * f32(0), x).astype(f32)


def round_f32(x64, mode):
    """Round float64 values to float32 with PTX rounding mode rn/rz/rm/rp."""
    r = x64.astype(f32)
    if mode == "rn":
        return r
    back = r.astype(f64)
    if mode == "rz":
        fix = np.abs(back) > np.abs(x64)
        return np.where(fix, np.nextafter(r, f32(0)), r)
    if mode == "rm":
        return np.where(back > x64, np.nextafter(r, f32(-np.inf)), r)
    if mode == "rp":
        return np.where(back < x64, np.nextafter(r, f32(np.inf)), r)
    raise ValueError(mode)


def round_f64(x, mode):
    """Directed rounding of an exact-ish long double value to float64."""
    xl = np.asarray(x, np.longdouble)
    r = xl.astype(f64)
    if mode == "rn":
        return r
    back = r.astype(np.longdouble)
    if mode == "rz":
        return np.where(np.abs(back) > np.abs(xl), np.nextafter(r, 0.0), r)
    if mode == "rm":
        return np.where(back > xl, np.nextafter(r, -np.inf), r)
    if mode == "rp":
        return np.where(back < xl, np.nextafter(r, np.inf), r)
    raise ValueError(mode)


def sat01(x):
    x = np.asarray(x)
    return np.where(np.isnan(x), x.dtype.type(0), np.clip(x, 0, 1)).astype(x.dtype)


_INT_RANGE = {np.dtype(t): (np.iinfo(t).min, np.iinfo(t).max) for t in (u8, s8, u16, s16, u32, s32, u64, s64)}


def f2i(x, mode, dt):
    """cvt.{rni,rzi,rmi,rpi}.<int>.<float>: round to integer, saturate, NaN → 0."""
    x = np.asarray(x, f64) if np.asarray(x).dtype != f64 else np.asarray(x)
    fn = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, "rn": np.rint, "rz": np.trunc,
          "rm": np.floor, "rp": np.ceil}[mode]
    r = fn(x)
    lo, hi = _INT_RANGE[np.dtype(dt)]
    r = np.where(np.isnan(r), 0.0, r)
    out = np.empty(r.shape, dt)
    big = r >= float(hi)
    small = r <= float(lo)
    mid = ~(big | small)
    out[mid] = r[mid].astype(dt)
    out[big] = hi
    out[small] = lo
    return out


def f2f_int(x, mode):
    """cvt.rni/rzi/rmi/rpi.f32.f32 (round to integral value in float format)."""
    fn = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode]
    return fn(x)


def i2f(x, mode, dt):
    """int → float with rounding mode."""
    if mode in ("rn", None):
        return np.asarray(x).astype(dt)
    if dt == f32:
        return round_f32(np.asarray(x).astype(np.longdouble).astype(f64) if np.asarray(x).dtype.itemsize > 4
                         else np.asarray(x).astype(f64), mode)
    return round_f64(np.asarray(x).astype(np.longdouble), mode)


def f32_to_bf16(x):
    u = np.asarray(x, f32).view(u32).astype(u64)
    r = ((u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)).astype(u16)
    nan = np.isnan(np.asarray(x, f32))
    return np.where(nan, u16(0x7FC0), r)


def f32_to_tf32_rna(x):
    """cvt.rna.tf32.f32: float32 rounded to TF32 (10 mantissa bits) to nearest, ties away from zero; the .b32
    result keeps the float32 layout with the low 13 bits zero. Infinities and NaNs pass (NaN stays NaN)."""
    u = np.asarray(x, f32).view(u32).astype(u64)
    finite = (u & u64(0x7F800000)) != u64(0x7F800000)
    r = np.where(finite, (u + u64(0x1000)) & u64(0xFFFFE000), u & u64(0xFFFFE000))
    nan_lost = ~finite & ((u & u64(0x7FFFFF)) != 0) & ((r & u64(0x7FFFFF)) == 0)
    return np.where(nan_lost, r | u64(0x400000), r).astype(u32)   # a NaN whose payload was all low bits


def tf32_operand(b):
    """The value a tensor core reads from a .tf32 register: the float32 with its low 13 bits ignored."""
    return (np.asarray(b).astype(u32) & u32(0xFFFFE000)).view(f32)


def bf16_to_f32(h):
    return (np.asarray(h).astype(u32) << u32(16)).view(f32)


def testp(x, mode):
    x = np.asarray(x)
    if mode == "finite":
        return np.isfinite(x)
    if mode == "infinite":
        return np.isinf(x)
    if mode == "number":
        return ~np.isnan(x)
    if mode == "notanumber":
        return np.isnan(x)
    tiny = np.finfo(x.dtype).tiny
    ax = np.abs(x)
    if mode == "normal":
        return np.isfinite(x) & (ax >= tiny)
    if mode == "subnormal":
        return (ax < tiny) & (ax > 0)
    raise ValueError(mode)


# ----------------------------------------------------------------------------- integers
def sdiv(a, b):
    """Signed division truncating toward zero (C semantics); x/0 → -1 like the hardware."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        r = a - q * b
        fix = (r != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
        q = np.where(fix, q + q.dtype.type(1) if hasattr(q, "dtype") else q + 1, q)
        return np.where(b == 0, np.asarray(-1).astype(np.result_type(a, b)), q)


def udiv(a, b):
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
    dt = np.result_type(a, b)
    return np.where(b == 0, np.asarray(np.iinfo(dt).max, dtype=dt), q).astype(dt)


def srem(a, b):
    with np.errstate(all="ignore"):
        r = np.fmod(a, b)
    return np.where(b == 0, a, r)


def urem(a, b):
    with np.errstate(all="ignore"):
        r = np.remainder(a, b)
    return np.where(b == 0, a, r)


def shl(a, b, width):
    """shl with PTX clamping: shift amounts ≥ width give 0. ``b`` is u32."""
    dt = np.asarray(a).dtype
    bb = np.asarray(b).astype(dt)
    big = np.asarray(b) >= width
    return np.where(big, dt.type(0), np.left_shift(a, np.minimum(bb, dt.type(width - 1))))


def shr(a, b, width):
    """shr: logical for unsigned types, arithmetic for signed; amounts clamp at width."""
    dt = np.asarray(a).dtype
    bb = np.minimum(np.asarray(b), width - 1).astype(dt)
    r = np.right_shift(a, bb)
    if dt.kind == "i":
        return r  # arithmetic shift by width-1 is the clamped result
    return np.where(np.asarray(b) >= width, dt.type(0), r)


def mulhi(a, b, dt):
    dt = np.dtype(dt)
    if dt.itemsize <= 4:
        wide = s64 if dt.kind == "i" else u64
        return ((np.asarray(a).astype(wide) * np.asarray(b).astype(wide)) >> (8 * dt.itemsize)).astype(dt)
    # 64-bit: schoolbook on 32-bit halves (unsigned), then signed correction
    ua = np.asarray(a).view(u64) if np.asarray(a).dtype.itemsize == 8 else np.asarray(a).astype(u64)
    ub = np.asarray(b).view(u64) if np.asarray(b).dtype.itemsize == 8 else np.asarray(b).astype(u64)
    m = u64(0xFFFFFFFF)
    s32_ = u64(32)
    al, ah = ua & m, ua >> s32_
    bl, bh = ub & m, ub >> s32_
    ll = al * bl
    lh = al * bh
    hl = ah * bl
    hh = ah * bh
    mid = (ll >> s32_) + (lh & m) + (hl & m)
    hi = hh + (lh >> s32_) + (hl >> s32_) + (mid >> s32_)
    if dt.kind == "i":
        hi = hi - np.where(np.asarray(a).view(s64) < 0, ub, u64(0)) - np.where(np.asarray(b).view(s64) < 0, ua, u64(0))
        return hi.view(s64)
    return hi


def popc(a):
    return np.bitwise_count(np.asarray(a)).astype(u32)


def clz(a, width):
    a = np.asarray(a)
    if width == 32:
        x = a.view(u32) if a.dtype.itemsize == 4 else a.astype(u32)
        e = np.frexp(x.astype(f64))[1]
        return np.where(x == 0, 32, 32 - e).astype(u32)
    x = a.view(u64)
    hi = (x >> u64(32)).astype(u32)
    lo = (x & u64(0xFFFFFFFF)).astype(u32)
    return np.where(hi != 0, clz(hi, 32), 32 + clz(lo, 32)).astype(u32)


def bfind(a, width, signed, shiftamt):
    a = np.asarray(a)
    x = a.view(s64 if width == 64 else s32) if signed else a.view(u64 if width == 64 else u32)
    if signed:
        x = np.where(x < 0, ~x, x)
    ux = x.astype(u64) if width == 32 else x.view(u64) if x.dtype == s64 else x
    c = clz(ux.astype(u32), 32) if width == 32 else clz(ux, 64)
    pos = (width - 1 - c.astype(s64))
    none = ux == 0
    if shiftamt:
        pos = (width - 1) - pos
    return np.where(none, 0xFFFFFFFF, pos).astype(u32)


_BREV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)


def brev(a, width):
    a = np.ascontiguousarray(a)
    b = a.view(u8).reshape(-1, width // 8)
    return _BREV8[b[:, ::-1]].reshape(-1).view(a.dtype).copy()


def bfe(a, pos, length, width, signed):
    a = np.asarray(a)
    pos = np.asarray(pos).astype(s64) & 0xFF
    ln = np.asarray(length).astype(s64) & 0xFF
    ua = a.astype(u64) if a.dtype.itemsize < 8 else a.view(u64)
    if width == 32:
        ua = ua & u64(0xFFFFFFFF)
    p = np.minimum(pos, 63).astype(u64)
    shifted = np.where(pos >= width, u64(0), ua >> p)
    l2 = np.minimum(ln, 64)
    mask = np.where(l2 >= 64, u64(0xFFFFFFFFFFFFFFFF), (u64(1) << np.minimum(l2, 63).astype(u64)) - u64(1))
    val = shifted & mask
    if signed:
        msb = np.minimum(pos + ln - 1, width - 1)
        sbit = np.where(ln == 0, 0, (ua >> np.maximum(msb, 0).astype(u64)) & u64(1))
        ext = (sbit == 1) & (ln < width)
        fill = ~mask
        val = np.where(ext, val | fill, val)
        val = np.where(ln == 0, u64(0), val)
        return val.astype(s64).astype(s32 if width == 32 else s64) if width == 32 else val.view(s64)
    val = np.where(ln == 0, u64(0), val)
    return val.astype(u32) if width == 32 else val


def bfi(a, b, pos, length, width):
    a = np.asarray(a)
    ua = (a.astype(u64) if a.dtype.itemsize < 8 else a.view(u64))
    bb = np.asarray(b)
    ub = (bb.astype(u64) if bb.dtype.itemsize < 8 else bb.view(u64))
    pos = np.asarray(pos).astype(s64) & 0xFF
    ln = np.asarray(length).astype(s64) & 0xFF
    ln = np.minimum(ln, np.maximum(width - pos, 0))
    mask = np.where(ln >= 64, u64(0xFFFFFFFFFFFFFFFF), (u64(1) << np.minimum(ln, 63).astype(u64)) - u64(1))
    p = np.minimum(pos, 63).astype(u64)
    res = np.where(pos >= width, ub, (ub & ~(mask << p)) | ((ua & mask) << p))
    return res.astype(u32) if width == 32 else res


def prmt(a, b, c, mode=None):
    a = np.asarray(a).astype(u64)
    b = np.asarray(b).astype(u64)
    c = np.asarray(c).astype(u64)
    n = max(a.size, b.size, c.size)
    x = np.broadcast_to(a | (b << u64(32)), (n,))
    c = np.broadcast_to(c, (n,))
    bytes8 = np.ascontiguousarray(x).view(u8).reshape(n, 8)
    rows = np.arange(n)
    out = np.zeros(n, u32)
    if mode is None:
        for i in range(4):
            sel = ((c >> u64(4 * i)) & u64(0xF)).astype(np.intp)
            v = bytes8[rows, sel & 7].astype(u32)
            sign = (sel & 8) != 0
            v = np.where(sign, np.where(v & 0x80, u32(0xFF), u32(0)), v)
            out |= v << u32(8 * i)
        return out
    raise NotImplementedError(f"prmt mode .{mode}")


# ----------------------------------------------------------------------------- packing
def pack(parts, dt):
    """mov.bNN d, {a, b, ...}: parts are little-endian pieces (lowest first)."""
    dt = np.dtype(dt)
    wide = u64 if dt.itemsize == 8 else u32 if dt.itemsize == 4 else u16
    out = None
    shift = 0
    for p in parts:
        p = np.asarray(p)
        bits = p.dtype.itemsize * 8
        up = (p.view({1: u8, 2: u16, 4: u32, 8: u64}[p.dtype.itemsize]) if p.dtype.kind != "b" else p).astype(wide)
        term = up << wide(shift) if shift else up
        out = term if out is None else out | term
        shift += bits
    return out.view(dt) if out.dtype != dt else out


def unpack(x, n, piece_dt):
    x = np.asarray(x)
    piece = np.dtype(piece_dt)
    bits = piece.itemsize * 8
    ux = x.view({2: u16, 4: u32, 8: u64}[x.dtype.itemsize])
    mask = ux.dtype.type((1 << bits) - 1)
    outs = []
    for i in range(n):
        outs.append(((ux >> ux.dtype.type(bits * i)) & mask).astype(
            {1: u8, 2: u16, 4: u32, 8: u64}[piece.itemsize]).view(piece))
    return outs
