"""eigh/eigvalsh, svd/svdvals, pinv, matrix_rank and the spectral matrix norms against numpy.linalg in float64, on
the cpu (LAPACK) and the simulated GPU (one-sided Jacobi on the device), with gradients of sign-independent
functions (values, projectors onto leading vectors) by central differences."""
import numpy as np
import pytest
import rawdev
from rawdev import linalg as LA

from _refs import numeric_grad, rng


def T(a, dev, grad=False):
    dt = rawdev.float64 if dev == "cpu" else rawdev.float32
    t = rawdev.tensor(np.asarray(a), dtype=dt, device=dev)
    return t.requires_grad_(True) if grad else t


def num(t):
    return t.detach().cpu().numpy().astype(np.float64)


TOL = {"cpu": 1e-10, "cuda": 3e-5}


@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (5, 5), (1, 4), (9, 8)])
def test_svd_values_and_factors(shape, driver):
    r = rng()
    A = r.standard_normal((2,) + shape)
    k = min(shape)
    for dev in ("cpu", "cuda"):
        U, S, Vh = LA.svd(T(A, dev), full_matrices=False)
        assert tuple(U.shape) == (2, shape[0], k) and tuple(Vh.shape) == (2, k, shape[1])
        np.testing.assert_allclose(num(S), np.linalg.svd(A, compute_uv=False), rtol=TOL[dev], atol=TOL[dev])
        np.testing.assert_allclose(num(U) @ (num(S)[..., None] * num(Vh)), A, atol=TOL[dev] * 10)
        np.testing.assert_allclose(np.swapaxes(num(U), -1, -2) @ num(U), np.broadcast_to(np.eye(k), (2, k, k)),
                                   atol=TOL[dev] * 10)
        np.testing.assert_allclose(num(Vh) @ np.swapaxes(num(Vh), -1, -2), np.broadcast_to(np.eye(k), (2, k, k)),
                                   atol=TOL[dev] * 10)
        np.testing.assert_allclose(num(LA.svdvals(T(A, dev))), np.linalg.svd(A, compute_uv=False), rtol=TOL[dev],
                                   atol=TOL[dev])
    U, S, V = rawdev.svd(T(A, "cpu"))
    np.testing.assert_allclose(num(U) @ (num(S)[..., None] * np.swapaxes(num(V), -1, -2)), A, atol=1e-10)


