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


def run_case(dev, layout, tile, M, N, K, pad=0, off=0, beta=0.0, use_bias=True, act=0):
    g = Gpu(dev)
    if layout == "nt":
        lda, arows, ldb, brows = K + pad, M, K + pad, N
    elif layout == "nn":
        lda, arows, ldb, brows = K + pad, M, N + pad, K
    else:
        lda, arows, ldb, brows = M + pad, K, N + pad, K
    ldy = N + pad
    A = rng.standard_normal(arows * lda + off).astype(np.float32)
    B = rng.standard_normal(brows * ldb + off).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32) if use_bias else None
    Y0 = rng.standard_normal(M * ldy).astype(np.float32) if beta != 0 else np.full(M * ldy, np.nan, np.float32)
    bA, bB, bY = g.put(A), g.put(B), g.put(Y0)
    alpha = 0.75
    g.run(f"gemm_{layout}_f32_{tile}x{tile}", (cdiv(N, tile), cdiv(M, tile)), TILES[tile],
          [bY, bA.ptr + 4 * off, bB.ptr + 4 * off, g.put(bias).ptr if use_bias else 0,
           M, N, K, lda, ldb, ldy, alpha, beta, act])
    out = g.get(bY, M * ldy)
    ref = ref_gemm(layout, A[off:], B[off:], M, N, K, lda, ldb, Y0, ldy, bias, alpha, beta, act)
    got = out.reshape(M, ldy)
    assert not np.isnan(got[:, :N]).any(), "unwritten outputs"
    if pad:   # padding columns are never written
        assert np.array_equal(got[:, N:], Y0.reshape(M, ldy)[:, N:], equal_nan=True)
    assert relerr(got[:, :N], ref) < 1e-4


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


def test_gemm_k_zero(dev):
    run_case(dev, "nt", 32, 5, 6, 0, beta=2.0)
