"""gemm.ptx on the simulator (and a real GPU when present): all layouts x tiles, edge tiles, size 1,
alpha/beta/bias/activation epilogue, vectorized and scalar (odd leading dimension, misaligned) paths."""
import numpy as np
import pytest

from test_kernels_util import Gpu, cdiv, relerr

rng = np.random.default_rng(3)
TILES = {128: 256, 64: 256, 32: 64}


def ref_gemm(layout, A, B, M, N, K, lda, ldb, Y0, ldy, bias, alpha, beta, act):
    A, B = A.astype(np.float64), B.astype(np.float64)
    opA = A[:M * lda].reshape(M, lda)[:, :K] if layout in ("nt", "nn") else A[:K * lda].reshape(K, lda)[:, :M].T
    opB = B[:N * ldb].reshape(N, ldb)[:, :K].T if layout == "nt" else B[:K * ldb].reshape(K, ldb)[:, :N]
    v = alpha * (opA @ opB)
    if beta != 0:
        v += beta * Y0[:M * ldy].reshape(M, ldy)[:, :N].astype(np.float64)
    if bias is not None:
        v += bias.astype(np.float64)
    if act == 1:
        v = np.maximum(v, 0)
    elif act == 2:
        v = 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
    return v


def _lds(layout, M, N, K, pad=0):
    """(lda, rows of A, ldb, rows of B, ldy) of the layout's operands in memory, leading dims padded by pad."""
    if layout == "nt":
        return K + pad, M, K + pad, N, N + pad
    if layout == "nn":
        return K + pad, M, N + pad, K, N + pad
    return M + pad, K, N + pad, K, N + pad


def _rounding_bound(layout, A, B, M, N, K, lda, ldb, Y0, ldy, bias, alpha, beta):
    """1e-6 plus 8 float32 roundings of what each output adds up in absolute value: the error bound of an output
    whose sum cancels (its relative error can be large while every term was rounded right)."""
    mag = ref_gemm(layout, np.abs(A), np.abs(B), M, N, K, lda, ldb, np.abs(Y0), ldy,
                   None if bias is None else np.abs(bias), abs(alpha), abs(beta), 0)
    return 1e-6 + 8 * np.finfo(np.float32).eps * mag


def run_case(dev, layout, tile, M, N, K, pad=0, off=0, beta=0.0, use_bias=True, act=0, yoff=0, variant=""):
    g = Gpu(dev)
    lda, arows, ldb, brows, ldy = _lds(layout, M, N, K, pad)
    A = rng.standard_normal(arows * lda + off).astype(np.float32)
    B = rng.standard_normal(brows * ldb + off).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32) if use_bias else None
    Y0 = rng.standard_normal(M * ldy).astype(np.float32) if beta != 0 else np.full(M * ldy, np.nan, np.float32)
    Yall = np.concatenate([np.full(yoff, 7.0, np.float32), Y0])     # yoff > 0: Y's base not 16-byte aligned
    bA, bB, bY = g.put(A), g.put(B), g.put(Yall)
    alpha = 0.75
    g.run(f"gemm_{layout}_f32_{tile}x{tile}{variant}", (cdiv(N, tile), cdiv(M, tile)), TILES[tile],
          [bY.ptr + 4 * yoff, bA.ptr + 4 * off, bB.ptr + 4 * off, g.put(bias).ptr if use_bias else 0,
           M, N, K, lda, ldb, ldy, alpha, beta, act])
    full = g.get(bY, M * ldy + yoff)
    assert (full[:yoff] == 7.0).all(), "wrote before Y"
    out = full[yoff:]
    ref = ref_gemm(layout, A[off:], B[off:], M, N, K, lda, ldb, Y0, ldy, bias, alpha, beta, act)
    got = out.reshape(M, ldy)
    assert not np.isnan(got[:, :N]).any(), "unwritten outputs"
    if pad:   # padding columns are never written
        assert np.array_equal(got[:, N:], Y0.reshape(M, ldy)[:, N:], equal_nan=True)
    if relerr(got[:, :N], ref) >= 1e-4:   # an output that cancels (K = 1: a·b + bias ≈ 0) is bounded by its terms
        err = np.abs(got[:, :N].astype(np.float64) - ref)
        bound = _rounding_bound(layout, A[off:], B[off:], M, N, K, lda, ldb, Y0, ldy, bias, alpha, beta)
        assert (err <= bound).all(), (relerr(got[:, :N], ref), err.max())


@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("tile", [32, 64, 128])
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (37, 29, 13), (130, 67, 20)])
def test_gemm_shapes(dev, layout, tile, M, N, K):
    run_case(dev, layout, tile, M, N, K, act=1)


