"""Inverse hyperbolic functions, the in-place forms of aliases and comparisons, more products (trace, inner, vdot,
addr, addbmm, multi_dot), matrix functions (matrix_exp, cond, solve_ex, tensorinv, tensorsolve), window
functions and small tensor queries: float64 NumPy references on the cpu, the simulated GPU against them."""
import math
import warnings

import numpy as np
import pytest
import rawdev

from _refs import numeric_grad, rng


def num(t):
    return t.detach().cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("name,ref,dref,lo,hi", [
    ("asinh", np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), -30.0, 30.0),
    ("acosh", np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), 1.05, 40.0),
    ("atanh", np.arctanh, lambda x: 1 / (1 - x * x), -0.95, 0.95),
])
def test_inverse_hyperbolic_values_gradients_and_double_backward(driver, name, ref, dref, lo, hi):
    r = rng()
    x = r.uniform(lo, hi, (7, 5))
    g = r.standard_normal((7, 5))
    t = rawdev.tensor(x, dtype=rawdev.float64, requires_grad=True)
    y = getattr(rawdev, name)(t)
    np.testing.assert_allclose(num(y), ref(x), rtol=1e-14, atol=1e-14)
    (gx,) = rawdev.autograd.grad(y, t, rawdev.tensor(g), create_graph=True)
    np.testing.assert_allclose(num(gx), g * dref(x), rtol=1e-12, atol=1e-14)
    (ggx,) = rawdev.autograd.grad(gx.sum(), t)        # d/dx of sum(g · f'(x)) against central differences
    np.testing.assert_allclose(num(ggx), numeric_grad(lambda a: g * dref(a), x, np.ones_like(x)), rtol=1e-5,
                               atol=1e-7)
    # the alias and the in-place forms
    arc = getattr(rawdev, "arc" + name[1:])
    np.testing.assert_array_equal(num(arc(t)), num(y))
    z = rawdev.tensor(x, dtype=rawdev.float64)
    assert getattr(z, "arc" + name[1:] + "_")() is z
    np.testing.assert_allclose(num(z), ref(x), rtol=1e-14, atol=1e-14)
    # the simulated GPU's float32 kernels, on a non-contiguous input, forward and backward
    xc = rawdev.tensor(x.T.copy(), dtype=rawdev.float32, device="cuda").t().requires_grad_(True)
    yc = getattr(xc, name)()
    np.testing.assert_allclose(num(yc), ref(x), rtol=3e-6, atol=3e-6)
    yc.backward(rawdev.tensor(g, dtype=rawdev.float32, device="cuda"))
    np.testing.assert_allclose(num(xc.grad), g * dref(x), rtol=2e-5, atol=1e-6)


def test_inplace_forms_of_aliases_comparisons_and_bitwise(driver):
    r = rng()
    x = r.uniform(-0.99, 0.99, 9)
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(x, dtype=rawdev.float32, device=dev)
        for meth, ref in (("arccos_", np.arccos), ("arcsin_", np.arcsin), ("arctan_", np.arctan),
                          ("negative_", np.negative), ("absolute_", np.abs), ("fix_", np.trunc)):
            z = t.clone()
            assert getattr(z, meth)() is z
            np.testing.assert_allclose(num(z), ref(x.astype(np.float32)), rtol=2e-6, atol=2e-7)
        for meth, op in (("divide_", np.divide), ("multiply_", np.multiply), ("subtract_", np.subtract),
                         ("true_divide_", np.divide), ("arctan2_", np.arctan2), ("copysign_", np.copysign),
                         ("hypot_", np.hypot)):
            z = t.clone()
            getattr(z, meth)(rawdev.full((9,), -0.75, device=dev))
            np.testing.assert_allclose(num(z), op(x, -0.75), rtol=2e-6, atol=2e-7)
        for meth, op in (("eq_", np.equal), ("ne_", np.not_equal), ("lt_", np.less), ("le_", np.less_equal),
                         ("gt_", np.greater), ("ge_", np.greater_equal), ("greater_", np.greater),
                         ("less_equal_", np.less_equal), ("not_equal_", np.not_equal)):
            z = t.clone()
            getattr(z, meth)(0.1)
            assert z.dtype == rawdev.float32                  # the 0/1 result is written in x's dtype
            np.testing.assert_array_equal(num(z), op(x.astype(np.float32), np.float32(0.1)).astype(np.float64))
        k = rawdev.tensor([5, 6, -7], device=dev)
        k.bitwise_and_(6)
        assert num(k).tolist() == [4, 6, 0]
        k.bitwise_or_(1)
        k.bitwise_xor_(3)
        k.bitwise_not_()
        assert num(k).tolist() == [~((4 | 1) ^ 3), ~((6 | 1) ^ 3), ~((0 | 1) ^ 3)]
        b = rawdev.tensor([True, False], device=dev)
        b.logical_not_()
        assert num(b).tolist() == [0, 1]
        w = rawdev.ones(2, 3, device=dev)
        assert w.swapaxes_(0, 1) is w and tuple(w.shape) == (3, 2)


