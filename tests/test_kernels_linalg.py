"""linalg.ptx: cholesky_f32 and trsm_f32 against float64 LAPACK, through the ops that launch them
(linalg.cholesky, cholesky_ex, solve_triangular), with every op output poisoned (NaN) before its kernel writes it,
orders on both sides of a warp (31/32/33/65) and past the block's 256 threads, batches, right-hand sides across
blocks, transposed (strided) triangles read without a copy, 16-bit operands, and the interpreter, the native
engine and the two compared byte for byte (RAWDEV_SIM_ENGINE=diff)."""
import numpy as np
import pytest
import rawdev
import rawdev.ops.cuda as cuda_ops
from rawdev import linalg as LA

from _refs import rng

# float32 factorization/substitution error grows with the order and the condition number; the matrices below are
# well conditioned (condition numbers of a few tens), so a few hundred ulps of float32 bound every element
RTOL = 2e-5


@pytest.fixture(params=["auto", "interp", "diff"])
def engine(request, driver, monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_ENGINE", request.param)
    cuda_ops.set_poison(True)
    yield request.param
    cuda_ops.set_poison(False)


def spd(r, *shape):
    a = r.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) / shape[-1] + np.eye(shape[-1])


def lower(r, *shape):
    n = shape[-1]
    return np.tril(r.standard_normal(shape)) / np.sqrt(n) + 2 * np.eye(n)


def cu(a, dt=rawdev.float32):
    return rawdev.tensor(np.asarray(a), dtype=dt, device="cuda")


def host(t):
    return t.float().cpu().numpy().astype(np.float64)


def close(got, want, rtol=RTOL):
    """Relative to the largest element of the reference (zeros in the factor have no relative error of their own)."""
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    assert err <= rtol, f"max error {err:.3g} relative to the largest element (limit {rtol:g})"


@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 65])
def test_cholesky_matches_lapack(engine, n):
    if engine != "auto" and n > 33:
        pytest.skip("the interpreter's pass over the larger orders adds nothing the smaller ones do not test")
    r = rng()
    S = spd(r, 3, n, n)
    S_in = S + np.triu(r.standard_normal((3, n, n)), 1)          # the upper triangle must not be read
    L = LA.cholesky(cu(S_in))
    got = host(L)
    assert (np.triu(got, 1) == 0).all()
    close(got, np.linalg.cholesky(S))


def test_cholesky_past_one_block_of_threads(engine):
    """n = 300: each of the block's 256 threads owns more than one row of a column."""
    if engine != "auto":
        pytest.skip("native engine only: the interpreter would take minutes")
    r = rng()
    S = spd(r, 1, 300, 300)
    close(host(LA.cholesky(cu(S))), np.linalg.cholesky(S), rtol=1e-4)


def test_cholesky_info_names_the_first_bad_pivot(engine):
    bad = np.stack([np.eye(3), [[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                    [[4.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]], np.full((3, 3), np.nan)])
    L, info = LA.cholesky_ex(cu(bad))
    assert info.cpu().tolist() == [0, 2, 3, 1]
    assert info.dtype is rawdev.int32
    np.testing.assert_array_equal(host(L)[0], np.eye(3))
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): The factorization could not be completed because "
                                           r"the input is not positive-definite \(the leading minor of order 2"):
        LA.cholesky(cu(bad))


@pytest.mark.parametrize("n,k", [(1, 1), (5, 9), (32, 3), (33, 1), (65, 2)])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve_matches_lapack(engine, n, k, upper, unit):
    if engine != "auto" and n > 33:
        pytest.skip("the interpreter's pass over the larger orders adds nothing the smaller ones do not test")
    r = rng()
    low = lower(r, 2, n, n)
    tri = np.swapaxes(low, -1, -2) if upper else low
    junk = r.standard_normal((2, n, n))
    full = tri + (np.tril(junk, -1) if upper else np.triu(junk, 1))     # the other triangle must not be read
    rhs = r.standard_normal((2, n, k))
    ref_tri = tri.copy()
    if unit:
        ref_tri[:, np.arange(n), np.arange(n)] = 1.0
    want = np.linalg.solve(ref_tri, rhs)
    got = LA.solve_triangular(cu(full), cu(rhs), upper=upper, unitriangular=unit)
    close(host(got), want, rtol=RTOL * (20 if unit else 1))   # a unit diagonal is not the well-conditioned one
    # the same triangle as a transposed view of its mirror (strides (n*n, 1, n)): read in place
    mirror = cu(np.swapaxes(full, -1, -2)).transpose(-2, -1)
    assert n == 1 or not mirror.is_contiguous()
    got_t = LA.solve_triangular(mirror, cu(rhs), upper=upper, unitriangular=unit)
    np.testing.assert_array_equal(host(got_t), host(got))


def test_solves_and_factor_in_16_bit(engine):
    """float16/bfloat16 operands: the float32 kernel, the result rounded once to the operands' dtype."""
    if engine != "auto":
        pytest.skip("the float32 kernels are the ones the other tests check on every engine")
    r = rng()
    S = spd(r, 2, 6, 6)
    low = lower(r, 2, 6, 6)
    rhs = r.standard_normal((2, 6, 2))
    for dt, tol in ((rawdev.float16, 2e-3), (rawdev.bfloat16, 1.6e-2)):
        Sd = cu(S, dt)
        L = LA.cholesky(Sd)
        assert L.dtype is dt
        close(host(L), np.linalg.cholesky(host(Sd)), rtol=tol)
        lo, b = cu(low, dt), cu(rhs, dt)
        X = LA.solve_triangular(lo, b, upper=False)
        assert X.dtype is dt
        close(host(X), np.linalg.solve(host(lo), host(b)), rtol=tol)


def test_gradients_through_the_kernels_match_the_cpu(engine):
    """cholesky_solve's backward runs the kernels again (the gradient formulas are triangular solves)."""
    if engine != "auto":
        pytest.skip("the kernels' values are checked on every engine above")
    r = rng()
    S = spd(r, 5, 5)
    B = r.standard_normal((5, 2))
    grads = {}
    for dev in ("cpu", "cuda"):
        dt = rawdev.float64 if dev == "cpu" else rawdev.float32
        s = rawdev.tensor(S, dtype=dt, device=dev, requires_grad=True)
        b = rawdev.tensor(B, dtype=dt, device=dev, requires_grad=True)
        L = LA.cholesky(s)
        rawdev.cholesky_solve(b, L).pow(2).sum().backward()
        grads[dev] = (s.grad.cpu().numpy().astype(np.float64), b.grad.cpu().numpy().astype(np.float64))
    for got, want in zip(grads["cuda"], grads["cpu"]):
        close(got, want, rtol=1e-4)


def test_the_kernels_are_clean_under_the_sanitizer(driver):
    """initcheck, racecheck and synccheck (the interpreter runs sanitized launches): the factor reads only what A
    or an earlier column wrote, the solve only rows its own lane wrote, and every barrier is reached by the block."""
    if driver != "sim":
        pytest.skip("the sanitizer is the simulator's")
    import rawdev.sim as sim
    r = rng()
    S = spd(r, 2, 40, 40)
    with sim.sanitize("initcheck", "racecheck", "synccheck") as findings:
        L = LA.cholesky(cu(S))
        x = LA.solve_triangular(L, cu(r.standard_normal((2, 40, 3))), upper=False)
        y = LA.solve_triangular(L.mT, x, upper=True)
        rawdev.cuda.synchronize()
    assert findings == [], findings
    assert np.isfinite(host(y)).all()
