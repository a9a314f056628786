"""The simulator's native engine (PTX compiled through LLVM) against the interpreter, the reference.

The differential test launches every kernel of every shipped PTX file that the native engine compiles, with
arguments drawn from its manifest signature (buffers of floats with the special values or of small integers;
every integer scalar one value, large or small; random floats), on both engines from the same device memory,
and requires the same bytes in every allocation (a NaN equal to a NaN of the same width: numpy's own NaN
payloads depend on its loops) and the same instruction count, or the same fault on both
(``RAWDEV_SIM_ENGINE=diff``). Then: the conversions written by hand in IR over every float16 value, faults
reported as the interpreter reports them, and the engine's choice rules (checkers and statistics run
interpreted)."""
import json
import os
from pathlib import Path

import numpy as np
import pytest
from rawdev.runtime import reset_for_tests
from rawdev.sim.memory import DeviceMemory
from rawdev.sim.ptx import PtxModule, native, native_helpers
from rawdev.sim.ptx.decoder import DecodeError
from rawdev.sim.ptx.interp import BarrierError, KernelFault

from _refs import rng

pytestmark = pytest.mark.skipif(not native.available(), reason="the native engine needs llvmlite")

PTX_DIR = Path(__file__).resolve().parents[1] / "ptx"
MANIFEST = json.loads((PTX_DIR / "manifest.json").read_text())["files"]
BUF = 1 << 14   # bytes per pointer argument
NEEDS_VALID_INPUT = ("merge_runs_",)   # see test_kernels_that_need_valid_input_match_through_the_ops_that_call_them


SPECIALS = np.array([0x7FFFFFFF, 0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF, 0x3F800000,
                     0x7F7FFFFF, 0x00800000], np.uint32).view(np.float32)


def _quiet(raw):
    """The bytes with every signalling NaN pattern of float16, bfloat16 and float32 made quiet: numpy's own fmin/fmax
    of a signalling NaN depend on the array's length (its scalar and vector loops differ), so the interpreter has no
    one answer for them to match. Half-precision kernels read float32 data as pairs of 16-bit halves, where any bit
    pattern occurs."""
    h = raw.view(np.uint16)
    f16_snan = ((h & 0x7C00) == 0x7C00) & ((h & 0x3FF) != 0) & ((h & 0x200) == 0)
    h[f16_snan] |= 0x200
    bf_snan = ((h & 0x7F80) == 0x7F80) & ((h & 0x7F) != 0) & ((h & 0x40) == 0)
    h[bf_snan] |= 0x40
    w = raw.view(np.uint32)
    f32_snan = ((w & 0x7F800000) == 0x7F800000) & ((w & 0x7FFFFF) != 0) & ((w & 0x400000) == 0)
    w[f32_snan] |= 0x400000
    return raw


def _buffer(g):
    """Random contents: floats (normal, tiny, huge, and the special values: the GPU's canonical NaN, zeros of both
    signs, infinities, subnormals), or small integers of 1, 2, 4 or 8 bytes (indices, counts, lengths)."""
    return _quiet(_raw_buffer(g))


