"""The PTX interpreter against numpy references (fixtures: tests/data/ptx/interp_fixtures.ptx, built
from tests/data/ptx/src/interp_fixtures.cu with NVRTC 12.0; plus the shipped ptx/testkernels.ptx)."""

import struct
from pathlib import Path

import numpy as np
import pytest
from rawdev.sim.memory import DeviceMemory, SimIllegalAddress
from rawdev.sim.ptx import BarrierError, KernelFault, PtxError, PtxModule

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "data" / "ptx" / "interp_fixtures.ptx"
TESTKERNELS = HERE.parent / "ptx" / "testkernels.ptx"
FMT = {"u64": "<Q", "s64": "<q", "u32": "<I", "s32": "<i", "f32": "<f", "f64": "<d", "b64": "<Q", "b32": "<I"}


class Dev:
    def __init__(self, path):
        self.m = PtxModule(Path(path).read_text())
        self.mem = DeviceMemory(1 << 30)

    def up(self, a):
        a = np.ascontiguousarray(a)
        addr = self.mem.alloc(max(a.nbytes, 1))
        self.mem.write(addr, a.tobytes())
        return addr

    def poisoned(self, shape, dt):
        dt = np.dtype(dt)
        fill = np.nan if dt.kind == "f" else np.iinfo(dt).max if dt.kind in "iu" else 0
        return self.up(np.full(shape, fill, dt))

    def down(self, addr, shape, dt):
        n = int(np.prod(shape))
        return np.frombuffer(self.mem.read(addr, n * np.dtype(dt).itemsize), dt).reshape(shape).copy()

    def launch(self, name, grid, block, *args, shared=0):
        e = self.m.entries[name]
        assert len(args) == len(e.params)
        buf = bytearray(e.param_size)
        for p, v in zip(e.params, args):
            struct.pack_into(FMT[p.type], buf, p.offset, v)
        return self.m.launch(name, grid, block, params=bytes(buf), dynamic_shared=shared, memory=self.mem)


@pytest.fixture
def fx():
    return Dev(FIXTURES)


@pytest.fixture
def tk():
    if not TESTKERNELS.exists():
        pytest.skip("ptx/testkernels.ptx not built yet")
    return Dev(TESTKERNELS)


def rel(out, ref):
    return np.linalg.norm(np.asarray(out, np.float64) - ref) / np.linalg.norm(ref)


rng = np.random.default_rng(12345)


# ------------------------------------------------------------------------------ module / parsing
def test_module_metadata():
    m = PtxModule(FIXTURES.read_text())
    assert m.version == (8, 0) and m.target == "sm_75"
    e = m.entries["k_fma"]
    assert [p.type for p in e.params] == ["u64", "u64", "u64", "u64", "u32"]
    assert [p.offset for p in e.params] == [0, 8, 16, 24, 32]
    assert e.param_size == 36


def test_unknown_opcode_names_line():
    text = FIXTURES.read_text().replace("tanh.approx.f32", "frobnicate.approx.f32", 1)
    with pytest.raises(NotImplementedError) as ei:
        PtxModule(text)
    msg = str(ei.value)
    assert "frobnicate.approx.f32" in msg and "line" in msg
    line = next(i + 1 for i, s in enumerate(text.splitlines()) if "frobnicate" in s)
    assert f"line {line}" in msg


def test_syntax_error():
    with pytest.raises(PtxError):
        PtxModule(".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry k(\n{ ret; }")