@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("tile", [32, 128])
def test_gemm_vector_path_beta_gelu(dev, layout, tile):
    # leading dims multiples of 4 and aligned bases: the float4 loads; beta=1 accumulates (dW += ...)
    run_case(dev, layout, tile, 36, 40, 24, beta=1.0, act=2)


@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
def test_gemm_scalar_paths(dev, layout):
    run_case(dev, layout, 32, 33, 35, 19, pad=3, beta=0.5, use_bias=False)      # odd leading dims
    run_case(dev, layout, 32, 20, 24, 16, off=1, beta=-1.25, act=0)              # misaligned bases


@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("tile", [32, 64, 128])
def test_gemm_epilogue_float4_and_scalar_stores(dev, layout, tile):
    # float4 stores where a run of 4 columns is inside N and Y is 16-byte aligned, scalar ones otherwise:
    run_case(dev, layout, tile, 37, 38, 20, pad=2, beta=0.5, act=2)    # ldy 40: the last run crosses N
    run_case(dev, layout, tile, 21, 44, 12, yoff=1, beta=1.0)          # Y's base misaligned: scalar stores


@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("variant", ["", "_grid", "_bk16"])
def test_gemm_128_output_maps_and_bench_variants(dev, layout, variant):
    # 97 x 130 puts real outputs in every warp's 64x32 tile of the first block and edge tiles in both directions;
    # K = 37 is not a multiple of BK (8 or 16). _grid (thread-grid output map) and _bk16 are the bench-only
    # variants of the 128x128 tile and keep its contract.
    run_case(dev, layout, 128, 97, 130, 37, beta=0.5, act=1, variant=variant)
    run_case(dev, layout, 128, 37, 38, 20, pad=2, yoff=1, act=2, variant=variant)   # scalar stores


def test_gemm_k_zero(dev):
    run_case(dev, "nt", 32, 5, 6, 0, beta=2.0)


# ---- split-K (skinny outputs, long K): partials in a [splits, M, N] workspace + a deterministic reduce
def run_splitk(dev, layout, M, N, K, splits, pad=0, off=0, beta=0.0, use_bias=True, act=0, alpha=0.75):
    """One forced split-K product through rawdev.ops.cuda._gemm_raw; returns (result [M, N], reference)."""
    from rawdev.ops import cuda as C
    g = Gpu(dev)
    lda, arows, ldb, brows, ldy = _lds(layout, M, N, K, pad)
    A = rng.standard_normal(arows * lda + off).astype(np.float32)
    B = rng.standard_normal(brows * ldb + off).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32) if use_bias else None
    Y0 = rng.standard_normal(M * ldy).astype(np.float32) if beta != 0 else np.full(M * ldy, np.nan, np.float32)
    bA, bB, bY = g.put(A), g.put(B), g.put(Y0)
    C._gemm_raw(dev, layout, bY.ptr, bA.ptr + 4 * off, bB.ptr + 4 * off, M, N, K, lda, ldb, ldy, alpha, beta,
                g.put(bias).ptr if use_bias else 0, act, splits=splits)
    got = g.get(bY, M * ldy).reshape(M, ldy)
    if pad:   # padding columns are never written
        assert np.array_equal(got[:, N:], Y0.reshape(M, ldy)[:, N:], equal_nan=True)
    ref = ref_gemm(layout, A[off:], B[off:], M, N, K, lda, ldb, Y0, ldy, bias, alpha, beta, act)
    return got[:, :N], ref, (A, B, bias, Y0)


@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("M,N,K,splits", [(10, 10, 1000, 4), (10, 64, 777, 7), (33, 35, 301, 3), (1, 1, 64, 2)])
def test_gemm_splitk_shapes(dev, layout, M, N, K, splits):
    # odd M/N (edge tiles), K not a multiple of the slice or of BK, bias + relu epilogue, NaN-poisoned Y
    got, ref, (A, B, bias, Y0) = run_splitk(dev, layout, M, N, K, splits, act=1)
    assert not np.isnan(got).any(), "unwritten outputs"
    # elementwise, against the sum of the magnitudes each output adds up: a 1x1 product is one dot product of K
    # random terms, whose result can be far smaller than its terms (relative to the result it fails on some seeds)
    lda, _, ldb, _, ldy = _lds(layout, M, N, K)
    err = np.abs(got.astype(np.float64) - ref)
    assert (err <= _rounding_bound(layout, A, B, M, N, K, lda, ldb, Y0, ldy, bias, 0.75, 0.0)).all(), err.max()
    assert relerr(got, ref) < 1e-5 or M * N == 1


