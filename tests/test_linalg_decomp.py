"""LU, Cholesky, QR and what is built on them (rawdev.ops.decomp, rawdev.ops.solve_inv_det) against numpy.linalg in
float64, on the cpu and the simulated GPU (where the factorizations are device loops), with gradients by central
differences and PyTorch's errors for singular and indefinite input."""
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


TOL = {"cpu": 1e-10, "cuda": 5e-5}


def well_conditioned(r, *shape):
    a = r.standard_normal(shape)
    return a + 2 * np.sqrt(shape[-1]) * np.eye(shape[-1])        # diagonally weighted: modest condition numbers


def spd(r, *shape):
    a = r.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("n", [1, 3, 7, 17])
def test_inv_solve_det_values(n, driver):
    r = rng()
    A = r.standard_normal((3, n, n))                   # general matrices: pivoting matters
    B = r.standard_normal((3, n, 2))
    for dev in ("cpu", "cuda"):
        tol = TOL[dev] * (10 if n > 7 else 1)
        np.testing.assert_allclose(num(LA.inv(T(A, dev))) @ A, np.broadcast_to(np.eye(n), A.shape), atol=tol * 50)
        np.testing.assert_allclose(A @ num(LA.solve(T(A, dev), T(B, dev))), B, atol=tol * 50)
        np.testing.assert_allclose(num(LA.solve(T(A, dev), T(B[..., 0], dev))), np.linalg.solve(A, B[..., :1])[..., 0],
                                   rtol=tol * 100, atol=tol * 100)
        np.testing.assert_allclose(num(LA.det(T(A, dev))), np.linalg.det(A), rtol=tol * 10, atol=tol)
        sign, logabs = LA.slogdet(T(A, dev))
        ns, nl = np.linalg.slogdet(A)
        np.testing.assert_array_equal(num(sign), ns)
        np.testing.assert_allclose(num(logabs), nl, rtol=tol * 10, atol=tol * 10)


def test_solve_broadcasts_and_left_false(driver):
    r = rng()
    A = well_conditioned(r, 4, 4)
    B = r.standard_normal((2, 3, 4, 5))
    Xr = r.standard_normal((2, 5, 4))
    for dev in ("cpu", "cuda"):
        np.testing.assert_allclose(num(LA.solve(T(A, dev), T(B, dev))), np.linalg.solve(A, B), rtol=TOL[dev] * 10,
                                   atol=TOL[dev] * 10)
        np.testing.assert_allclose(num(LA.solve(T(A, dev), T(Xr, dev), left=False)) @ A, Xr, atol=TOL[dev] * 10)


def test_lu_family(driver):
    r = rng()
    A = r.standard_normal((2, 5, 5))
    B = r.standard_normal((2, 5, 3))
    for dev in ("cpu", "cuda"):
        LU, piv = LA.lu_factor(T(A, dev))
        assert piv.dtype is rawdev.int32 and tuple(piv.shape) == (2, 5)
        P, L, U = LA.lu(T(A, dev))
        np.testing.assert_allclose(num(P @ L @ U), A, atol=TOL[dev] * 10)
        assert np.allclose(np.triu(num(L), 1), 0) and np.allclose(np.diagonal(num(L), 0, -2, -1), 1)
        assert np.allclose(np.tril(num(U), -1), 0)
        assert (np.abs(np.tril(num(L), -1)) <= 1 + 1e-6).all()                # partial pivoting bounds L
        np.testing.assert_allclose(num(LA.lu_solve(LU, piv, T(B, dev))), np.linalg.solve(A, B), rtol=TOL[dev] * 100,
                                   atol=TOL[dev] * 100)
        np.testing.assert_allclose(num(LA.lu_solve(LU, piv, T(B, dev), adjoint=True)),
                                   np.linalg.solve(np.swapaxes(A, -1, -2), B), rtol=TOL[dev] * 100, atol=TOL[dev] * 100)
        _, _, info = LA.lu_factor_ex(T(np.zeros((2, 3, 3)), dev))
        assert num(info).tolist() == [1, 1]
    # the cpu and device loops pivot alike
    lu_cpu, piv_cpu = LA.lu_factor(T(A, "cpu"))
    lu_dev, piv_dev = LA.lu_factor(T(A, "cuda"))
    assert piv_cpu.tolist() == piv_dev.cpu().tolist()
    np.testing.assert_allclose(num(lu_dev), num(lu_cpu), atol=1e-4)