# ------------------------------------------------------------------------------ arithmetic
def test_fma_single_rounding(fx):
    n = 1001
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    # hand-made cases where rounding a*b to f32 first, or going through f64, gives a different answer
    x = np.float32(1 + 2 ** -23)
    a[:4] = [x, 1 + 2 ** -12, np.float32(1 + 2 ** -23), 3.0]
    b[:4] = [x, 1 + 2 ** -12, np.float32(1 - 2 ** -24), 1e-30]
    c[:4] = [-1.0, -1.0, 2 ** -60, -3e-30]
    # the double-rounding case: a*b+c lands exactly on an f32 tie in f64 but not in exact arithmetic
    a[4], b[4], c[4] = np.float32(1 + 2 ** -12), np.float32(1 + 2 ** -12), np.float32(2 ** -60)
    # c = 0 (a GEMM's first step): products exactly on an f32 tie (a has 2 significant bits), and products in the
    # f32 subnormal range, whose one rounding the float64 product gives directly
    a[5:9], c[5:11] = 0.1875, 0.0
    a[9:11], b[9:11] = [1e-30, -3e-31], [1.3e-15, 7e-16]
    da, db, dc = fx.up(a), fx.up(b), fx.up(c)
    dout = fx.poisoned(n, np.float32)
    fx.launch("k_fma", (-(-n // 128), 1, 1), (128, 1, 1), dout, da, db, dc, n)
    out = fx.down(dout, n, np.float32)
    from fractions import Fraction
    ref = np.array([np.float32(float(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r))))
                    for p, q, r in zip(a, b, c)], np.float32)
    # Fraction → float is correctly rounded to f64; then f32 only matters at ties: compare exactly to an
    # exact rational rounding for the crafted lanes
    def exact32(p, q, r):
        v = Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r))
        f = np.float32(float(v))
        cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
        return min(cands, key=lambda z: (abs(Fraction(float(z)) - v), int(np.array(z).view(np.uint32)) & 1))
    for k in range(11):
        assert out[k].view(np.uint32) == exact32(a[k], b[k], c[k]).view(np.uint32), k
    # separate mul+add (two roundings) differs from fma on the crafted lanes
    two = (a[:2] * b[:2]) + c[:2]
    assert np.any(two != out[:2])
    assert np.array_equal(out[11:], ref[11:])


