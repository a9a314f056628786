"""The sm_80 16-bit tensor-core GEMM (gemm_<layout>_{bf16,f16}_128x128, ptx/src/gemm_bf16_sm80.cu) launched by
name on a device of compute capability 8.0+ (the simulator configured as one, or a real GPU that fits): A, B, Y
and bias in bfloat16/float16 storage, float32 accumulation, the result rounded once to the 16-bit type.
References are float64 numpy with an independent round-to-nearest-even; edge tiles, K = 0 and 1, transposed
layouts, padded leading dimensions and misaligned base pointers (the element-by-element copy path)."""
import numpy as np
import pytest

from test_kernels_util import Gpu, cdiv

RNG = np.random.default_rng()
KINDS = ("bf16", "f16")


def bf16_rne(x):
    """float64 values -> bfloat16 bit patterns, rounded to 8 significant bits, ties to even (np.round), written
    independently of rawdev and the simulator (finite values in bfloat16's normal range)."""
    x = np.asarray(x, np.float64)
    m, e = np.frexp(x)
    r = np.ldexp(np.round(m * 2.0 ** 8) / 2.0 ** 8, e).astype(np.float32)
    return (r.view(np.uint32) >> 16).astype(np.uint16)


def to_bits(kind, x):
    """float64 values -> the kind's 16-bit patterns, rounded to nearest even."""
    return bf16_rne(x) if kind == "bf16" else np.asarray(x, np.float64).astype(np.float16).view(np.uint16)


