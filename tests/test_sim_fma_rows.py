"""The simulator runs a block's independent fma.rn.f32 instructions as one stacked call (decoder._fuse_fma32,
ops.fma32_rows): every lane must get exactly the value a lone fma32 gives it, and dependent or odd-shaped
instructions must not be fused."""
import numpy as np
from rawdev.sim.memory import DeviceMemory
from rawdev.sim.ptx import PtxModule, decoder, ops

from _refs import rng


def _operands(g, n):
    """float32 lanes of several kinds: normal, few-bit (ties of the float64 sum), subnormal range, zeros."""
    kinds = [g.standard_normal(n), (g.integers(-8, 8, n) / 8), g.standard_normal(n) * 1e-39, np.zeros(n)]
    pick = g.integers(0, len(kinds), n)
    return np.choose(pick, kinds).astype(np.float32)


def test_rows_equal_lone_fma32_bit_for_bit():
    g = rng()
    for n in (1, 7, 256, 1000):
        for k in (2, 16):
            A, B, C = ([_operands(g, n) for _ in range(k)] for _ in range(3))
            got = ops.fma32_rows(tuple(A), tuple(B), tuple(C))
            for r, a, b, c in zip(got, A, B, C):
                assert r.dtype == np.float32
                assert np.array_equal(r.view(np.uint32), ops.fma32(a, b, c).view(np.uint32))


def test_rows_with_a_scalar_or_a_wider_operand_run_one_by_one():
    g = rng()
    a, b, c = _operands(g, 64), _operands(g, 64), _operands(g, 64)
    for odd in (np.float32(1.5), a.astype(np.float64)):
        got = ops.fma32_rows((a, odd), (b, b), (c, c))
        assert np.array_equal(got[0], ops.fma32(a, b, c))
        assert np.array_equal(got[1], ops.fma32(odd, b, c))


def test_the_decoder_fuses_independent_fmas_and_keeps_dependent_ones_apart():
    lines = ["v1 = ops.fma32(v10, v11, v12)", "v2 = ops.fma32(v10, v13, v14)",
             "v3 = ops.fma32(v1, v11, v2)",          # reads the two above: starts a new run
             "v4 = ops.fma32(v10, v11, v3)",         # reads v3: alone
             "v5 = (v4 + k1)", "v6 = ops.fma32(v5, v5, v5)"]
    out = decoder._fuse_fma32(lines)
    assert out[0] == "v1, v2, = ops.fma32_rows((v10, v10,), (v11, v13,), (v12, v14,))"
    assert out[1:] == lines[2:]


PTX = """
.version 8.0
.target sm_75
.address_size 64
.visible .entry four(.param .u64 p_out, .param .u64 p_in)
{
    .reg .f32 %f<12>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [p_out];
    ld.param.u64 %rd2, [p_in];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4];
    fma.rn.f32 %f5, %f1, %f2, %f3;
    fma.rn.f32 %f6, %f2, %f3, %f4;
    fma.rn.f32 %f7, %f3, %f4, %f1;
    fma.rn.f32 %f8, %f5, %f6, %f7;
    add.s64 %rd5, %rd1, %rd3;
    st.global.v4.f32 [%rd5], {%f5, %f6, %f7, %f8};
    ret;
}
"""


def test_a_kernel_with_fused_fmas_matches_lone_fma32_lane_for_lane(monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", "interp")   # the interpreter's generated code is what is tested
    g = rng()
    n = 96
    x = _operands(g, 4 * n).reshape(n, 4)
    m = PtxModule(PTX)
    src = m.entries["four"].code.blocks[0]
    mem = DeviceMemory(1 << 20)
    din, dout = mem.alloc(x.nbytes), mem.alloc(x.nbytes)
    mem.write(din, x.tobytes())
    m.launch("four", (1, 1, 1), (n, 1, 1), params=np.array([dout, din], np.uint64).tobytes(), memory=mem)
    assert "fma32_rows" in (src.source or "")
    out = np.frombuffer(mem.read(dout, x.nbytes), np.float32).reshape(n, 4)
    f = ops.fma32
    a, b, c, d = x.T
    e5, e6, e7 = f(a, b, c), f(b, c, d), f(c, d, a)
    ref = np.stack([e5, e6, e7, f(e5, e6, e7)], axis=1)
    assert np.array_equal(out.view(np.uint32), ref.view(np.uint32))