def test_integer_ops_wrap(fx):
    n = 517
    a = rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)
    a[:6] = [2 ** 31 - 1, -2 ** 31, -7, 7, 0, -1]
    b[:6] = [1, -1, 2, -2, 5, 0]
    dout = fx.poisoned(20 * n, np.int32)
    fx.launch("k_int", (-(-n // 96), 1, 1), (96, 1, 1), dout, fx.up(a), fx.up(b), n)
    out = fx.down(dout, (n, 20), np.int32)
    x, y = a.astype(np.int64), b.astype(np.int64)
    ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
    s = y & 31
    def w(v):
        return np.array([((int(t) + 2 ** 31) % 2 ** 32) - 2 ** 31 for t in v], np.int64)
    ref = np.zeros((n, 20), np.int64)
    ref[:, 0] = w(x + y)
    ref[:, 1] = w(x * y)
    safe = np.where(y == 0, 1, y)
    q = np.array([int(abs(int(p)) // abs(int(r))) * (1 if (p >= 0) == (r > 0) else -1) for p, r in zip(x, safe)])
    ref[:, 2] = np.where(y == 0, 0, w(q))
    ref[:, 3] = np.where(y == 0, 0, x - q * safe)
    ref[:, 4] = x >> s
    ref[:, 5] = w(ux >> s)
    ref[:, 6] = w([(int(p) << int(k)) for p, k in zip(x, s)])
    ref[:, 7] = (x * y) >> 32
    ref[:, 8] = w((ux * uy) >> 32)
    ref[:, 9] = np.minimum(x, y)
    ref[:, 10] = np.maximum(x, y)
    ref[:, 11] = w(np.abs(x))
    ref[:, 12] = [bin(int(v)).count("1") for v in ux]
    ref[:, 13] = [32 - int(v).bit_length() for v in ux]
    ref[:, 14] = w([int(f"{int(v):032b}"[::-1], 2) for v in ux])
    sel = 0x7531 ^ (np.arange(n) & 0x3333)
    bytes8 = [list(int(p).to_bytes(4, "little") + int(r).to_bytes(4, "little")) for p, r in zip(ux, uy)]
    ref[:, 15] = w([sum(bb[(int(sl) >> (4 * k)) & 7] << (8 * k) for k in range(4)) for bb, sl in zip(bytes8, sel)])
    usafe = np.where(uy == 0, 1, uy)
    ref[:, 16] = np.where(uy == 0, 0, w(ux // usafe))
    ref[:, 17] = np.where(uy == 0, 0, w(ux % usafe))
    p64 = [int(p) * int(r) for p, r in zip(x, y)]
    hi1 = [(int(p) << 20) * (int(r) * 977) >> 64 for p, r in zip(x, y)]
    ref[:, 18] = w([((pp >> 32) ^ h) for pp, h in zip(p64, hi1)])
    ref[:, 19] = w([((int(p) << 31) * (int(r) * 12345)) >> 64 for p, r in zip(ux, uy)])
    for k in range(20):
        assert np.array_equal(out[:, k], ref[:, k]), f"column {k}"


def test_cvt_rounding_modes(fx):
    n = 333
    v = (rng.standard_normal(n) * 100).astype(np.float32)
    v[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, 3e9, -3e9, np.nan]
    d = rng.standard_normal(n) * 10.0
    d[:2] = [1 + 2 ** -30, -(1 + 2 ** -30)]
    k = rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)
    k[:3] = [16777217, -16777217, 2 ** 31 - 1]
    di, dfo, dh = fx.poisoned(8 * n, np.int32), fx.poisoned(16 * n, np.float32), fx.poisoned(n, np.uint16)
    fx.launch("k_cvt", (-(-n // 64), 1, 1), (64, 1, 1), di, dfo, dh, fx.up(v), fx.up(d), fx.up(k), n)
    io = fx.down(di, (n, 8), np.int32)
    fo = fx.down(dfo, (n, 16), np.float32)
    h = fx.down(dh, n, np.uint16)
    v64 = v.astype(np.float64)

    def sat_int(x, lo, hi):
        x = np.where(np.isnan(x), 0, x)
        return np.clip(x, lo, hi).astype(np.int64)
    assert np.array_equal(io[:, 0], sat_int(np.rint(v64), -2 ** 31, 2 ** 31 - 1))
    assert np.array_equal(io[:, 1], sat_int(np.trunc(v64), -2 ** 31, 2 ** 31 - 1))
    assert np.array_equal(io[:, 2], sat_int(np.floor(v64), -2 ** 31, 2 ** 31 - 1))
    assert np.array_equal(io[:, 3], sat_int(np.ceil(v64), -2 ** 31, 2 ** 31 - 1))
    assert np.array_equal(io[:, 4].view(np.uint32), sat_int(np.rint(v64), 0, 2 ** 32 - 1).astype(np.uint32))
    assert np.array_equal(io[:, 5], sat_int(np.trunc(v64), -2 ** 63, 2 ** 63 - 1).astype(np.int32))
    assert np.array_equal(io[:, 6], k.astype(np.int8).astype(np.int32))
    assert np.array_equal(io[:, 7], k.astype(np.uint16).astype(np.int32))
    from fractions import Fraction

    def directed(vals, mode):
        out = []
        for x in vals:
            f = np.float32(x)   # RNE
            fx_, ex = Fraction(float(f)), Fraction(int(x)) if isinstance(x, (int, np.integer)) else Fraction(float(x))
            if mode == "rz" and abs(fx_) > abs(ex):
                f = np.nextafter(f, np.float32(0))
            if mode == "rd" and fx_ > ex:
                f = np.nextafter(f, np.float32(-np.inf))
            if mode == "ru" and fx_ < ex:
                f = np.nextafter(f, np.float32(np.inf))
            out.append(f)
        return np.array(out, np.float32)
    assert np.array_equal(fo[:, 0], k.astype(np.float32))
    assert np.array_equal(fo[:, 1], directed(k.tolist(), "rz"))
    assert np.array_equal(fo[:, 2], directed(k.tolist(), "rd"))
    assert np.array_equal(fo[:, 3], directed(k.tolist(), "ru"))
    assert np.array_equal(fo[:, 4], d.astype(np.float32))
    assert np.array_equal(fo[:, 5], directed(d, "rz"))
    assert np.array_equal(fo[:, 6], directed(d, "rd"))
    assert np.array_equal(fo[:, 7], directed(d, "ru"))
    assert np.array_equal(fo[:, 8], np.where(np.isnan(v), 0, np.clip(v, 0, 1)).astype(np.float32))
    np.testing.assert_array_equal(fo[:, 9], np.rint(v))
    np.testing.assert_array_equal(fo[:, 10], np.trunc(v))
    np.testing.assert_array_equal(fo[:, 11], np.floor(v))
    np.testing.assert_array_equal(fo[:, 12], np.ceil(v))
    assert np.array_equal(fo[:, 13], k.view(np.uint32).astype(np.float32))
    with np.errstate(over="ignore"):
        v16 = v.astype(np.float16)
    assert np.array_equal(h, v16.view(np.uint16))
    np.testing.assert_array_equal(fo[:, 14], v16.astype(np.float32))
    assert np.array_equal(fo[:, 15], (d * 3.0).astype(np.float32))


def test_math_ops(fx):
    n = 211
    a = rng.uniform(-3, 3, n).astype(np.float32)
    b = rng.uniform(0.2, 4, n).astype(np.float32) * rng.choice([-1, 1], n).astype(np.float32)
    a[0] = np.nan
    dout = fx.poisoned(12 * n, np.float32)
    fx.launch("k_math", (-(-n // 64), 1, 1), (64, 1, 1), dout, fx.up(a), fx.up(b), n)
    o = fx.down(dout, (n, 12), np.float32)[1:]
    x, y = a[1:].astype(np.float64), b[1:].astype(np.float64)
    tol = dict(rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(o[:, 0], np.exp(x), rtol=2e-6)
    np.testing.assert_allclose(o[:, 1], np.log(np.abs(x) + 1), **tol)
    assert np.array_equal(o[:, 2], (a[1:] / b[1:]))
    assert np.array_equal(o[:, 3], np.sqrt(np.abs(a[1:])))
    np.testing.assert_allclose(o[:, 4], 1 / np.sqrt(np.abs(y) + 0.5), **tol)
    np.testing.assert_allclose(o[:, 5], np.sin(x) + np.cos(y), **tol)
    np.testing.assert_allclose(o[:, 6], np.minimum(x, y) - np.maximum(x, y), **tol)
    assert np.array_equal(o[:, 7], np.copysign(a[1:], b[1:]))
    np.testing.assert_allclose(o[:, 8], x + y + x * y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o[:, 9], 1 / y + np.sqrt(np.abs(y)), **tol)
    np.testing.assert_allclose(o[:, 10], np.tanh(x), **tol)
    np.testing.assert_allclose(o[:, 11], x / y + 2.0, **tol)
    # NaN row: fminf/fmaxf ignore the NaN, isnan(a*b) is 1
    row0 = fx.down(dout, (n, 12), np.float32)[0]
    assert np.isnan(row0[0]) and np.isnan(row0[2])
    assert row0[6] == np.float32(0.0)     # fminf(NaN, b) - fmaxf(NaN, b) = b - b


# ------------------------------------------------------------------------------ warps, atomics, memory
def test_warp_shuffles_and_votes(fx):
    block, grid = 64, 3
    nthreads = block * grid
    x = rng.integers(-1000, 1000, nthreads).astype(np.int32)
    x[5] = 12345
    dout = fx.poisoned(9 * nthreads, np.int32)
    fx.launch("k_warp", (grid, 1, 1), (block, 1, 1), dout, fx.up(x))
    o = fx.down(dout, (nthreads, 9), np.int32)
    for w0 in range(0, nthreads, 32):
        v = x[w0:w0 + 32]
        ow = o[w0:w0 + 32]
        lane = np.arange(32)
        assert np.array_equal(ow[:, 0], v[(lane * 7) & 31])
        assert np.array_equal(ow[:, 1], np.where(lane >= 3, v[np.maximum(lane - 3, 0)], v))
        seg = lane & ~15
        src = lane + 5
        assert np.array_equal(ow[:, 2], np.where(src <= seg + 15, v[np.minimum(src, 31)], v))
        assert np.array_equal(ow[:, 3], v[lane ^ 9])
        ballot = sum(1 << int(ln) for ln in lane if v[ln] & 1)
        assert np.all(ow[:, 4].view(np.uint32) == np.uint32(ballot))
        assert np.all(ow[:, 5] == int((v == 12345).any()))
        assert np.all(ow[:, 6] == 1)
        seg8 = lane & ~7
        assert np.array_equal(ow[:, 7], np.where(lane - 2 >= seg8, v[np.maximum(lane - 2, 0)], v))
        act = sum(1 << int(ln) for ln in lane if v[ln] & 2)
        assert np.array_equal(ow[:, 8].view(np.uint32), np.where(v & 2, np.uint32(act), 0).astype(np.uint32))


def test_atomics_with_collisions(fx):
    n, nslots, nbins = 1999, 5, 37
    slot = rng.integers(0, nslots, n).astype(np.int32)
    val = rng.integers(-500, 500, n).astype(np.int32)
    dsum = fx.up(np.zeros(nslots, np.float32))
    dmin = fx.up(np.full(nslots, 2 ** 31 - 1, np.int32))
    dmax = fx.up(np.full(nslots, -2 ** 31, np.int32))
    dcnt = fx.up(np.zeros(nslots, np.uint32))
    dex = fx.poisoned(n, np.int32)
    dcas = fx.up(np.zeros(16, np.int32))
    dhist = fx.up(np.zeros(nbins, np.uint32))
    fx.launch("k_atomic", (-(-n // 128), 1, 1), (128, 1, 1), dsum, dmin, dmax, dcnt, dex, dcas, dhist,
              fx.up(slot), fx.up(val), n, nbins)
    ref_sum = np.zeros(nslots)
    np.add.at(ref_sum, slot, val * 0.5)
    np.testing.assert_allclose(fx.down(dsum, nslots, np.float32), ref_sum, rtol=1e-6)
    assert np.array_equal(fx.down(dmin, nslots, np.int32), [val[slot == s].min() for s in range(nslots)])
    assert np.array_equal(fx.down(dmax, nslots, np.int32), [val[slot == s].max() for s in range(nslots)])
    assert np.array_equal(fx.down(dcnt, nslots, np.uint32), np.bincount(slot, minlength=nslots))
    cas = fx.down(dcas, 16, np.int32)
    for s in range(nslots):
        members = np.flatnonzero(slot == s)
        assert cas[s] - 1 in members                      # exactly one thread won the CAS
        assert cas[s + 8] in val[members]                 # last exchange stored one of the values
    # the exchanged old values form a chain per slot: every value but one is returned exactly once
    ex = fx.down(dex, n, np.int32)
    for s in range(nslots):
        members = np.flatnonzero(slot == s)
        got = sorted(ex[members].tolist())
        exp = sorted([0] + val[members].tolist())
        exp.remove(cas[s + 8])
        assert got == exp
    hist = fx.down(dhist, nbins, np.uint32)
    assert np.array_equal(hist, np.bincount(val.view(np.uint32) % nbins, minlength=nbins))
    dctr = fx.poisoned(1, np.int32)
    fx.launch("k_read_counter", (1, 1, 1), (1, 1, 1), dctr)
    assert fx.down(dctr, 1, np.int32)[0] == n


def test_generic_local_dynamic_shared_const(fx):
    n, block = 300, 64
    x = rng.standard_normal(n).astype(np.float32)
    table = np.array([1.5, -2.25, 3.0, 0.125, -7.0, 100.0, 1e-3, 42.0], np.float32)
    for sel in (0, 1):
        dout = fx.poisoned(n, np.float32)
        grid = -(-n // block)
        fx.launch("k_mem", (grid, 1, 1), (block, 1, 1), dout, fx.up(x), n, sel, shared=block * 4)
        out = fx.down(dout, n, np.float32)
        xp = np.concatenate([x, np.zeros(grid * block - n, np.float32)])
        ref = np.zeros(n)
        for i in range(n):
            b, t = divmod(i, block)
            dyn = xp[b * block:(b + 1) * block]
            loc = np.arange(16) * 0.5
            loc[(i * 5) & 15] += dyn[block - 1 - t]
            acc = sum(loc[(k + i) & 15] * (k + 1) for k in range(16))
            p = dyn[t] if (sel + b) & 1 else x[i]
            ref[i] = p + acc + table[i & 7]
        assert rel(out, ref) < 1e-6


def test_barriers_in_loops_prefix_sum(fx):
    n, block = 1000, 256
    x = rng.standard_normal(n).astype(np.float32)
    dout = fx.poisoned(n, np.float32)
    fx.launch("k_scan", (-(-n // block) + 1, 1, 1), (block, 1, 1), dout, fx.up(x), n)  # one extra, exiting block
    out = fx.down(dout, n, np.float32)
    ref = np.concatenate([np.cumsum(x[b:b + block].astype(np.float64)) for b in range(0, n, block)])
    assert rel(out, ref) < 1e-5


# ------------------------------------------------------------------------------ shipped test kernels
def test_saxpy_grid_stride(tk):
    n = 10007
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy = tk.up(x), tk.up(y)
    st = tk.launch("saxpy", (7, 1, 1), (96, 1, 1), dy, dx, 0.75, n)
    assert st.thread_instructions > 0
    assert rel(tk.down(dy, n, np.float32), 0.75 * x.astype(np.float64) + y) < 1e-6


def test_row_sum_warp(tk):
    rows, cols = 37, 1001
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    dout = tk.poisoned(rows, np.float32)
    tk.launch("row_sum_warp", (-(-rows // 3), 1, 1), (96, 1, 1), dout, tk.up(a), rows, cols)
    assert rel(tk.down(dout, rows, np.float32), a.astype(np.float64).sum(1)) < 1e-5


def test_tiled_transpose(tk):
    rows, cols = 67, 45
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    dout = tk.poisoned(rows * cols, np.float32)
    tk.launch("tiled_transpose", (-(-cols // 32), -(-rows // 32), 1), (32, 8, 1), dout, tk.up(a), rows, cols)
    assert np.array_equal(tk.down(dout, (cols, rows), np.float32), a.T)


def test_atomic_hist_and_sum(tk):
    n, nbins = 10007, 13
    x = rng.uniform(-1, 2, n).astype(np.float32)
    dx, dh = tk.up(x), tk.up(np.zeros(nbins, np.uint32))
    tk.launch("atomic_hist", (5, 1, 1), (128, 1, 1), dh, dx, n, 0.0, 1.0, nbins)
    xs = x[(x >= 0) & (x < 1)]
    scale = np.float32(nbins) / np.float32(1.0)
    ref = np.bincount(np.minimum((xs * scale).astype(np.int64), nbins - 1), minlength=nbins)
    assert np.array_equal(tk.down(dh, nbins, np.uint32), ref)
    ds = tk.up(np.zeros(1, np.float32))
    tk.launch("atomic_sum", (6, 1, 1), (256, 1, 1), ds, dx, n)
    assert abs(tk.down(ds, 1, np.float32)[0] - x.astype(np.float64).sum()) < 1e-3


def test_out_of_bounds_read_is_a_kernel_fault(tk):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy = tk.up(x), tk.up(y)
    with pytest.raises(KernelFault) as ei:
        tk.launch("saxpy", (4, 1, 1), (64, 1, 1), dy, dx, 1.0, n + 3)   # reads 3 elements past the end
    e = ei.value
    assert isinstance(e, SimIllegalAddress)
    assert e.code_name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    msg = str(e)
    assert "saxpy" in msg and "thread (" in msg and "block (" in msg
    assert f"0x{e.address:x}" in msg
    assert "past the end of the 4000-byte allocation" in msg
    assert e.nearest and "4000-byte allocation" in e.nearest
    assert "PTX line" in msg and "ld.global" in e.ptx
    assert e.address in (dx + 4000, dy + 4000)
    # the faulting thread is the one that owns element n (grid-stride: i = n, n+1, n+2)
    i = (e.address - (dx if e.address < dy else dy)) // 4
    assert i == n
    tid = e.thread[0] + 64 * e.block[0]
    assert tid == i % 256


def test_divergent_barrier_is_an_error(tk):
    n, block = 200, 128
    x = rng.standard_normal(n).astype(np.float32)
    dout = tk.poisoned(n, np.float32)
    with pytest.raises(BarrierError) as ei:
        tk.launch("bad_barrier", (2, 1, 1), (block, 1, 1), dout, tk.up(x), n, 100)
    msg = str(ei.value)
    assert "bad_barrier" in msg and "line" in msg and "100 of 128" in msg
    assert ei.value.arrived == 100 and ei.value.expected == 128
    # with limit == blockDim every thread reaches the barrier: fine
    tk.launch("bad_barrier", (2, 1, 1), (block, 1, 1), dout, tk.up(x), n, block)
    out = tk.down(dout, n, np.float32)
    xp = np.concatenate([x, np.zeros(2 * block - n, np.float32)])
    ref = np.array([x[i] + xp[(i // block) * block + ((i % block) + 1) % block] for i in range(n)])
    assert np.array_equal(out, ref.astype(np.float32))


def test_chunking_gives_same_result(tk):
    rows, cols = 100, 130
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    dout = tk.poisoned(rows * cols, np.float32)
    e = tk.m.entries["tiled_transpose"]
    buf = bytearray(e.param_size)
    for p, v in zip(e.params, (dout, tk.up(a), rows, cols)):
        struct.pack_into(FMT[p.type], buf, p.offset, v)
    st = tk.m.launch("tiled_transpose", (5, 4, 1), (32, 8, 1), params=bytes(buf), memory=tk.mem,
                     max_chunk_threads=512)
    assert st.chunks == 10
    assert np.array_equal(tk.down(dout, (cols, rows), np.float32), a.T)


# ------------------------------------------------------------------------------ hand-written PTX
HAND = r"""
.version 8.0
.target sm_75
.address_size 64

.visible .entry k_pred(.param .u64 out, .param .u64 inp, .param .u32 n, .param .u32 shoff)
{
    .reg .pred %p<5>;
    .reg .b32 %r<12>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 sm[128];

    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [inp];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r9, [shoff];
    mov.u32 %r2, %tid.x;
    setp.lt.u32 %p1|%p2, %r2, %r1;           // p1 = t < n, p2 = !(t < n)
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    add.s64 %rd5, %rd1, %rd3;
    mov.f32 %f1, 0f40490FDB;                 // pi for lanes that do not load
    @%p1 ld.global.f32 %f1, [%rd4];
    and.b32 %r3, %r2, 1;
    setp.eq.and.u32 %p3, %r3, 1, %p1;        // odd and in range
    @%p3 add.f32 %f1, %f1, 0f3F800000;       // +1 on odd lanes
    @!%p3 mov.b32 %r4, 7;
    @%p3 mov.b32 %r4, 9;
    bfe.u32 %r5, %r2, 1, 3;
    bfi.b32 %r6, %r5, %r4, 8, 4;
    selp.b32 %r7, %r6, %r4, %p1;
    cvt.rn.f32.u32 %f2, %r7;
    add.f32 %f3, %f1, %f2;
    mul.lo.u32 %r10, %r2, 4;
    add.u32 %r10, %r10, %r9;
    st.shared.f32 [%r10], %f3;
    bar.sync 0;
    ld.shared.f32 %f3, [%r10];
    @%p1 st.global.f32 [%rd5], %f3;
    ret;
}

.visible .entry k_misaligned(.param .u64 p)
{
    .reg .b64 %rd<3>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [p];
    add.s64 %rd2, %rd1, 2;
    ld.global.f32 %f1, [%rd2];
    ret;
}

.visible .entry k_trap(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.eq.u32 %p1, %r2, %r1;
    @%p1 trap;
    ret;
}
"""


def _hand():
    d = Dev.__new__(Dev)
    d.m = PtxModule(HAND)
    d.mem = DeviceMemory(1 << 24)
    return d


def test_predicated_instructions():
    d = _hand()
    n, block = 23, 32
    x = rng.standard_normal(block).astype(np.float32)
    dout = d.poisoned(block, np.float32)
    d.launch("k_pred", (1, 1, 1), (block, 1, 1), dout, d.up(x), n, 0)
    out = d.down(dout, block, np.float32)
    t = np.arange(block)
    inr = t < n
    odd = (t & 1 == 1) & inr
    f1 = np.where(inr, x, np.float32(np.pi)).astype(np.float32) + np.where(odd, np.float32(1), np.float32(0))
    r4 = np.where(odd, 9, 7)
    r5 = (t >> 1) & 7
    r6 = (r4 & ~(0xF << 8)) | (r5 << 8)
    r7 = np.where(inr, r6, r4)
    ref = (f1 + r7.astype(np.float32)).astype(np.float32)
    assert np.array_equal(out[:n], ref[:n])
    assert np.isnan(out[n:]).all()          # predicated-off stores wrote nothing


def test_shared_out_of_bounds_is_a_kernel_fault():
    d = _hand()
    dout = d.poisoned(32, np.float32)
    with pytest.raises(KernelFault) as ei:
        d.launch("k_pred", (1, 1, 1), (32, 1, 1), dout, d.up(np.ones(32, np.float32)), 32, 4)
    e = ei.value
    assert e.space == "shared" and "shared" in str(e) and "k_pred" in str(e)
    assert e.thread == (31, 0, 0) and e.offset == 128 and e.address is None     # 31*4 + 4: one past the 128-byte array


def test_misaligned_global_access():
    d = _hand()
    p = d.up(np.ones(8, np.float32))
    with pytest.raises(KernelFault) as ei:
        d.launch("k_misaligned", (1, 1, 1), (1, 1, 1), p)
    assert ei.value.code_name == "CUDA_ERROR_MISALIGNED_ADDRESS"
    assert ei.value.address == p + 2


def test_trap():
    d = _hand()
    with pytest.raises(KernelFault) as ei:
        d.launch("k_trap", (2, 1, 1), (16, 1, 1), 5)
    assert "trap" in str(ei.value) and ei.value.thread == (5, 0, 0) and ei.value.block == (0, 0, 0)


def test_decoded_once_and_shared_between_instances():
    a = PtxModule(HAND)
    b = PtxModule(HAND)
    assert a.entries["k_pred"].code is b.entries["k_pred"].code
    d = _hand()
    code = d.m.entries["k_pred"].code
    dout = d.poisoned(32, np.float32)
    d.launch("k_pred", (1, 1, 1), (32, 1, 1), dout, d.up(np.ones(32, np.float32)), 20, 0)
    funcs = [(b.full, b.part) for b in code.blocks if b.kind == "code"]
    d.launch("k_pred", (1, 1, 1), (32, 1, 1), dout, d.up(np.ones(32, np.float32)), 20, 0)
    assert funcs == [(b.full, b.part) for b in code.blocks if b.kind == "code"]   # no re-decoding per launch


def test_vector_load_from_kernel_params(tmp_path):
    """ld.param.v2/.v4 straight from the parameter space (NVRTC emits them for by-value structs)."""
    text = """.version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out, .param .align 16 .b8 quad[16])
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.v4.u32 {%r1, %r2, %r3, %r4}, [quad];
    ld.param.v2.u32 {%r5, %r1}, [quad+8];
    st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};
    st.global.u32 [%rd2+16], %r5;
    ret;
}
"""
    p = tmp_path / "k.ptx"
    p.write_text(text)
    d = Dev(p)
    out = d.poisoned(5, np.uint32)
    e = d.m.entries["k"]
    buf = bytearray(e.param_size)
    struct.pack_into("<Q", buf, e.params[0].offset, out)
    struct.pack_into("<4I", buf, e.params[1].offset, 11, 22, 33, 44)   # .align 16: at offset 16
    d.m.launch("k", (1, 1, 1), (1, 1, 1), params=bytes(buf), dynamic_shared=0, memory=d.mem)
    assert d.down(out, 5, np.uint32).tolist() == [44, 22, 33, 44, 33]


def test_struct_param_read_through_its_address(tmp_path):
    """NVRTC reads a by-value struct (`.param .align 8 .b8 g[N]`) by taking its address with mov and
    loading ld.param [%rd+offset] (strided.ptx's geometry): the offsets land inside that parameter, and a
    load at offset 0 leaves the address register as it was for the loads after it."""
    text = """.version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 r, .param .align 8 .b8 g[24])
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [r];
    mov.b64 %rd2, g;
    mov.u64 %rd3, %rd2;
    ld.param.u64 %rd4, [%rd3+16];
    ld.param.u64 %rd5, [%rd3];
    ld.param.u64 %rd6, [%rd3+8];
    cvta.to.global.u64 %rd7, %rd1;
    st.global.u64 [%rd7], %rd4;
    st.global.u64 [%rd7+8], %rd5;
    st.global.u64 [%rd7+16], %rd6;
    st.global.u32 [%rd7+24], %r1;
    ret;
}
"""
    p = tmp_path / "k.ptx"
    p.write_text(text)
    d = Dev(p)
    out = d.poisoned(4, np.uint64)
    e = d.m.entries["k"]
    assert [(q.offset, q.size) for q in e.params] == [(0, 8), (8, 4), (16, 24)]   # .align 8 after the u32
    buf = bytearray(e.param_size)
    struct.pack_into("<QI", buf, 0, out, 7)
    struct.pack_into("<3q", buf, 16, -5, 2 ** 40 + 3, 99)
    d.m.launch("k", (1, 1, 1), (1, 1, 1), params=bytes(buf), dynamic_shared=0, memory=d.mem)
    got = d.down(out, 4, np.uint64)
    assert got[:3].view(np.int64).tolist() == [99, -5, 2 ** 40 + 3] and int(got[3]) & 0xFFFFFFFF == 7


@pytest.mark.parametrize("engine", ["interp", "auto"])
def test_max_min_of_signed_zeros_do_not_depend_on_how_many_lanes_run(tmp_path, monkeypatch, engine):
    """max/min.f32 of +0 and -0: numpy's fmax/fmin give the sign of the zero by their loop (the first operand's
    below 8 elements, the second's from 8 on), so one lane and 32 lanes used to disagree, and the native engine
    agreed with neither in every case. Every lane's result is the same whatever the launch width, on both engines."""
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
    text = """.version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 in)
{
    .reg .b32 %r<2>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd5, %r1, 8;
    add.s64 %rd4, %rd4, %rd5;
    ld.global.f32 %f1, [%rd4];
    ld.global.f32 %f2, [%rd4+4];
    max.f32 %f3, %f1, %f2;
    min.f32 %f4, %f1, %f2;
    add.s64 %rd3, %rd3, %rd5;
    st.global.f32 [%rd3], %f3;
    st.global.f32 [%rd3+4], %f4;
    ret;
}
"""
    p = tmp_path / "k.ptx"
    p.write_text(text)
    d = Dev(p)
    signs = {}
    for lanes in (1, 32):
        pairs = np.tile(np.array([[0.0, -0.0], [-0.0, 0.0]], np.float32), (lanes, 1))[:lanes]
        src, out = d.up(pairs), d.poisoned(2 * lanes, np.float32)
        d.launch("k", (1, 1, 1), (lanes, 1, 1), out, src)
        signs[lanes] = np.signbit(d.down(out, (lanes, 2), np.float32)).tolist()
    assert signs[32][:1] == signs[1]
    assert signs[32][0] == signs[32][2] and signs[32][1] == signs[32][3]