def test_trace_inner_vdot_addr_addbmm(driver):
    r = rng()
    a, b = r.standard_normal((4, 6)), r.standard_normal((3, 6))
    v1, v2 = r.standard_normal(4), r.standard_normal(5)
    inp = r.standard_normal((4, 5))
    b1, b2 = r.standard_normal((3, 4, 2)), r.standard_normal((3, 2, 5))
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 2e-5)):
        def T(x, dt=dt, dev=dev):
            return rawdev.tensor(x, dtype=dt, device=dev)
        assert abs(float(rawdev.trace(T(a))) - np.trace(a)) < tol * 10
        assert T(a).trace().shape == ()
        np.testing.assert_allclose(num(rawdev.inner(T(a), T(b))), a @ b.T, rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.inner(T(np.array(2.0)), T(v1))), 2 * v1, rtol=tol)
        assert abs(float(rawdev.vdot(T(v1), T(v1))) - v1 @ v1) < tol * 10
        np.testing.assert_allclose(num(rawdev.addr(T(inp), T(v1), T(v2), beta=0.5, alpha=2.0)),
                                   0.5 * inp + 2 * np.outer(v1, v2), rtol=tol, atol=tol)
        nan_in = T(np.full((4, 5), np.nan))
        np.testing.assert_allclose(num(rawdev.addr(nan_in, T(v1), T(v2), beta=0)), np.outer(v1, v2), rtol=tol)
        np.testing.assert_allclose(num(rawdev.addbmm(T(inp), T(b1), T(b2), alpha=-1.0)),
                                   inp - np.einsum("bij,bjk->ik", b1, b2), rtol=tol, atol=tol)
        z = T(inp)
        assert z.addr_(T(v1), T(v2)) is z
        np.testing.assert_allclose(num(z), inp + np.outer(v1, v2), rtol=tol, atol=tol)
        z = T(inp)
        z.addmm_(T(r.standard_normal((4, 2))[:, :0].reshape(4, 0)), T(np.zeros((0, 5))))   # empty inner dim: unchanged
        np.testing.assert_allclose(num(z), inp, rtol=tol)
    t = rawdev.tensor(a, dtype=rawdev.float64, requires_grad=True)
    rawdev.inner(t, rawdev.tensor(b)).sum().backward()
    np.testing.assert_allclose(num(t.grad), np.tile(b.sum(0), (4, 1)), rtol=1e-12, atol=1e-14)
    t.grad = None
    t.trace().backward()
    np.testing.assert_array_equal(num(t.grad), np.eye(4, 6))
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 3"):
        rawdev.ones(2, 2, 2).trace()
    with pytest.raises(RuntimeError, match=r"inner\(\) the last dimension must match"):
        rawdev.inner(rawdev.ones(2, 3), rawdev.ones(2, 4))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        rawdev.vdot(rawdev.ones(2), rawdev.ones(3))