def test_cholesky_and_triangular(driver):
    r = rng()
    S = spd(r, 3, 6, 6)
    B = r.standard_normal((3, 6, 2))
    for dev in ("cpu", "cuda"):
        L = LA.cholesky(T(S, dev))
        np.testing.assert_allclose(num(L), np.linalg.cholesky(S), rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        np.testing.assert_allclose(num(LA.cholesky(T(S, dev), upper=True)), np.swapaxes(np.linalg.cholesky(S), -1, -2),
                                   rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        np.testing.assert_allclose(num(rawdev.cholesky_solve(T(B, dev), L)), np.linalg.solve(S, B),
                                   rtol=TOL[dev] * 100, atol=TOL[dev] * 100)
        np.testing.assert_allclose(num(rawdev.cholesky_inverse(L[0])), np.linalg.inv(S[0]), rtol=TOL[dev] * 100,
                                   atol=TOL[dev] * 100)
        low = np.tril(well_conditioned(r, 5, 5))
        up = np.triu(well_conditioned(r, 5, 5))
        rhs = r.standard_normal((5, 3))
        junk = r.standard_normal((5, 5))          # the other triangle must not be read
        np.testing.assert_allclose(num(LA.solve_triangular(T(low + np.triu(junk, 1), dev), T(rhs, dev), upper=False)),
                                   np.linalg.solve(low, rhs), rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        np.testing.assert_allclose(num(LA.solve_triangular(T(up + np.tril(junk, -1), dev), T(rhs, dev), upper=True)),
                                   np.linalg.solve(up, rhs), rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        unit = np.tril(low, -1) + np.eye(5)
        np.testing.assert_allclose(num(LA.solve_triangular(T(low, dev), T(rhs, dev), upper=False, unitriangular=True)),
                                   np.linalg.solve(unit, rhs), rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        with pytest.raises(RuntimeError, match=r"not positive-definite \(the leading minor of order 2 is not"):
            LA.cholesky(T([[1.0, 2.0], [2.0, 1.0]], dev))
        L_, info = LA.cholesky_ex(T(np.stack([np.eye(2), [[1.0, 2.0], [2.0, 1.0]]]), dev))
        assert num(info).tolist() == [0, 2]
    with pytest.raises(RuntimeError, match="The diagonal element 2 is zero, the inversion could not be completed"):
        LA.inv(rawdev.tensor([[1.0, 2.0], [2.0, 4.0]]))


def test_triangular_solves_of_empty_and_batched_operands(driver):
    """Order 0 and an empty batch give empty results (PyTorch's shapes); a batched solve whose right side is a
    strided view (left=False transposes it) matches LAPACK on every matrix of the batch."""
    r = rng()
    for dev in ("cpu", "cuda"):
        x = LA.solve_triangular(T(np.zeros((0, 0)), dev), T(np.zeros((0, 3)), dev), upper=False)
        assert tuple(x.shape) == (0, 3)
        assert tuple(LA.solve_triangular(T(np.zeros((0, 4, 4)), dev), T(np.zeros((0, 4, 2)), dev),
                                         upper=True).shape) == (0, 4, 2)
        assert tuple(LA.cholesky(T(np.zeros((0, 0)), dev)).shape) == (0, 0)
        low = np.tril(well_conditioned(r, 4, 9, 9))
        rhs = r.standard_normal((4, 2, 9))
        for upper in (False, True):
            a = np.swapaxes(low, -1, -2) if upper else low
            x = LA.solve_triangular(T(a, dev), T(rhs, dev), upper=upper, left=False)    # X A = B
            np.testing.assert_allclose(num(x), np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2),
                                                                            np.swapaxes(rhs, -1, -2)), -1, -2),
                                       rtol=TOL[dev] * 10, atol=TOL[dev] * 10)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5)])
