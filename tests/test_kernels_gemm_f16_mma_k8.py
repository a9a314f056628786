"""The sm_75 float16 tensor-core GEMM (gemm_<layout>_f16_sm75[_batched], ptx/src/gemm_f16_sm75.cu: mma.sync
m16n8k8, plain global loads) launched by name. Built for compute_75, it loads on every device rawdev runs on,
so these run (the `driver` fixture) on the default simulated sm_75 part and on a real GPU when there is one.
Same parameters and checks as the sm_80 kernels' tests (tests/test_kernels_gemm_16bit.py, whose launcher this
reuses): float64 references with an independent round-to-nearest-even, edge tiles, K = 0, 1 and odd multiples
of 8, transposed layouts, padded leading dimensions and misaligned base pointers (the element-by-element copy
path)."""
import numpy as np
import pytest

from test_kernels_gemm_16bit import op_matrices, run, shapes, to_bits, to_f64
from test_kernels_util import Gpu, cdiv

RNG = np.random.default_rng()
LAYOUTS = ("nt", "nn", "tn")
SIZES = [(130, 70, 37), (128, 128, 64), (7, 200, 1), (257, 33, 5), (1, 1, 16), (40, 136, 24), (1, 77, 8)]


def ints(hi):
    return lambda n: RNG.integers(-hi, hi, n).astype(np.float64)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", SIZES)
def test_exact_sums_are_rounded_once_to_nearest_even(driver, layout, M, N, K):
    """Small integers: every product and float32 partial sum is exact, so Y must be exactly the fp16
    round-to-nearest-even of the exact result (large enough to need rounding: fp16 keeps 11 bits)."""
    y, exact, _ = run("f16", layout, M, N, K, ints(17), beta=1.0, act=1, name=f"gemm_{layout}_f16_sm75")
    np.testing.assert_array_equal(y, to_f64("f16", to_bits("f16", exact)))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("pad,off", [(3, 0), (0, 1), (8, 0)])
def test_padded_and_misaligned_operands(driver, layout, pad, off):
    """Odd leading dimensions and base pointers off 16-byte alignment take the element-by-element copies, a
    padding of 8 keeps the 16-byte loads with leading dimension != the matrix width."""
    y, exact, _ = run("f16", layout, 75, 131, 45, ints(5), pad=pad, off=off, name=f"gemm_{layout}_f16_sm75")
    np.testing.assert_array_equal(y, to_f64("f16", to_bits("f16", exact)))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("act", [0, 2])
def test_random_operands_with_the_whole_epilogue(driver, layout, act):
    """alpha, beta·Y, bias and gelu-tanh on random operands: the error is the final fp16 rounding (2**-11
    relative) plus float32 accumulation over K and __expf in gelu."""
    M, N, K = 150, 90, 200
    y, exact, terms = run("f16", layout, M, N, K, RNG.standard_normal, alpha=0.75, beta=-0.5, act=act,
                          name=f"gemm_{layout}_f16_sm75")
    half_ulp = 2.0 ** -11
    tol = half_ulp * np.abs(exact) + 2e-6 * (1 + K / 16) * terms * (1 + half_ulp) + 1e-30
    bad = np.abs(y - exact) > tol
    assert not bad.any(), (np.argwhere(bad)[:5], y[bad][:5], exact[bad][:5])


def test_k0_is_the_epilogue_alone_and_no_bias_is_zero(driver):
    y, exact, _ = run("f16", "nt", 20, 30, 0, ints(300), beta=2.0, name="gemm_nt_f16_sm75")
    np.testing.assert_array_equal(y, to_f64("f16", to_bits("f16", exact)))
    y, exact, _ = run("f16", "nn", 20, 30, 3, ints(5), use_bias=False, name="gemm_nn_f16_sm75")
    np.testing.assert_array_equal(y, exact)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_batched_kernels_take_one_matrix_per_grid_z(driver, layout):
    """gemm_<layout>_f16_sm75_batched: Y[z] = alpha·op(A[z])·op(B[z]) with a batch stride per operand (B's 0:
    one matrix broadcast to every z); exact integer sums rounded once."""
    from rawdev.runtime import get_device
    g = Gpu(get_device(0))
    batch, M, N, K, alpha = 3, 70, 140, 40, 0.5
    lda, arows, ldb, brows = shapes(layout, M, N, K, 0)
    A, B = to_bits("f16", ints(17)(batch * arows * lda)), to_bits("f16", ints(17)(brows * ldb))
    bY = g.put(np.full(batch * M * N, 0xFFFF, np.uint16))
    g.run(f"gemm_{layout}_f16_sm75_batched", (cdiv(N, 128), cdiv(M, 128), batch), 256,
          [bY, g.put(A), g.put(B), M, N, K, lda, ldb, N, arows * lda, 0, M * N, alpha])
    got = to_f64("f16", g.get(bY, (batch, M, N), np.uint16))
    for z in range(batch):
        opA, opB = op_matrices(layout, to_f64("f16", A[z * arows * lda:(z + 1) * arows * lda]), to_f64("f16", B),
                               M, N, K, lda, ldb)
        np.testing.assert_array_equal(got[z], to_f64("f16", to_bits("f16", alpha * (opA @ opB))), err_msg=f"z={z}")


def test_the_sm75_kernels_load_below_sm80(driver):
    if driver != "sim":
        pytest.skip("the simulated GPU stands in for an sm_75 part here")
    from rawdev.runtime import get_device, kernels
    for layout in LAYOUTS:
        for suffix in ("", "_batched"):
            assert kernels.runs_on(get_device(0), f"gemm_{layout}_f16_sm75{suffix}")
    assert not kernels.runs_on(get_device(0), "gemm_nt_bf16_sm75")   # no bfloat16 mma on sm_75
