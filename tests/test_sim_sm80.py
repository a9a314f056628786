"""The PTX interpreter's sm_80 instructions (fixtures: tests/data/ptx/sm80_fixtures_sm80.ptx, built from
tests/data/ptx/src/sm80_fixtures_sm80.cu for compute_80): mma.sync m16n8k8 with TF32 operands, cvt.rna.tf32.f32,
and cp.async whose copies land in shared memory only at the wait that covers their group."""
import numpy as np
import pytest

from _sm80_fixtures import Dev

RNG = np.random.default_rng()


@pytest.fixture(autouse=True, params=["interp", "auto"])
def engine(request, monkeypatch):
    """Each test on the interpreter and on the native engine (where the fixture kernel lowers: mma and ldmatrix
    run there as warp-level points)."""
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", request.param)
    return request.param


def tf32_rna(x):
    """Reference cvt.rna.tf32.f32, written independently: round the float64 value to 11 significant bits,
    ties away from zero."""
    x = np.asarray(x, np.float64)
    m, e = np.frexp(x)                       # x = m * 2**e, 0.5 <= |m| < 1
    r = np.sign(m) * np.floor(np.abs(m) * 2.0 ** 11 + 0.5) / 2.0 ** 11
    return np.ldexp(r, e).astype(np.float32)


def test_cvt_rna_tf32():
    d = Dev()
    x = np.concatenate([RNG.standard_normal(300).astype(np.float32) * 10 ** RNG.uniform(-30, 30, 300),
                        np.float32([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 0.0, -0.0, np.inf, -np.inf])])
    x = x.astype(np.float32)
    y = d.up(np.zeros(x.size, np.uint32))
    d.launch("k_tf32", (2, 1, 1), (256, 1, 1), y, d.up(x), x.size)
    got = d.down(y, x.shape, np.uint32)
    assert (got & 0x1FFF == 0).all()
    np.testing.assert_array_equal(got.view(np.float32), tf32_rna(x))
    nan = d.up(np.zeros(1, np.uint32))
    d.launch("k_tf32", (1, 1, 1), (32, 1, 1), nan, d.up(np.float32([np.nan])), 1)
    assert np.isnan(d.down(nan, (1,), np.uint32).view(np.float32)).all()


def test_mma_m16n8k8_tf32_matches_numpy():
    d = Dev()
    a, b, c = (RNG.standard_normal(s).astype(np.float32) for s in ((16, 8), (8, 8), (16, 8)))
    out = d.up(np.full((16, 8), np.nan, np.float32))
    d.launch("k_mma", (1, 1, 1), (32, 1, 1), out, d.up(a), d.up(b), d.up(c))
    want = tf32_rna(a).astype(np.float64) @ tf32_rna(b).astype(np.float64) + c
    np.testing.assert_allclose(d.down(out, (16, 8), np.float32), want, rtol=1e-6, atol=1e-6)


def test_mma_refuses_a_partial_warp():
    d = Dev()
    z = d.up(np.zeros((16, 8), np.float32))
    with pytest.raises(Exception, match="partial warp"):
        d.launch("k_mma", (1, 1, 1), (16, 1, 1), z, z, z, z)


def test_cp_async_lands_at_the_wait_that_covers_its_group():
    d = Dev()
    n = 128
    src = RNG.standard_normal(2 * n).astype(np.float32)
    before, mid, after = (d.up(np.full(2 * n, np.nan, np.float32)) for _ in range(3))
    d.launch("k_cp_async", (1, 1, 1), (n, 1, 1), before, mid, after, d.up(src), n)
    # nothing has landed before a wait: the shared memory still holds what the threads wrote (-1)
    np.testing.assert_array_equal(d.down(before, (2 * n,), np.float32)[:n], -1.0)
    m = d.down(mid, (2 * n,), np.float32)
    np.testing.assert_array_equal(m[n:], src[:n])          # wait_group 1: the first group landed
    np.testing.assert_array_equal(m[:n], -1.0)             # ... the newest group not yet
    a = d.down(after, (2 * n,), np.float32)
    np.testing.assert_array_equal(a[:n], src[:n])
    second = src[n:].copy()
    second[1::2] = 0.0                                     # src-size 0: zero-filled, the source is not read
    np.testing.assert_array_equal(a[n:], second)


def test_ldmatrix_x4_and_trans():
    """Lane l gets, for matrix i, row l/4 and columns 2(l%4), 2(l%4)+1 packed low-first (PTX ISA ldmatrix);
    .trans gives the same positions of the transposed matrix."""
    d = Dev()
    mats = RNG.integers(0, 2 ** 16, (4, 8, 8)).astype(np.uint16)
    out, out_t = (d.up(np.zeros(128, np.uint32)) for _ in range(2))
    d.launch("k_ldmatrix", (1, 1, 1), (32, 1, 1), out, out_t, d.up(mats.reshape(-1)))
    got, got_t = d.down(out, (32, 4), np.uint32), d.down(out_t, (32, 4), np.uint32)
    for lane in range(32):
        r, c = lane // 4, 2 * (lane % 4)
        for i in range(4):
            assert got[lane, i] == int(mats[i, r, c]) | int(mats[i, r, c + 1]) << 16
            t = mats[i].T
            assert got_t[lane, i] == int(t[r, c]) | int(t[r, c + 1]) << 16