def to_f64(kind, h):
    h = np.asarray(h, np.uint16)
    if kind == "bf16":
        return (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return h.view(np.float16).astype(np.float64)


def shapes(layout, M, N, K, pad):
    """(lda, rows of A, ldb, rows of B) as stored: nt A[M,K] B[N,K]; nn A[M,K] B[K,N]; tn A[K,M] B[K,N]."""
    if layout == "nt":
        return K + pad, M, K + pad, N
    if layout == "nn":
        return K + pad, M, N + pad, K
    return M + pad, K, N + pad, K


def op_matrices(layout, a, b, M, N, K, lda, ldb):
    opA = a[:M * lda].reshape(M, lda)[:, :K] if layout in ("nt", "nn") else a[:K * lda].reshape(K, lda)[:, :M].T
    opB = b[:N * ldb].reshape(N, ldb)[:, :K].T if layout == "nt" else b[:K * ldb].reshape(K, ldb)[:, :N]
    return opA, opB


def run(kind, layout, M, N, K, draw, pad=0, off=0, alpha=1.0, beta=0.0, use_bias=True, act=0, name=None):
    """Launches gemm_<layout>_<kind>_128x128 (or the kernel `name` of the same parameters: the sm_75 float16
    GEMM, tests/test_kernels_gemm_f16_mma_k8.py) on operands drawn by draw(n) (float64, rounded to the kind here);
    returns (Y as float64 [M, N], the exact float64 value before the final rounding, |terms| for error bounds).
    off shifts every base pointer by that many elements (off = 1: not 16-byte aligned); pad widens every leading
    dimension, and the padding columns of Y must come back untouched."""
    from rawdev.runtime import get_device
    g = Gpu(get_device(0))
    lda, arows, ldb, brows = shapes(layout, M, N, K, pad)
    ldy = N + pad
    A, B = to_bits(kind, draw(arows * lda + off)), to_bits(kind, draw(brows * ldb + off))
    bias = to_bits(kind, draw(N)) if use_bias else None
    Y0 = to_bits(kind, draw(M * ldy + off))
    bY = g.put(Y0)
    g.run(name or f"gemm_{layout}_{kind}_128x128", (cdiv(N, 128), cdiv(M, 128)), 256,
          [bY.ptr + 2 * off, g.put(A).ptr + 2 * off, g.put(B).ptr + 2 * off, g.put(bias).ptr if use_bias else 0,
           M, N, K, lda, ldb, ldy, alpha, beta, act])
    out = g.get(bY, M * ldy + off, np.uint16)
    assert np.array_equal(out[:off], Y0[:off]), "wrote before Y"
    got = out[off:].reshape(M, ldy)
    y0 = to_f64(kind, Y0[off:]).reshape(M, ldy)[:, :N]
    if pad:
        assert np.array_equal(got[:, N:], Y0[off:].reshape(M, ldy)[:, N:]), "wrote into Y's padding"
    opA, opB = op_matrices(layout, to_f64(kind, A[off:]), to_f64(kind, B[off:]), M, N, K, lda, ldb)
    b = to_f64(kind, bias) if use_bias else np.zeros(N)
    v = alpha * (opA @ opB) + beta * y0 + b
    terms = abs(alpha) * (np.abs(opA) @ np.abs(opB)) + abs(beta) * np.abs(y0) + np.abs(b)
    if act == 1:
        v = np.maximum(v, 0.0)
    elif act == 2:
        v = 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
    return to_f64(kind, got[:, :N]), v, terms


SIZES = [(130, 70, 37), (128, 128, 64), (7, 200, 1), (257, 33, 5), (1, 1, 16), (40, 136, 96)]


@pytest.mark.cc(">=8.0")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("M,N,K", SIZES)
def test_exact_sums_are_rounded_once_to_nearest_even(kind, layout, M, N, K):
    """Small integers: every product and float32 partial sum is exact, so Y must be exactly the 16-bit
    round-to-nearest-even of the exact result (large enough to need rounding: bf16 keeps 8 bits, fp16 11)."""
    hi = 5 if kind == "bf16" else 17
    y, exact, _ = run(kind, layout, M, N, K, lambda n: RNG.integers(-hi, hi, n).astype(np.float64), beta=1.0,
                      act=1)
    np.testing.assert_array_equal(y, to_f64(kind, to_bits(kind, exact)))


@pytest.mark.cc(">=8.0")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("pad,off", [(3, 0), (0, 1), (8, 0)])
def test_padded_and_misaligned_operands(kind, layout, pad, off):
    """Odd leading dimensions and base pointers off 16-byte alignment take the element-by-element copies, a
    padding of 8 keeps the 16-byte cp.async path with leading dimension != the matrix width."""
    y, exact, _ = run(kind, layout, 75, 131, 45, lambda n: RNG.integers(-5, 5, n).astype(np.float64), pad=pad,
                      off=off)
    np.testing.assert_array_equal(y, to_f64(kind, to_bits(kind, exact)))


@pytest.mark.cc(">=8.0")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("act", [0, 2])
def test_random_operands_with_the_whole_epilogue(kind, layout, act):
    """alpha, beta·Y, bias and gelu-tanh on random operands: the error is the final 16-bit rounding (at most
    2**-8 relative for bf16's 8 significant bits, 2**-11 for fp16's 11) plus float32 accumulation over K and
    __expf in gelu."""
    M, N, K = 150, 90, 200
    y, exact, terms = run(kind, layout, M, N, K, RNG.standard_normal, alpha=0.75, beta=-0.5, act=act)
    half_ulp = 2.0 ** -8 if kind == "bf16" else 2.0 ** -11
    tol = half_ulp * np.abs(exact) + 2e-6 * (1 + K / 16) * terms * (1 + half_ulp) + 1e-30
    bad = np.abs(y - exact) > tol
    assert not bad.any(), (np.argwhere(bad)[:5], y[bad][:5], exact[bad][:5])


@pytest.mark.cc(">=8.0")
@pytest.mark.parametrize("kind", KINDS)
def test_k0_is_the_epilogue_alone_and_no_bias_is_zero(kind):
    y, exact, _ = run(kind, "nt", 20, 30, 0, lambda n: RNG.integers(-300, 300, n).astype(np.float64), beta=2.0)
    np.testing.assert_array_equal(y, to_f64(kind, to_bits(kind, exact)))
    y, exact, _ = run(kind, "nn", 20, 30, 3, lambda n: RNG.integers(-5, 5, n).astype(np.float64), use_bias=False)
    np.testing.assert_array_equal(y, exact)


def test_16bit_kernels_are_never_picked_below_sm80(driver):
    if driver != "sim":
        pytest.skip("the simulated GPU stands in for an sm_75 part here")
    from rawdev.runtime import get_device, kernels
    for kind in KINDS:
        assert not kernels.runs_on(get_device(0), f"gemm_nt_{kind}_128x128")
        with pytest.raises(RuntimeError, match="built for sm_80"):
            kernels.get_kernel(get_device(0), f"gemm_nn_{kind}_128x128")


@pytest.mark.cc(">=8.0")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
def test_batched_kernels_take_one_matrix_per_grid_z(kind, layout):
    """gemm_<layout>_<kind>_128x128_batched: Y[z] = alpha·op(A[z])·op(B[z]) with a batch stride per operand
    (B's 0: one matrix broadcast to every z); exact integer sums rounded once."""
    from rawdev.runtime import get_device
    g = Gpu(get_device(0))
    batch, M, N, K, alpha = 3, 70, 140, 40, 0.5
    lda, arows, ldb, brows = shapes(layout, M, N, K, 0)
    draw = lambda n: RNG.integers(-5, 5, n).astype(np.float64)  # noqa: E731
    A, B = to_bits(kind, draw(batch * arows * lda)), to_bits(kind, draw(brows * ldb))
    bY = g.put(np.full(batch * M * N, 0xFFFF, np.uint16))
    g.run(f"gemm_{layout}_{kind}_128x128_batched", (cdiv(N, 128), cdiv(M, 128), batch), 256,
          [bY, g.put(A), g.put(B), M, N, K, lda, ldb, N, arows * lda, 0, M * N, alpha])
    got = to_f64(kind, g.get(bY, (batch, M, N), np.uint16))
    for z in range(batch):
        opA, opB = op_matrices(layout, to_f64(kind, A[z * arows * lda:(z + 1) * arows * lda]), to_f64(kind, B),
                               M, N, K, lda, ldb)
        np.testing.assert_array_equal(got[z], to_f64(kind, to_bits(kind, alpha * (opA @ opB))), err_msg=f"z={z}")
