"""The PTX interpreter's 16-bit tensor-core instruction mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.
{bf16,f16}.f32 (fixtures k_mma_bf16 / k_mma_f16 in tests/data/ptx/src/sm80_fixtures_sm80.cu, which place A, B
and C in the fragments as the PTX ISA lays them out), against numpy: operands rounded to bf16/fp16 by an
independent reference, products and sums exact, D rounded once to float32. The TF32 m16n8k8 form is tested in
test_sim_sm80.py."""
import math

import numpy as np
import pytest
from rawdev.sim.ptx import PtxModule

from _sm80_fixtures import FIXTURES, Dev

RNG = np.random.default_rng()


@pytest.fixture(autouse=True, params=["interp", "auto"])
def engine(request, monkeypatch):
    """Each test on the interpreter and on the native engine (where the fixture kernel lowers: mma and ldmatrix
    run there as warp-level points)."""
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", request.param)
    return request.param


def bf16_rne(x):
    """float32 -> bfloat16 bit patterns, written independently of the simulator: round the value to 8 significant
    bits, ties to even (np.round), then keep the top 16 bits of the float32 pattern (exact after rounding)."""
    x = np.asarray(x, np.float64)
    m, e = np.frexp(x)
    r = np.ldexp(np.round(m * 2.0 ** 8) / 2.0 ** 8, e).astype(np.float32)
    return (r.view(np.uint32) >> 16).astype(np.uint16)


def bf16_value(h):
    return (np.asarray(h, np.uint32) << 16).view(np.float32).astype(np.float64)


def operands(kind, shape, scale=1.0):
    """Random 16-bit operands as (bit patterns, float64 values). Standard normal values keep every exponent in a
    narrow band, so the sum of 16 products and C is exact in float64 and the reference below is exact."""
    x = (RNG.standard_normal(shape) * scale).astype(np.float32)
    if kind == "bf16":
        h = bf16_rne(x)
        return h, bf16_value(h)
    h = x.astype(np.float16)
    return h.view(np.uint16), h.astype(np.float64)


def exact_d(a, b, c):
    """D = A·B + C with every element's sum formed exactly (math.fsum) and rounded once to float32."""
    d = np.empty((16, 8), np.float32)
    for i in range(16):
        for j in range(8):
            d[i, j] = np.float32(math.fsum([*(a[i] * b[:, j]).tolist(), float(c[i, j])]))
    return d


@pytest.mark.parametrize("kind", ["bf16", "f16"])
def test_mma_m16n8k16_matches_an_exact_reference(kind):
    d = Dev()
    for _ in range(3):
        (ha, a), (hb, b) = operands(kind, (16, 16)), operands(kind, (16, 8))
        c = RNG.standard_normal((16, 8)).astype(np.float32)
        out = d.up(np.full((16, 8), np.nan, np.float32))
        d.launch(f"k_mma_{kind}", (1, 1, 1), (32, 1, 1), out, d.up(ha), d.up(hb), d.up(c))
        np.testing.assert_array_equal(d.down(out, (16, 8), np.float32), exact_d(a, b, c))


@pytest.mark.parametrize("kind", ["bf16", "f16"])
def test_mma_m16n8k16_fragment_positions(kind):
    """A single nonzero element of A (or B) selects one row (or column) of the product: every (row, k) and
    (k, col) position of the ISA's layout lands where the ISA says, the low half of a register being the lower
    index."""
    d = Dev()
    one = bf16_rne(np.float32(1.0)) if kind == "bf16" else np.float16(1.0).view(np.uint16)
    _, b = operands(kind, (16, 8))
    hb = bf16_rne(b.astype(np.float32)) if kind == "bf16" else b.astype(np.float16).view(np.uint16)
    zero_c = d.up(np.zeros((16, 8), np.float32))
    for r, k in [(0, 0), (0, 1), (3, 9), (8, 0), (15, 15), (9, 6), (7, 14)]:
        ha = np.zeros((16, 16), np.uint16)
        ha[r, k] = one
        out = d.up(np.full((16, 8), np.nan, np.float32))
        d.launch(f"k_mma_{kind}", (1, 1, 1), (32, 1, 1), out, d.up(ha), d.up(hb), zero_c)
        want = np.zeros((16, 8), np.float32)
        want[r] = b[k]
        np.testing.assert_array_equal(d.down(out, (16, 8), np.float32), want, err_msg=f"A[{r}][{k}]")


def test_mma_m16n8k16_f16_and_bf16_read_their_own_format():
    """The same bit pattern means different numbers: 0x3C00 is 1.0 in fp16 and 2**-7 in bf16."""
    d = Dev()
    ha = np.zeros((16, 16), np.uint16)
    ha[:, 0] = 0x3C00
    hb = np.zeros((16, 8), np.uint16)
    hb[0, :] = 0x3C00
    c = d.up(np.zeros((16, 8), np.float32))
    got = {}
    for kind in ("bf16", "f16"):
        out = d.up(np.full((16, 8), np.nan, np.float32))
        d.launch(f"k_mma_{kind}", (1, 1, 1), (32, 1, 1), out, d.up(ha), d.up(hb), c)
        got[kind] = d.down(out, (16, 8), np.float32)
    np.testing.assert_array_equal(got["f16"], 1.0)
    np.testing.assert_array_equal(got["bf16"], np.float32(2.0 ** -14))


def test_mma_m16n8k16_rounds_the_sum_once_to_float32():
    """1 + 2**-24 + 2**-24: two float32 roundings of a running sum would lose both small terms (ties to even);
    one rounding of the exact sum keeps them (1 + 2**-23)."""
    d = Dev()
    ha = np.zeros((16, 16), np.uint16)
    hb = np.zeros((16, 8), np.uint16)
    ha[:, 0] = ha[:, 1] = bf16_rne(np.float32(2.0 ** -12))
    hb[0, :] = hb[1, :] = bf16_rne(np.float32(2.0 ** -12))
    out = d.up(np.full((16, 8), np.nan, np.float32))
    d.launch("k_mma_bf16", (1, 1, 1), (32, 1, 1), out, d.up(ha), d.up(hb), d.up(np.ones((16, 8), np.float32)))
    np.testing.assert_array_equal(d.down(out, (16, 8), np.float32), np.float32(1 + 2.0 ** -23))


def test_mma_m16n8k16_refuses_a_partial_warp():
    d = Dev()
    z = d.up(np.zeros((16, 16), np.float32))
    with pytest.raises(Exception, match="partial warp"):
        d.launch("k_mma_bf16", (1, 1, 1), (16, 1, 1), z, z, z, z)


@pytest.mark.parametrize("types", ["f32.bf16.f16.f32", "f32.f16.f16.f16", "f16.f16.f16.f32"])
def test_mma_m16n8k16_refuses_forms_it_does_not_model(types):
    """Mixed A/B types and 16-bit accumulators are not modelled: refused with what is supported, not guessed."""
    text = FIXTURES.read_text().replace("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                                        f"mma.sync.aligned.m16n8k16.row.col.{types}")
    with pytest.raises(Exception, match="same A and B type"):   # at decode time, before any launch
        PtxModule(text)
