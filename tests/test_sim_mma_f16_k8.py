"""The PTX interpreter's sm_75 tensor-core instruction mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 (fixture
k_mma_f16_k8 in tests/data/ptx/src/sm75_fixtures.cu, which places A, B and C in the fragments as the PTX ISA lays
them out), against numpy: operands rounded to fp16 by numpy, products and sums exact, D rounded once to float32
(the rule of the m16n8k16 forms, tests/test_sim_mma.py)."""
import math
from pathlib import Path

import numpy as np
import pytest
from rawdev.sim.ptx import PtxModule

from _sm80_fixtures import Dev

FIXTURES = Path(__file__).resolve().parent / "data" / "ptx" / "sm75_fixtures.ptx"
RNG = np.random.default_rng()


@pytest.fixture(autouse=True, params=["interp", "auto"])
def engine(request, monkeypatch):
    """Each test on the interpreter and on the native engine (where the fixture kernel lowers: mma and ldmatrix
    run there as warp-level points)."""
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", request.param)
    return request.param


def operands(shape, scale=1.0):
    """Random fp16 operands as (bit patterns, float64 values). Standard normal values keep the exponents in a
    narrow band, so the sum of 8 products and C is exact in float64 as well as under math.fsum."""
    h = (RNG.standard_normal(shape) * scale).astype(np.float32).astype(np.float16)
    return h.view(np.uint16), h.astype(np.float64)


def exact_d(a, b, c):
    """D = A·B + C with every element's sum formed exactly (math.fsum) and rounded once to float32."""
    d = np.empty((16, 8), np.float32)
    for i in range(16):
        for j in range(8):
            d[i, j] = np.float32(math.fsum([*(a[i] * b[:, j]).tolist(), float(c[i, j])]))
    return d


def run(d, ha, hb, c):
    out = d.up(np.full((16, 8), np.nan, np.float32))
    d.launch("k_mma_f16_k8", (1, 1, 1), (32, 1, 1), out, d.up(ha), d.up(hb), d.up(np.asarray(c, np.float32)))
    return d.down(out, (16, 8), np.float32)


def test_mma_m16n8k8_f16_matches_an_exact_reference():
    d = Dev(FIXTURES)
    for scale in (1.0, 1e-3, 300.0):
        (ha, a), (hb, b) = operands((16, 8), scale), operands((8, 8))
        c = RNG.standard_normal((16, 8)).astype(np.float32)
        np.testing.assert_array_equal(run(d, ha, hb, c), exact_d(a, b, c))


def test_mma_m16n8k8_f16_fragment_positions():
    """A single 1.0 in A (or B) selects one row of B (or one column of A): every (row, k) and (k, col) position
    of the ISA's layout lands where the ISA says, the low half of a register being the lower index."""
    d = Dev(FIXTURES)
    one = np.float16(1.0).view(np.uint16)
    (ha_r, a), (hb_r, b) = operands((16, 8)), operands((8, 8))
    zero = np.zeros((16, 8), np.float32)
    for r in range(16):
        for k in range(8):
            if (r * 8 + k) % 5 and (r, k) not in ((0, 0), (15, 7)):
                continue   # a spread of positions, the corners included, to keep the test short
            ha = np.zeros((16, 8), np.uint16)
            ha[r, k] = one
            want = np.zeros((16, 8), np.float32)
            want[r] = b[k]
            np.testing.assert_array_equal(run(d, ha, hb_r, zero), want, err_msg=f"A[{r}][{k}]")
    for k in range(8):
        for n in range(8):
            hb = np.zeros((8, 8), np.uint16)
            hb[k, n] = one
            want = np.zeros((16, 8), np.float32)
            want[:, n] = a[:, k]
            np.testing.assert_array_equal(run(d, ha_r, hb, zero), want, err_msg=f"B[{k}][{n}]")


def test_mma_m16n8k8_f16_reads_fp16_subnormals_and_infinities():
    """fp16 subnormals are values, not zeros (products exact in float64); inf times a nonzero is inf, 0 * inf
    is NaN, as IEEE."""
    d = Dev(FIXTURES)
    ha = np.zeros((16, 8), np.uint16)
    hb = np.zeros((8, 8), np.uint16)
    ha[0, 0] = 0x0001                                     # 2**-24, the smallest fp16 subnormal
    hb[0, :] = np.float16(2.0 ** 10).view(np.uint16)
    ha[1, 1] = np.float16(np.inf).view(np.uint16)
    hb[1, 0] = np.float16(2.0).view(np.uint16)
    got = run(d, ha, hb, np.zeros((16, 8)))
    np.testing.assert_array_equal(got[0], np.float32(2.0 ** -14))
    assert got[1, 0] == np.inf and np.isnan(got[1, 1:]).all()


def test_mma_m16n8k8_f16_rounds_the_sum_once_to_float32():
    """1 + 2**-24 + 2**-24 (each 2**-12 · 2**-12): a float32 running sum would lose both small terms (ties to
    even); one rounding of the exact sum keeps them (1 + 2**-23)."""
    d = Dev(FIXTURES)
    ha = np.zeros((16, 8), np.uint16)
    hb = np.zeros((8, 8), np.uint16)
    ha[:, :2] = np.float16(2.0 ** -12).view(np.uint16)
    hb[:2, :] = np.float16(2.0 ** -12).view(np.uint16)
    np.testing.assert_array_equal(run(d, ha, hb, np.ones((16, 8))), np.float32(1 + 2.0 ** -23))


def test_mma_m16n8k8_f16_refuses_a_partial_warp():
    d = Dev(FIXTURES)
    z = d.up(np.zeros((16, 16), np.float32))
    with pytest.raises(Exception, match="partial warp"):
        d.launch("k_mma_f16_k8", (1, 1, 1), (16, 1, 1), z, z, z, z)


@pytest.mark.parametrize("form", ["m16n8k8.row.col.f32.bf16.bf16.f32", "m16n8k8.row.col.f16.f16.f16.f32",
                                  "m16n8k8.row.col.f32.f16.f16.f16"])
def test_mma_m16n8k8_refuses_forms_it_does_not_model(form):
    """bf16 m16n8k8 (sm_80) and 16-bit accumulators are not modelled: refused at decode time, not guessed."""
    text = FIXTURES.read_text().replace("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
                                        f"mma.sync.aligned.{form}")
    with pytest.raises(Exception, match="same A and B type"):
        PtxModule(text)


def test_mma_m16n8k8_f16_checks_its_register_counts():
    """The k8 form takes 2 A registers and 1 B register; the k16 counts are refused with the expected ones."""
    text = FIXTURES.read_text().replace("{%r1,%r2}, {%r3}", "{%r1,%r2,%r1,%r2}, {%r3,%r3}")
    with pytest.raises(Exception, match=r"\{2 b32\}, \{1 b32\}"):
        PtxModule(text)