def test_rank_deficient_svd_keeps_orthonormal_factors(driver):
    r = rng()
    B = r.standard_normal((5, 2))
    A = B @ r.standard_normal((2, 4))          # rank 2
    for dev in ("cpu", "cuda"):
        U, S, Vh = LA.svd(T(A, dev), full_matrices=False)
        assert num(S)[2:].max() < 1e-5
        np.testing.assert_allclose(num(U).T @ num(U), np.eye(4), atol=1e-5)
        assert int(LA.matrix_rank(T(A, dev)).item()) == 2
        np.testing.assert_allclose(num(LA.pinv(T(A, dev))), np.linalg.pinv(A), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_eigh(n, driver):
    r = rng()
    X = r.standard_normal((3, n, n))
    S = X + np.swapaxes(X, -1, -2)
    for dev in ("cpu", "cuda"):
        w, V = LA.eigh(T(S, dev))
        np.testing.assert_allclose(num(w), np.linalg.eigvalsh(S), rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        np.testing.assert_allclose(num(V) @ (num(w)[..., None] * np.swapaxes(num(V), -1, -2)), S, atol=TOL[dev] * 20)
        np.testing.assert_allclose(np.swapaxes(num(V), -1, -2) @ num(V), np.broadcast_to(np.eye(n), (3, n, n)),
                                   atol=TOL[dev] * 10)
        junk = np.triu(r.standard_normal((3, n, n)), 1)          # UPLO='L' never reads the upper triangle
        np.testing.assert_allclose(num(LA.eigvalsh(T(np.tril(S) + junk, dev))), np.linalg.eigvalsh(S),
                                   rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        np.testing.assert_allclose(num(LA.eigvalsh(T(np.triu(S) + np.swapaxes(junk, -1, -2), dev), UPLO="U")),
                                   np.linalg.eigvalsh(S), rtol=TOL[dev] * 10, atol=TOL[dev] * 10)


# A float32 matrix (the lower triangle) whose Jacobi iteration reached off ≈ 1.045e-7 after five sweeps and then
# alternated between two values just above the former fixed threshold of 1e-7 for all 40 sweeps
_AT_THE_FLOOR = [
    [-2.779625],
    [-1.2553856, -1.4159306],
    [0.6957245, 0.44890606, 1.7053086],
    [0.85643816, 2.0898225, 2.1959474, 3.9989452],
    [-1.7600429, -0.5182561, -1.3095559, 0.33385184, -2.1304452],
    [1.4782615, -1.2934748, 0.524668, -0.28222752, 0.047823656, -1.5396509],
    [0.8246872, -1.5127951, 1.8134832, 0.96926016, -1.6313814, 0.5989993, -1.1490824],
    [-1.4532628, -0.77821493, -1.2479681, -0.7507651, -0.6092882, 1.2387903, -0.533775, 3.0785434],
]


def test_jacobi_stops_at_the_rounding_floor(driver):
    if driver != "sim":
        pytest.skip("counts the simulated driver's host reads (one per sweep)")
    from rawdev import sim
    S = np.zeros((8, 8), np.float32)
    for i, row in enumerate(_AT_THE_FLOOR):
        S[i, :i + 1] = row
        S[:i + 1, i] = row
    t = rawdev.tensor(S, device="cuda")
    rawdev.cuda.synchronize()
    before = sim.stats()["calls"].get("cuMemcpyDtoHAsync", 0)
    w = LA.eigvalsh(t)
    reads = sim.stats()["calls"].get("cuMemcpyDtoHAsync", 0) - before
    assert reads <= 12, f"{reads} host reads: the iteration did not stop at the rounding floor"
    np.testing.assert_allclose(num(w), np.linalg.eigvalsh(S.astype(np.float64)), rtol=TOL["cuda"] * 10,
                               atol=TOL["cuda"] * 10)


def test_spectral_matrix_norms(driver):
    r = rng()
    A = r.standard_normal((2, 4, 3))
    for dev in ("cpu", "cuda"):
        for o in (2, -2, "nuc"):
            np.testing.assert_allclose(num(LA.matrix_norm(T(A, dev), o)), np.linalg.norm(A, o, axis=(-2, -1)),
                                       rtol=TOL[dev] * 10)
        assert tuple(LA.matrix_norm(T(A, dev), "nuc", dim=(0, 2), keepdim=True).shape) == (1, 4, 1)


def _grad_check(dev, ours, ref, x):
    t = T(x, dev, grad=True)
    y = ours(t)
    g = rng().standard_normal(tuple(y.shape))
    (y * T(g, dev)).sum().backward()
    tol = 1e-6 if dev == "cpu" else 3e-3
    np.testing.assert_allclose(num(t.grad), numeric_grad(ref, x, g), rtol=tol, atol=tol)


def test_svd_and_eigh_gradients(driver):
    r = rng()
    A = r.standard_normal((5, 3))
    X = r.standard_normal((4, 4))
    S = X + X.T

    def proj(u, k=2):
        return u[..., :k] @ np.swapaxes(u[..., :k], -1, -2)

    for dev in ("cpu", "cuda"):
        _grad_check(dev, lambda a: LA.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False), A)
        _grad_check(dev, lambda a: (lambda U: U[:, :2] @ U[:, :2].mT)(LA.svd(a, full_matrices=False).U),
                    lambda a: proj(np.linalg.svd(a, full_matrices=False)[0]), A)
        _grad_check(dev, lambda a: (lambda Vh: Vh[:2].mT @ Vh[:2])(LA.svd(a, full_matrices=False).Vh),
                    lambda a: proj(np.linalg.svd(a, full_matrices=False)[2].T), A)

        def sym(s):
            return 0.5 * (s + s.mT)
        _grad_check(dev, lambda s: LA.eigvalsh(sym(s)), lambda s: np.linalg.eigvalsh(0.5 * (s + s.T)), S)
        _grad_check(dev, lambda s: (lambda V: V[:, -2:] @ V[:, -2:].mT)(LA.eigh(sym(s)).eigenvectors),
                    lambda s: (lambda V: V[:, -2:] @ V[:, -2:].T)(np.linalg.eigh(0.5 * (s + s.T))[1]), S)
        _grad_check(dev, lambda a: LA.pinv(a), lambda a: np.linalg.pinv(a), A)


def test_svd_lowrank_and_pca_lowrank(driver):
    r = rng()
    A = r.standard_normal((60, 4)) @ r.standard_normal((4, 15)) + 1e-3 * r.standard_normal((60, 15))
    for dev in ("cpu", "cuda"):
        rawdev.manual_seed(1)
        U, S, V = rawdev.svd_lowrank(T(A, dev), q=4, niter=3)
        np.testing.assert_allclose(num(S), np.linalg.svd(A, compute_uv=False)[:4], rtol=1e-4)
        np.testing.assert_allclose(num(U) @ np.diag(num(S)) @ num(V).T, A, atol=1e-2)
        U, S, V = rawdev.pca_lowrank(T(A, dev), q=4)
        Ac = A - A.mean(0, keepdims=True)
        np.testing.assert_allclose(num(S), np.linalg.svd(Ac, compute_uv=False)[:4], rtol=1e-4)
    with pytest.raises(ValueError, match="must be non-negative integer and not greater than"):
        rawdev.pca_lowrank(rawdev.zeros(3, 2), q=5)