def _raw_buffer(g):
    pick = g.integers(0, 3)
    if pick == 0:
        x = (g.standard_normal(BUF // 4) * np.exp2(g.integers(-20, 20, BUF // 4))).astype(np.float32)
        sp = g.random(BUF // 4) < 0.05
        x[sp] = g.choice(SPECIALS, int(sp.sum()))
        return x.view(np.uint8)
    if pick == 1:
        return g.standard_normal(BUF // 4).astype(np.float32).view(np.uint8)
    width = int(g.choice([1, 2, 4, 8]))
    return g.integers(0, 24, BUF // width).astype(f"<u{width}").view(np.uint8)


def _args(g, mem, params, ival):
    """Packed arguments: a fresh buffer per pointer, ``ival`` for every integer (sizes, leading dimensions and
    strides equal, so rows never overlap: different values make threads write the same bytes), random floats."""
    out = bytearray()
    for p in params:
        t, _, count = p["type"].partition("[")
        size = {"u64": 8, "s64": 8, "b64": 8, "f64": 8, "u32": 4, "s32": 4, "b32": 4, "f32": 4, "u16": 2, "s16": 2,
                "b16": 2, "u8": 1, "s8": 1, "b8": 1}[t]
        if count:   # a struct passed by value (shapes, strides): small fields, int64 where they can be
            nbytes = size * int(count.rstrip("]"))
            w = 8 if nbytes % 8 == 0 else 4
            out += bytes(-len(out) % w)
            out += g.integers(1, 4, nbytes // w).astype(f"<i{w}").tobytes()
            continue
        out += bytes(-len(out) % size)
        if p["ctype"].endswith("*"):
            a = mem.alloc(BUF)
            mem.write(a, _buffer(g).tobytes())
            out += int(a).to_bytes(8, "little")
        elif t.startswith("f"):
            out += np.array(g.standard_normal() * 3, np.float32 if size == 4 else np.float64).tobytes()
        else:
            out += int(ival).to_bytes(size, "little")
    return bytes(out)


@pytest.mark.parametrize("fname", sorted(MANIFEST))
def test_every_compiled_kernel_matches_the_interpreter_byte_for_byte(fname, monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", "diff")
    g = rng()
    mod = PtxModule((PTX_DIR / fname).read_text())
    ran = races = 0
    for name, meta in MANIFEST[fname]["entries"].items():
        if native.kernel(mod, name) is None or name.startswith(NEEDS_VALID_INPUT):
            continue
        # sizes that fill the buffers and cross the blocks; sizes of 1 to 3 (and flags set)
        for (grid, block), ival in ((((2, 1, 1), (64, 1, 1)), int(g.integers(8, 48))),
                                    (((1, 1, 1), (33, 1, 1)), int(g.integers(1, 4)))):
            mem = DeviceMemory(64 << 20)
            params = _args(g, mem, meta["params"], ival)
            try:
                mod.launch(name, grid, block, params, memory=mem)
            except (KernelFault, BarrierError, DecodeError):   # the same on both (else diff mode raises EngineMismatch)
                pass   # DecodeError: an mma/ldmatrix in a partial warp (the 33-thread block)
            except native.EngineMismatch as e:
                # random arguments can make threads write the same bytes (a leading dimension below the row
                # length): a race, undefined on a GPU; diff mode proves it by running the threads in reverse order
                if not e.race:
                    raise
                races += 1
            ran += 1
    if not ran:
        pytest.skip(f"no kernel of {fname} runs natively")
    assert races < ran / 4, f"{fname}: {races} of {ran} launches raced: the arguments test too little"


def test_kernels_that_need_valid_input_match_through_the_ops_that_call_them(driver, monkeypatch):
    """merge_runs_* with random keys (runs that are not sorted) has two threads write one element, a race whose
    winner differs between lockstep lanes and threads in order; rawdev's sort gives it sorted runs."""
    import rawdev
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", "diff")
    g = rng()
    for dtype, n in ((rawdev.float32, 5000), (rawdev.int64, 4500)):
        x = rawdev.tensor(g.integers(-50, 50, (2, n)), dtype=dtype).to("cuda")
        vals, idx = rawdev.sort(x, dim=1, stable=True)
        want = np.sort(x.cpu().numpy(), axis=1, kind="stable")
        assert np.array_equal(vals.cpu().numpy(), want)
        assert np.array_equal(np.take_along_axis(x.cpu().numpy(), idx.cpu().numpy(), 1), want)


CONVERT = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry conv(.param .u64 p_h, .param .u64 p_f, .param .u64 p_x, .param .u64 p_hx, .param .u64 p_bx,
                     .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b16 %rs<4>;
    .reg .f32 %f<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [p_h];
    ld.param.u64 %rd2, [p_f];
    ld.param.u64 %rd3, [p_x];
    ld.param.u64 %rd4, [p_hx];
    ld.param.u64 %rd5, [p_bx];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r2, %r2, %r3, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd6, %r2, 2;
    mul.wide.u32 %rd7, %r2, 4;
    add.s64 %rd8, %rd1, %rd6;
    ld.global.u16 %rs1, [%rd8];
    cvt.f32.f16 %f1, %rs1;
    add.s64 %rd9, %rd2, %rd7;
    st.global.f32 [%rd9], %f1;
    add.s64 %rd10, %rd3, %rd7;
    ld.global.f32 %f2, [%rd10];
    cvt.rn.f16.f32 %rs2, %f2;
    add.s64 %rd11, %rd4, %rd6;
    st.global.u16 [%rd11], %rs2;
    cvt.rn.bf16.f32 %rs3, %f2;
    add.s64 %rd11, %rd5, %rd6;
    st.global.u16 [%rd11], %rs3;
DONE:
    ret;
}
"""


def test_float16_and_bfloat16_conversions_match_numpy_for_every_value():
    mod = PtxModule(CONVERT)
    assert native.kernel(mod, "conv") is not None, native.reasons()
    n = 1 << 16
    halves = np.arange(n, dtype=np.uint32).astype(np.uint16)
    g = rng()
    floats = np.concatenate([
        g.integers(0, 1 << 32, n - 4096, dtype=np.uint64).astype(np.uint32).view(np.float32),
        # around float16's overflow, subnormal and rounding boundaries
        (halves[:4096].view(np.float16).astype(np.float32).view(np.uint32) + np.uint32(0x1000)).view(np.float32)])
    mem = DeviceMemory(64 << 20)
    ph, pf, px, phx, pbx = (mem.alloc(n * s) for s in (2, 4, 4, 2, 2))
    mem.write(ph, halves.tobytes())
    mem.write(px, floats.tobytes())
    params = b"".join(int(a).to_bytes(8, "little") for a in (ph, pf, px, phx, pbx)) + n.to_bytes(4, "little")
    mod.launch("conv", (n // 256, 1, 1), (256, 1, 1), params, memory=mem)
    got_f = np.frombuffer(mem.read(pf, n * 4), np.uint32)
    got_h = np.frombuffer(mem.read(phx, n * 2), np.uint16)
    got_b = np.frombuffer(mem.read(pbx, n * 2), np.uint16)
    assert np.array_equal(got_f, halves.view(np.float16).astype(np.float32).view(np.uint32))
    with np.errstate(all="ignore"):
        want_h = floats.astype(np.float16).view(np.uint16)
    quiet = ~(np.isnan(floats) & ((floats.view(np.uint32) & 0x400000) == 0))   # signalling NaNs: see below
    assert np.array_equal(got_h[quiet], want_h[quiet])
    # a signalling NaN stays a NaN of the same sign (numpy's software and F16C paths differ in its payload)
    sn = ~quiet
    assert np.all((got_h[sn] & 0x7C00) == 0x7C00) and np.all((got_h[sn] & 0x3FF) != 0)
    u = floats.view(np.uint32).astype(np.uint64)
    want_b = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    want_b[np.isnan(floats)] = 0x7FC0
    assert np.array_equal(got_b, want_b)


OOB = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry poke(.param .u64 p, .param .u32 bad)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [bad];
    mov.u32 %r2, %tid.x;
    setp.eq.u32 %p1, %r2, %r1;
    mul.wide.u32 %rd2, %r2, 4;
    @%p1 add.s64 %rd2, %rd2, 4096;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    st.global.f32 [%rd3], %f1;
    ret;
}
"""


@pytest.mark.parametrize("engine", ["interp", "auto"])
def test_an_out_of_bounds_thread_is_reported_with_its_line_and_address(engine, monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
    mod = PtxModule(OOB)
    mem = DeviceMemory(1 << 20)
    a = mem.alloc(128 * 4)
    with pytest.raises(KernelFault) as ei:
        mod.launch("poke", (1, 1, 1), (128, 1, 1), int(a).to_bytes(8, "little") + (77).to_bytes(4, "little"),
                   memory=mem)
    e = ei.value
    assert e.code_name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert e.thread == (77, 0, 0) and e.block == (0, 0, 0)
    assert e.address == a + 77 * 4 + 4096
    assert "ld.global.f32" in e.ptx and "poke" in str(e) and "past the end" in str(e)


def test_checkers_and_statistics_run_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", "auto")
    mod = PtxModule(OOB)
    mem = DeviceMemory(1 << 20)
    a = mem.alloc(128 * 4)
    params = int(a).to_bytes(8, "little") + (999).to_bytes(4, "little")
    plain = mod.launch("poke", (1, 1, 1), (128, 1, 1), params, memory=mem)
    counted = mod.launch("poke", (1, 1, 1), (128, 1, 1), params, memory=mem, kernel_stats=True)
    assert counted.counts is not None
    # both engines count the same instructions: 10 per thread, the predicated add and the ret included
    assert plain.thread_instructions == counted.thread_instructions == 128 * 10


def test_compiled_kernels_are_reused_from_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWDEV_CACHE_DIR", str(tmp_path))
    mod = PtxModule(OOB.replace("poke", "poke2"))
    assert native.kernel(mod, "poke2") is not None
    objs = list(tmp_path.rglob("*.o"))
    assert len(objs) == 1 and objs[0].stat().st_size > 0
    assert len(list(tmp_path.rglob("*.json"))) >= 1   # the module's index and the entry's launch facts
    # a second process loads the object without parsing, lowering or compiling the kernel (lower_entry is gone
    # there: calling it would fail and leave the kernel to the interpreter)
    import subprocess
    import sys
    code = ("from rawdev.sim.ptx import PtxModule, native; import sys; native.lower_entry = None; "
            "m = PtxModule(sys.stdin.read()); assert native.kernel(m, 'poke2') is not None, native.reasons(); "
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], input=OOB.replace("poke", "poke2"), capture_output=True,
                       text=True, timeout=300, env={**os.environ, "RAWDEV_CACHE_DIR": str(tmp_path)})
    assert r.stdout.strip() == "ok", r.stderr
    assert list(tmp_path.rglob("*.o")) == objs


ROTATE = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry rotate(.param .u64 p, .param .u32 shift, .param .u32 mask)
{
    .reg .b32 %r<5>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<6>;
    .shared .align 4 .b8 buf[256];
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [shift];
    ld.param.u32 %r4, [mask];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    mov.u64 %rd4, buf;
    add.s64 %rd5, %rd4, %rd2;
    st.shared.f32 [%rd5], %f1;
    bar.sync 0;
    add.u32 %r3, %r2, %r1;
    and.b32 %r3, %r3, %r4;
    mul.wide.u32 %rd2, %r3, 4;
    add.s64 %rd5, %rd4, %rd2;
    ld.shared.f32 %f1, [%rd5];
    st.global.f32 [%rd3], %f1;
    ret;
}
"""


@pytest.mark.parametrize("dynamic", [False, True])
def test_shared_memory_and_a_barrier_run_natively(dynamic, monkeypatch):
    """Every thread writes shared memory, waits at bar.sync, then reads a neighbour's value: the threads run in
    phases between barriers with their registers saved; an index past the window faults like the interpreter."""
    src = ROTATE.replace(".shared .align 4 .b8 buf[256];", ".extern .shared .align 16 .b8 buf[];") if dynamic \
        else ROTATE
    dyn = 256 if dynamic else 0
    mod = PtxModule(src)
    assert native.kernel(mod, "rotate") is not None, native.reasons()
    g = rng()
    x = g.standard_normal((3, 64)).astype(np.float32)
    got = {}
    for engine in ("interp", "auto"):
        monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
        mem = DeviceMemory(1 << 20)
        a = mem.alloc(x.nbytes)
        mem.write(a, x.tobytes())
        for blk in range(3):   # one block per launch, the window cleared in between on both engines
            params = (int(a) + blk * 256).to_bytes(8, "little") + (blk + 1).to_bytes(4, "little") + \
                (63).to_bytes(4, "little")
            mod.launch("rotate", (1, 1, 1), (64, 1, 1), params, dyn, memory=mem)
        got[engine] = np.frombuffer(mem.read(a, x.nbytes), np.float32).reshape(3, 64)
        with pytest.raises(KernelFault) as ei:
            mod.launch("rotate", (1, 1, 1), (64, 1, 1), int(a).to_bytes(8, "little") + (5).to_bytes(4, "little") +
                       (0xFFFF).to_bytes(4, "little"), dyn, memory=mem)
        e = ei.value
        assert e.code_name == "CUDA_ERROR_ILLEGAL_ADDRESS" and e.thread == (59, 0, 0), str(e)
        assert "ld.shared.f32" in e.ptx and "outside the 256-byte shared window" in str(e), str(e)
    want = np.stack([np.roll(x[i], -(i + 1)) for i in range(3)])
    assert np.array_equal(got["interp"], want) and np.array_equal(got["auto"], want)


def test_a_divergent_barrier_is_reported_as_the_interpreter_reports_it(monkeypatch):
    """bad_barrier: threads with tid >= limit return before bar.sync while the others wait there."""
    mod = PtxModule((PTX_DIR / "testkernels.ptx").read_text())
    assert native.kernel(mod, "bad_barrier") is not None, native.reasons()
    msgs = {}
    for engine in ("interp", "auto"):
        monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
        mem = DeviceMemory(1 << 20)
        out, inp = mem.alloc(256), mem.alloc(256)
        mem.write(inp, np.arange(64, dtype=np.float32).tobytes())
        ok = int(out).to_bytes(8, "little") + int(inp).to_bytes(8, "little") + (64).to_bytes(4, "little")
        mod.launch("bad_barrier", (1, 1, 1), (64, 1, 1), ok + (64).to_bytes(4, "little"), memory=mem)
        assert np.array_equal(np.frombuffer(mem.read(out, 256), np.float32),
                              np.roll(np.arange(64), -1) + np.arange(64))
        with pytest.raises(BarrierError) as ei:
            mod.launch("bad_barrier", (1, 1, 1), (64, 1, 1), ok + (14).to_bytes(4, "little"), memory=mem)
        msgs[engine] = str(ei.value)
    assert "only 14 of 64 live threads arrived" in msgs["auto"]
    assert msgs["auto"] == msgs["interp"]


@pytest.mark.parametrize("rows,cols,warps", [(7, 70, 3), (5, 33, 2), (4, 1, 1)])
def test_warp_shuffles_run_natively_and_match_the_interpreter(rows, cols, warps, monkeypatch):
    """row_sum_warp: one warp per row, the row's partial sums combined by shfl.sync.down; a grid whose last block
    has warps past the last row (they return before the shuffles)."""
    mod = PtxModule((PTX_DIR / "testkernels.ptx").read_text())
    assert native.kernel(mod, "row_sum_warp") is not None, native.reasons()
    x = rng().standard_normal((rows, cols)).astype(np.float32)
    got = {}
    for engine in ("interp", "auto", "diff"):
        monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
        mem = DeviceMemory(1 << 20)
        out, inp = mem.alloc(rows * 4), mem.alloc(x.nbytes)
        mem.write(inp, x.tobytes())
        params = int(out).to_bytes(8, "little") + int(inp).to_bytes(8, "little") + rows.to_bytes(4, "little") + \
            cols.to_bytes(4, "little")
        mod.launch("row_sum_warp", (-(-rows // warps), 1, 1), (32 * warps, 1, 1), params, memory=mem)
        got[engine] = np.frombuffer(mem.read(out, rows * 4), np.float32)
    assert np.array_equal(got["auto"], got["interp"]) and np.array_equal(got["diff"], got["interp"])
    np.testing.assert_allclose(got["auto"], x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


def test_a_device_side_assert_is_reported_as_the_interpreter_reports_it(monkeypatch, capsys):
    """__assertfail (NVRTC's assert): the native engine reads the message, file, line and function the interpreter
    reads, and names every failing thread (threads 60-63 of both blocks), in the same words, on stderr too."""
    from test_device_assert import ASSERT_PTX
    mod = PtxModule(ASSERT_PTX)
    assert native.kernel(mod, "k") is not None, native.reasons()
    got = {}
    for engine in ("interp", "auto"):
        monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
        mem = DeviceMemory(1 << 20)
        mod.launch("k", (2, 1, 1), (64, 1, 1), params=np.array([64], np.uint32).tobytes(), memory=mem)
        with pytest.raises(KernelFault) as ei:
            mod.launch("k", (2, 1, 1), (64, 1, 1), params=np.array([60], np.uint32).tobytes(), memory=mem)
        got[engine] = (str(ei.value), ei.value.thread, ei.value.block, capsys.readouterr().err)
    assert got["auto"] == got["interp"]
    assert "(7 more thread(s) failed it too)" in got["auto"][0] and got["auto"][3].count("Assertion `x < 2`") == 8


@pytest.mark.parametrize("driver", ["sim"], indirect=True)
def test_an_assert_in_a_kernel_with_warp_shuffles_names_every_failing_row(driver, monkeypatch, capsys):
    """cross_entropy_ws_fwd (a warp per row, shuffles, an assert on the target): three bad targets in two blocks;
    the native engine goes on past a failing thread and names all three, as the interpreter does."""
    import rawdev
    import rawdev.nn.functional as F
    g = rng()
    x = g.standard_normal((20, 3)).astype(np.float32)
    t = np.zeros(20, np.int64)
    t[[2, 11, 19]] = [3, -1, 99]
    got = {}
    for engine in ("interp", "auto"):
        monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
        reset_for_tests("sim")   # a fresh simulated GPU: the assert left the last one's context unusable
        with pytest.raises(Exception) as ei:
            F.cross_entropy(rawdev.tensor(x, device="cuda"), rawdev.tensor(t, device="cuda"), reduction="none").cpu()
        got[engine] = (str(ei.value).split("stream=")[0], [ln for ln in capsys.readouterr().err.splitlines()
                                                         if "Assertion" in ln])
    assert got["auto"] == got["interp"] and len(got["auto"][1]) == 3, got


WINDOWS = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry by_value(.param .u64 out, .param .u32 k, .param .align 8 .b8 arr[32])
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [k];
    mov.b64 %rd2, arr;
    mov.u32 %r2, %tid.x;
    add.u32 %r3, %r2, %r1;
    mul.wide.u32 %rd3, %r3, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.param.u32 %r3, [%rd4];
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd1, %rd5;
    st.global.u32 [%rd6], %r3;
    ret;
}
.visible .entry depot(.param .u64 out, .param .u32 k)
{
    .local .align 4 .b8 d[16];
    .reg .b32 %r<5>;
    .reg .b64 %rd<9>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [k];
    mov.u64 %rd2, d;
    mov.u32 %r2, %tid.x;
    st.local.u32 [%rd2], %r2;
    st.local.u32 [%rd2+4], %r1;
    cvta.local.u64 %rd7, %rd2;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd8, %rd7, %rd3;
    ld.u32 %r3, [%rd8];
    add.s64 %rd4, %rd2, %rd3;
    ld.local.u32 %r4, [%rd4+-4];
    add.u32 %r3, %r3, %r4;
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd1, %rd5;
    st.global.u32 [%rd6], %r3;
    ret;
}
"""


@pytest.mark.parametrize("entry,good,bad,why", [
    ("by_value", 2, 7, "4-byte param access at offset 0x30 is outside the 48-byte param window"),
    ("depot", 1, 4, "4-byte local access at offset 0x10 is outside the 16-byte local window")])
def test_parameters_by_address_and_local_memory_run_natively(entry, good, bad, why, monkeypatch):
    """A by-value struct read through a register (strided copies pass their shape so) and a thread's local array,
    directly and through a generic address: the same values on both engines, and past the window the same
    fault."""
    mod = PtxModule(WINDOWS)
    assert native.kernel(mod, entry) is not None, native.reasons()
    arr = np.arange(100, 108, dtype=np.uint32).tobytes()
    got = {}
    for engine in ("interp", "auto"):
        monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
        mem = DeviceMemory(1 << 20)
        out = mem.alloc(64)

        def params(k, out=out):
            p = int(out).to_bytes(8, "little") + k.to_bytes(4, "little")
            return p + b"\0" * 4 + arr if entry == "by_value" else p
        mod.launch(entry, (1, 1, 1), (6, 1, 1), params(good), memory=mem)
        vals = np.frombuffer(mem.read(out, 24), np.uint32)
        with pytest.raises(KernelFault) as ei:
            mod.launch(entry, (1, 1, 1), (6, 1, 1), params(bad), memory=mem)
        got[engine] = (vals.tolist(), str(ei.value))
    assert got["auto"] == got["interp"], got
    assert why in got["auto"][1]
    want = [100 + good + i for i in range(6)] if entry == "by_value" else [1 + i for i in range(6)]
    assert got["auto"][0] == want


@pytest.mark.parametrize("driver", ["sim"], indirect=True)
def test_ops_on_newly_compiled_kernels_match_the_interpreter(driver, monkeypatch):
    """The ops behind the kernels that took by-value parameters, local memory, asserts or rsqrt: diff mode runs each
    launch on both engines and compares every byte (sin of large arguments takes the local-memory reduction)."""
    import rawdev
    for fname, names in (("strided.ptx", ["strided_copy_b4"]), ("elementwise.ptx", ["sin_fwd", "cos_fwd"]),
                         ("index.ptx", ["index_select_b4"]), ("normalization.ptx", ["gn_fwd_f32"]),
                         ("loss.ptx", ["cross_entropy_ws_fwd", "cross_entropy_ws_bwd"])):
        mod = PtxModule((PTX_DIR / fname).read_text())
        assert all(native.kernel(mod, n) is not None for n in names), native.reasons()
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", "diff")
    g = rng()
    x = g.standard_normal((3, 4, 5, 6)).astype(np.float32)
    big = np.concatenate([g.standard_normal(40) * 1e6, g.standard_normal(40) * 1e30, [np.pi, 1e38, -3e5]])
    xc = rawdev.tensor(x, device="cuda")
    np.testing.assert_array_equal(xc.permute(3, 1, 0, 2).contiguous().cpu().numpy(), x.transpose(3, 1, 0, 2))
    bc = rawdev.tensor(big.astype(np.float32), device="cuda")
    np.testing.assert_allclose(rawdev.sin(bc).cpu().numpy(), np.sin(big.astype(np.float32).astype(np.float64)),
                               rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(rawdev.cos(bc).cpu().numpy(), np.cos(big.astype(np.float32).astype(np.float64)),
                               rtol=2e-6, atol=2e-6)
    idx = rawdev.tensor(np.array([4, 0, -5, 2]), device="cuda")
    np.testing.assert_array_equal(rawdev.index_select(xc, 1, idx % 4).cpu().numpy(), x[:, [0, 0, 3, 2]])
    gn = rawdev.nn.functional.group_norm(xc, 2).cpu().numpy()
    r = x.reshape(3, 2, -1).astype(np.float64)
    want = ((r - r.mean(-1, keepdims=True)) / np.sqrt(r.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(gn, want, rtol=1e-5, atol=1e-5)
    logits = rawdev.tensor(g.standard_normal((6, 5)).astype(np.float32), device="cuda", requires_grad=True)
    loss = rawdev.nn.functional.cross_entropy(logits, rawdev.tensor(np.array([0, 4, 1, 2, 3, 0]), device="cuda"))
    loss.backward()
    assert np.isfinite(loss.item()) and logits.grad is not None


def test_warp_matrix_fixtures_lower_natively():
    """The mma (tf32 m16n8k8, f16 m16n8k8, f16/bf16 m16n8k16), ldmatrix and cp.async fixtures run on the native
    engine, so the fixture tests parametrized over the engine (test_sim_sm80, test_sim_mma, test_sim_mma_f16_k8)
    test it; so do every shipped tensor-core GEMM."""
    data = Path(__file__).resolve().parent / "data" / "ptx"
    sm80 = PtxModule((data / "sm80_fixtures_sm80.ptx").read_text())
    sm75 = PtxModule((data / "sm75_fixtures.ptx").read_text())
    lowered = {n for m in (sm80, sm75) for n in m.entries if native.kernel(m, n) is not None}
    assert {"k_mma", "k_ldmatrix", "k_mma_f16_k8", "k_cp_async", "k_tf32"} <= lowered, native.reasons()
    for fname in ("gemm_f16_sm75.ptx", "gemm_bf16_sm80.ptx", "gemm_tf32_sm80.ptx"):
        gemm = PtxModule((PTX_DIR / fname).read_text())
        assert all(native.kernel(gemm, n) is not None for n in gemm.entries), native.reasons()


CP_ASYNC = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry cpq(.param .u64 out, .param .u64 src, .param .u32 n, .param .u32 skew)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<12>;
    .shared .align 16 .b8 buf[512];
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [src];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r5, [skew];
    cvt.u64.u32 %rd6, %r5;
    add.s64 %rd2, %rd2, %rd6;
    mov.u64 %rd3, buf;
    mov.u32 %r3, 0;
ISSUE:
    setp.ge.u32 %p1, %r3, %r1;
    @%p1 bra WAIT;
    mul.wide.u32 %rd7, %r3, 4;
    add.s64 %rd4, %rd3, %rd7;
    add.s64 %rd5, %rd2, %rd7;
    cp.async.ca.shared.global [%rd4], [%rd5], 4;
    cp.async.commit_group;
    add.u32 %r3, %r3, 1;
    bra ISSUE;
WAIT:
    ld.shared.u32 %r4, [buf];
    st.global.u32 [%rd1], %r4;
    cp.async.wait_group 1;
    ld.shared.u32 %r4, [%rd4];
    st.global.u32 [%rd1+4], %r4;
    cp.async.wait_all;
    ld.shared.u32 %r4, [%rd4];
    st.global.u32 [%rd1+8], %r4;
    ret;
}
"""


def test_cp_async_copies_land_at_their_wait_natively(monkeypatch):
    """One thread issues n 4-byte copies in n groups: before any wait shared memory holds zeros, wait_group 1
    lands all but the newest (the last copy's bytes are still zero), wait_all the rest; a misaligned source faults
    with the interpreter's message; more copies in flight than the native queue holds stop the launch naming the
    interpreter as the way to run it."""
    mod = PtxModule(CP_ASYNC)
    assert native.kernel(mod, "cpq") is not None, native.reasons()
    src = np.arange(1000, 1100, dtype=np.uint32)
    got = {}
    for engine in ("interp", "auto"):
        monkeypatch.setenv("RAWDEV_SIM_ENGINE", engine)
        mem = DeviceMemory(1 << 20)
        out, s = mem.alloc(16), mem.alloc(src.nbytes)
        mem.write(s, src.tobytes())

        def params(n, skew, out=out, s=s):
            return int(out).to_bytes(8, "little") + int(s).to_bytes(8, "little") + n.to_bytes(4, "little") + \
                skew.to_bytes(4, "little")
        mod.launch("cpq", (1, 1, 1), (1, 1, 1), params(10, 0), memory=mem)
        vals = np.frombuffer(mem.read(out, 12), np.uint32).tolist()
        with pytest.raises(KernelFault) as ei:
            mod.launch("cpq", (1, 1, 1), (1, 1, 1), params(3, 2), memory=mem)
        got[engine] = (vals, str(ei.value))
    assert got["auto"] == got["interp"], got
    assert got["auto"][0] == [0, 0, 1009] and "misaligned 4-byte cp.async source" in got["auto"][1]
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", "auto")
    with pytest.raises(native.EngineMismatch, match="RAWDEV_SIM_ENGINE=interp"):
        mod.launch("cpq", (1, 1, 1), (1, 1, 1), params(native_helpers.CP_QUEUE + 1, 0), memory=mem)
