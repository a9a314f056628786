"""dropout.ptx: Philox4x32-10 mask matches a numpy Philox written here, reproducible from (seed, offset),
backward through the saved mask."""
import numpy as np
import pytest

from test_kernels_util import Gpu, cdiv

rng = np.random.default_rng(17)
M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Random123 Philox4x32-10 on uint64 arrays holding 32-bit values."""
    c = [np.asarray(x, np.uint64) & MASK32 for x in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0, p1 = np.uint64(M0) * c[0], np.uint64(M1) * c[2]
        hi0, lo0, hi1, lo1 = p0 >> np.uint64(32), p0 & MASK32, p1 >> np.uint64(32), p1 & MASK32
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
        k0, k1 = (k0 + np.uint64(W0)) & MASK32, (k1 + np.uint64(W1)) & MASK32
    return c


def test_philox_known_answer():
    # Random123 kat_vectors: philox4x32_10, counter = key = 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8
    out = philox4x32_10(0, 0, 0, 0, 0, 0)
    assert [int(x) for x in out] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def keep_reference(n, p, seed, offset):
    gi = np.arange((n + 3) // 4, dtype=np.uint64)
    w = philox4x32_10(gi & MASK32, gi >> np.uint64(32), offset & 0xFFFFFFFF, offset >> 32,
                      seed & 0xFFFFFFFF, seed >> 32)
    words = np.stack(w, 1).reshape(-1)[:n]
    u = (words >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
    return u >= p


@pytest.mark.parametrize("n", [1, 7, 1000, 4097])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout(dev, n, p):
    g = Gpu(dev)
    seed, offset = 0x1234_5678_9ABC_DEF0, 3 << 32 | 17
    scale = 1.0 / (1.0 - p)
    x = (rng.standard_normal(n) + 3).astype(np.float32)      # never zero, so dropped elements show
    bx, y, mask = g.put(x), g.poisoned(n), g.poisoned(n, np.uint8)
    grid = min(cdiv(n, 4 * 128), 3)
    g.run("dropout_fwd", grid, 128, [y, mask, bx, n, p, scale, seed, offset])
    keep = keep_reference(n, p, seed, offset)
    got_y, got_mask = g.get(y, n), g.get(mask, n, np.uint8)
    assert np.array_equal(got_mask, keep.astype(np.uint8))
    assert np.array_equal(got_y, np.where(keep, x * np.float32(scale), np.float32(0)))
    if n >= 1000:
        assert abs(keep.mean() - (1 - p)) < 0.05
    # same (seed, offset) -> same mask without saving one; another offset -> another mask
    y2 = g.poisoned(n)
    g.run("dropout_fwd", 1, 64, [y2, 0, bx, n, p, scale, seed, offset])
    assert np.array_equal(g.get(y2, n), got_y)
    if n >= 1000:
        g.run("dropout_fwd", 1, 64, [y2, 0, bx, n, p, scale, seed, offset + 1])
        assert not np.array_equal(g.get(y2, n), got_y)
    dy = rng.standard_normal(n).astype(np.float32)
    bdy, dx1 = g.put(dy), g.poisoned(n)
    g.run("dropout_bwd", grid, 128, [dx1, bdy, mask, n, scale])
    want = np.where(keep, dy * np.float32(scale), np.float32(0))
    assert np.array_equal(g.get(dx1, n), want)