@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
def test_gemm_splitk_epilogues(dev, layout):
    got, ref, _ = run_splitk(dev, layout, 12, 40, 520, 5, beta=1.0, act=2)                       # beta + gelu
    assert relerr(got, ref) < 1e-5
    got, ref, _ = run_splitk(dev, layout, 9, 13, 263, 4, pad=3, beta=-0.5, use_bias=False)      # odd lds, scalar
    assert relerr(got, ref) < 1e-5
    got, ref, _ = run_splitk(dev, layout, 8, 20, 300, 3, off=1, alpha=-2.0)                     # misaligned bases
    assert relerr(got, ref) < 1e-5


def test_gemm_splitk_more_splits_than_k(dev):
    # slices past K contribute zeros (the slice length rounds up to 16, so some z get no K at all)
    got, ref, _ = run_splitk(dev, "nt", 5, 7, 20, 8)
    assert relerr(got, ref) < 1e-5


def test_gemm_splitk_sums_slices_in_order(dev):
    """Bit-exact against a float32 model: integer operands make every slice product exact, the slices are
    summed before scaling, then alpha*s + bias rounds once (fma); two runs are bit-equal."""
    M, N, K, splits = 3, 5, 96, 3   # kchunk 32
    from rawdev.ops import cuda as C
    g = Gpu(dev)
    A = rng.integers(-8, 8, (M, K)).astype(np.float32)   # small integers: every slice product is exact in fp32
    B = rng.integers(-8, 8, (N, K)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    bA, bB = g.put(A), g.put(B)
    outs = []
    for _ in range(2):
        bY = g.poisoned(M * N)
        C._gemm_raw(dev, "nt", bY.ptr, bA.ptr, bB.ptr, M, N, K, K, K, N, 0.1, 0.0, g.put(bias).ptr, 0, splits=splits)
        outs.append(g.get(bY, (M, N)))
    assert np.array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32))
    s = np.zeros((M, N), np.float32)
    for z in range(splits):
        s = s + (A[:, 32 * z:32 * z + 32].astype(np.float64) @ B[:, 32 * z:32 * z + 32].T).astype(np.float32)
    model = (np.float64(np.float32(0.1)) * s.astype(np.float64) + bias).astype(np.float32)   # fmaf rounds once
    assert np.array_equal(outs[0], model)


def test_gemm_splitk_heuristic():
    from rawdev.ops.cuda import _splitk
    assert _splitk(10, 10, 4096, 132) == (16, 256)        # 1 tile: as many slices as 256-long K allows
    assert _splitk(10, 64, 4096, 132)[0] == 16             # 2 tiles
    s, kc = _splitk(10, 64, 4096, 16)                      # the simulator's 16 SMs: 2*16/2 = 16 slices
    assert s == 16 and kc * s >= 4096 and kc % 16 == 0
    assert _splitk(10, 64, 300, 132) == (1, 300)           # short K: one launch
    assert _splitk(512, 512, 4096, 132) == (1, 4096)       # enough tiles already
    s, kc = _splitk(7, 9, 5000, 132)
    assert 2 <= s <= 32 and kc % 16 == 0 and (s - 1) * kc < 5000 <= s * kc


def test_matmul_uses_splitk_and_matches_cpu(driver):
    """rawdev.matmul / F.linear on cuda at a skinny shape take the split-K path and agree with cpu; deterministic."""
    import rawdev
    import rawdev.nn.functional as F
    from rawdev.ops import cuda as C
    assert C._splitk(10, 24, 2048, 16)[0] > 1
    C.set_poison(True)
    try:
        x = rawdev.tensor(rng.standard_normal((10, 2048)).astype(np.float32))
        w = rawdev.tensor(rng.standard_normal((24, 2048)).astype(np.float32))
        b = rawdev.tensor(rng.standard_normal(24).astype(np.float32))
        ref = x.numpy().astype(np.float64) @ w.numpy().astype(np.float64).T + b.numpy()
        xc, wc, bc = x.cuda(), w.cuda(), b.cuda()
        y1 = F.linear(xc, wc, bc).cpu().numpy()
        y2 = F.linear(xc, wc, bc).cpu().numpy()
        assert np.array_equal(y1.view(np.uint32), y2.view(np.uint32))
        assert relerr(y1, ref) < 1e-5
        assert relerr(y1, F.linear(x, w, b).numpy()) < 1e-5
        m = rawdev.matmul(wc, xc.t()).cpu().numpy()   # [24, 10] from a transposed view (nn/tn layouts)
        assert relerr(m, ref.T - b.numpy()[:, None]) < 1e-5
    finally:
        C.set_poison(False)