def test_qr_matches_lapack(shape, driver):
    r = rng()
    A = r.standard_normal((2,) + shape)
    for dev in ("cpu", "cuda"):
        for mode in ("reduced", "complete"):
            Q, R = LA.qr(T(A, dev), mode=mode)
            for b in range(2):
                nq, nr = np.linalg.qr(A[b], mode=mode)
                np.testing.assert_allclose(num(Q[b]), nq, rtol=TOL[dev] * 10, atol=TOL[dev] * 10)   # LAPACK's signs
                np.testing.assert_allclose(num(R[b]), nr, rtol=TOL[dev] * 10, atol=TOL[dev] * 10)
        Q0, R0 = LA.qr(T(A, dev), mode="r")
        assert Q0.numel() == 0 and tuple(R0.shape) == (2, min(shape), shape[1])
    Z = np.zeros((3, 2))                        # a zero column: the reflector is the identity (tau = 0)
    Z[:, 1] = [1.0, 2.0, 2.0]
    Qz, Rz = LA.qr(T(Z, "cuda"))
    np.testing.assert_allclose(num(Qz @ Rz), Z, atol=1e-6)


def test_lstsq_and_matrix_power(driver):
    r = rng()
    A, B = r.standard_normal((6, 3)), r.standard_normal((6, 2))
    A2 = well_conditioned(r, 3, 3)
    for dev in ("cpu", "cuda"):
        np.testing.assert_allclose(num(LA.lstsq(T(A, dev), T(B, dev)).solution), np.linalg.lstsq(A, B, rcond=None)[0],
                                   rtol=TOL[dev] * 100, atol=TOL[dev] * 100)
        for k in (0, 1, 2, 5, -1, -3):
            np.testing.assert_allclose(num(LA.matrix_power(T(A2, dev), k)), np.linalg.matrix_power(A2, k),
                                       rtol=TOL[dev] * 100, atol=TOL[dev] * 100)


def _check_grad(dev, f_ours, f_ref, *arrays, which=(0,)):
    ts = [T(a, dev, grad=i in which) for i, a in enumerate(arrays)]
    y = f_ours(*ts)
    g = rng().standard_normal(tuple(y.shape))
    (y * T(g, dev)).sum().backward()
    tol = 1e-6 if dev == "cpu" else 2e-3
    for i in which:
        def f(a, i=i):
            args = list(arrays)
            args[i] = a
            return f_ref(*args)
        np.testing.assert_allclose(num(ts[i].grad), numeric_grad(f, arrays[i], g), rtol=tol, atol=tol)


def test_decomposition_gradients(driver):
    r = rng()
    A = well_conditioned(r, 2, 4, 4)
    B = r.standard_normal((2, 4, 2))
    S = spd(r, 4, 4)
    low = np.tril(well_conditioned(r, 4, 4))
    tall = r.standard_normal((5, 3))
    for dev in ("cpu", "cuda"):
        _check_grad(dev, LA.inv, np.linalg.inv, A)
        _check_grad(dev, LA.solve, np.linalg.solve, A, B, which=(0, 1))
        _check_grad(dev, LA.det, np.linalg.det, A)
        _check_grad(dev, lambda a: LA.slogdet(a).logabsdet, lambda a: np.linalg.slogdet(a)[1], A)
        # cholesky's input is taken as symmetric: differentiate through (S + Sᵀ)/2 on both sides
        _check_grad(dev, lambda s: LA.cholesky(0.5 * (s + s.mT)), lambda s: np.linalg.cholesky(0.5 * (s + s.T)), S)
        _check_grad(dev, lambda a, b: LA.solve_triangular(a, b, upper=False),
                    lambda a, b: np.linalg.solve(np.tril(a), b), low, B[0], which=(0, 1))
        _check_grad(dev, lambda a: LA.qr(a).Q, lambda a: np.linalg.qr(a)[0], tall)
        _check_grad(dev, lambda a: LA.qr(a).R, lambda a: np.linalg.qr(a)[1], tall)