def test_multi_dot_and_chain_matmul(driver):
    r = rng()
    x, A, B, y = r.standard_normal(3), r.standard_normal((3, 4)), r.standard_normal((4, 5)), r.standard_normal(5)
    for dev in ("cpu", "cuda"):
        def T(a, dev=dev):
            return rawdev.tensor(a, dtype=rawdev.float32, device=dev)
        out = rawdev.linalg.multi_dot([T(x), T(A), T(B), T(y)])
        assert out.shape == () and abs(float(out) - x @ A @ B @ y) < 1e-4 * max(1, abs(x @ A @ B @ y))
        np.testing.assert_allclose(num(rawdev.linalg.multi_dot([T(A), T(B)])), A @ B, rtol=1e-5, atol=1e-5)
        assert tuple(rawdev.linalg.multi_dot([T(x), T(A)]).shape) == (4,)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            np.testing.assert_allclose(num(rawdev.chain_matmul(T(A), T(B))), A @ B, rtol=1e-5, atol=1e-5)
        assert any("chain_matmul is deprecated" in str(m.message) for m in w)
    with pytest.raises(RuntimeError, match="expected at least 2 tensors but got 1"):
        rawdev.linalg.multi_dot([rawdev.ones(2, 2)])
    with pytest.raises(RuntimeError, match="multi_dot"):
        rawdev.linalg.multi_dot([rawdev.ones(2, 2), rawdev.ones(2), rawdev.ones(2, 2)])


def _expm_taylor(a, terms=80):
    out, term = np.eye(a.shape[-1]), np.eye(a.shape[-1])
    for k in range(1, terms):
        term = term @ a / k
        out = out + term
    return out


def test_matrix_exp_small_large_batched_and_its_gradient(driver):
    r = rng()
    small = r.standard_normal((2, 4, 4)) * 0.3                  # no scaling: the Padé approximant alone
    s = r.standard_normal((5, 5))
    sym = (s + s.T) * 3.0                                       # norm ~ 30: several squarings
    lam, V = np.linalg.eigh(sym)
    want_sym = (V * np.exp(lam)) @ V.T
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 3e-5)):
        got = rawdev.linalg.matrix_exp(rawdev.tensor(small, dtype=dt, device=dev))
        np.testing.assert_allclose(num(got), np.stack([_expm_taylor(m) for m in small]), rtol=tol, atol=tol)
        got = rawdev.tensor(sym, dtype=dt, device=dev).matrix_exp()
        assert np.max(np.abs(num(got) - want_sym)) / np.max(np.abs(want_sym)) < tol * 100
    z = rawdev.linalg.matrix_exp(rawdev.zeros(3, 3))
    np.testing.assert_array_equal(num(z), np.eye(3))
    a = r.standard_normal((3, 3)) * 0.8
    g = r.standard_normal((3, 3))
    t = rawdev.tensor(a, dtype=rawdev.float64, requires_grad=True)
    (rawdev.linalg.matrix_exp(t) * rawdev.tensor(g)).sum().backward()
    np.testing.assert_allclose(num(t.grad), numeric_grad(_expm_taylor, a, g), rtol=1e-6, atol=1e-8)


def test_cond_solve_ex_tensorinv_tensorsolve_and_linalg_error(driver):
    r = rng()
    a = r.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-10), ("cuda", rawdev.float32, 2e-4)):
        t = rawdev.tensor(a, dtype=dt, device=dev)
        for p in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf):
            want = np.linalg.cond(a, p)
            np.testing.assert_allclose(num(rawdev.linalg.cond(t, p)), want, rtol=tol)
        b = r.standard_normal((2, 4))
        res, info = rawdev.linalg.solve_ex(t, rawdev.tensor(b, dtype=dt, device=dev))
        np.testing.assert_allclose(num(res), np.linalg.solve(a, b[..., None])[..., 0], rtol=tol, atol=tol)
        assert num(info).tolist() == [0, 0]
        sing = rawdev.tensor(np.stack([a[0], np.zeros((4, 4))]), dtype=dt, device=dev)
        _, info = rawdev.linalg.solve_ex(sing, rawdev.ones(2, 4, dtype=dt, device=dev))
        assert num(info)[0] == 0 and num(info)[1] > 0
        with pytest.raises(rawdev.linalg.LinAlgError, match="singular"):
            rawdev.linalg.solve_ex(sing, rawdev.ones(2, 4, dtype=dt, device=dev), check_errors=True)
        with pytest.raises(rawdev.linalg.LinAlgError, match="singular"):
            rawdev.linalg.inv(sing)
    m = r.standard_normal((6, 2, 3)) + 0.0
    m = (m.reshape(6, 6) + 6 * np.eye(6)).reshape(6, 2, 3)
    inv = rawdev.linalg.tensorinv(rawdev.tensor(m), ind=1)
    assert tuple(inv.shape) == (2, 3, 6)
    np.testing.assert_allclose(np.tensordot(num(inv), m, 1).reshape(6, 6), np.eye(6), atol=1e-5)
    A = r.standard_normal((2, 3, 6)) + 0.0
    A = (A.reshape(6, 6) + 6 * np.eye(6)).reshape(2, 3, 6)
    B = r.standard_normal((2, 3))
    X = rawdev.linalg.tensorsolve(rawdev.tensor(A, dtype=rawdev.float64), rawdev.tensor(B, dtype=rawdev.float64))
    np.testing.assert_allclose(num(X), np.linalg.tensorsolve(A, B), rtol=1e-10, atol=1e-12)
    assert issubclass(rawdev.linalg.LinAlgError, RuntimeError)


@pytest.mark.parametrize("name,sym", [("hann_window", np.hanning), ("hamming_window", np.hamming),
                                      ("bartlett_window", np.bartlett), ("blackman_window", np.blackman),
                                      ("kaiser_window", lambda n: np.kaiser(n, 12.0))])
def test_windows_match_numpys_symmetric_and_periodic_forms(driver, name, sym):
    fn = getattr(rawdev, name)
    for n in (1, 2, 7, 16):
        np.testing.assert_allclose(num(fn(n, periodic=False, dtype=rawdev.float64)), sym(n), atol=1e-14)
        np.testing.assert_allclose(num(fn(n, dtype=rawdev.float64)), sym(n + 1)[:n] if n > 1 else [1.0],
                                   atol=1e-14)
    w = fn(8, device="cuda")
    assert w.is_cuda and w.dtype == rawdev.float32
    np.testing.assert_allclose(num(w), sym(9)[:8], atol=1e-7)
    assert fn(0).shape == (0,)
    with pytest.raises(RuntimeError, match=f"{name} expects floating point dtypes"):
        fn(4, dtype=rawdev.int64)
    np.testing.assert_allclose(num(rawdev.hamming_window(5, False, 0.5, 0.5, dtype=rawdev.float64)), np.hanning(5),
                               atol=1e-15)


def test_small_tensor_queries_and_constructors(driver):
    x = rawdev.tensor([-1.0, 0.0, 2.0, math.nan, -math.inf])
    got = num(rawdev.angle(x))
    np.testing.assert_allclose(got[[0, 1, 2, 4]], [math.pi, 0, 0, math.pi], rtol=1e-7)
    assert math.isnan(got[3])
    assert rawdev.angle(rawdev.tensor([-3, 4])).dtype == rawdev.float32
    assert rawdev.tensor([1]).is_signed() and not rawdev.tensor([1], dtype=rawdev.uint8).is_signed()
    assert num(rawdev.isreal(rawdev.ones(3, device="cuda"))).all()
    y = rawdev.ones(2, 3, dtype=rawdev.float64, device="cuda")
    assert tuple(y.new(4, 5).shape) == (4, 5) and y.new(4).dtype == rawdev.float64 and y.new(4).is_cuda
    assert num(y.new([1, 2])).tolist() == [1.0, 2.0] and tuple(y.new().shape) == (0,)
    assert tuple(y.new(rawdev.Size([3])).shape) == (3,)
    a, b = rawdev.split_with_sizes(rawdev.arange(5), [2, 3])
    assert num(a).tolist() == [0, 1] and num(b).tolist() == [2, 3, 4]
    assert [num(c).tolist() for c in rawdev.unsafe_chunk(rawdev.arange(5), 2)] == [[0, 1, 2], [3, 4]]
    assert [len(c) for c in rawdev.arange(7).unsafe_split(3)] == [3, 3, 1]
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 5"):
        rawdev.split_with_sizes(rawdev.arange(5), [2, 2])
    assert y.ndimension() == 2 and y.is_same_size(rawdev.zeros(2, 3)) and not y.is_same_size(rawdev.zeros(3, 2))
    assert not y.is_inference() and not y.is_neg()
    np.testing.assert_array_equal(num(rawdev.tensor([-2.0, 0.3, 1.0]).hardshrink(0.5)), [-2.0, 0.0, 1.0])
