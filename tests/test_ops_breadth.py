"""The composed ops of gamma.py, pointwise_composed.py, structure.py and order_stats.py against float64 NumPy/`math`
references: on the cpu (float64 and float32) and the simulated GPU (float32, compared with the cpu), with
non-contiguous inputs and gradients."""
import itertools
import math
import warnings

import numpy as np
import pytest
import rawdev

from _refs import numeric_grad, rng

NAN = float("nan")


def on(x, dev, dt=None, grad=False):
    t = rawdev.tensor(np.asarray(x), device=dev)
    if dt is not None:
        t = t.to(dtype=dt)
    return t.requires_grad_(grad) if grad else t


def num(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------ gamma family and erfinv
def _digamma_ref(v):
    """ψ by the recurrence to x ≥ 30 and the asymptotic series (float64, independent of the implementation)."""
    acc = 0.0
    while v < 30:
        acc -= 1.0 / v
        v += 1.0
    inv2 = 1.0 / (v * v)
    return acc + math.log(v) - 0.5 / v - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))


def _polygamma_ref(n, v, terms=200000):
    """ψ⁽ⁿ⁾ as (−1)ⁿ⁺¹ n! Σ (v + k)^−(n+1) summed directly with an Euler–Maclaurin tail."""
    k = np.arange(terms, dtype=np.float64)
    s = np.sum((v + k) ** -(n + 1))
    z = v + terms
    tail = z ** -n / n + 0.5 * z ** -(n + 1) + (n + 1) / 12 * z ** -(n + 2)
    return (-1) ** (n + 1) * math.factorial(n) * (s + tail)


def _erfinv_ref(y):
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return 0.5 * (lo + hi)


def test_lgamma_values_every_device(driver):
    r = rng()
    v = np.concatenate([r.uniform(-15, 40, 600), r.uniform(0.5, 3, 200),
                        [1, 2, 1 + 1e-6, 2 - 1e-5, 0.5, 7.99, 8, 8.01, 1e-3, -0.5, -2.5, 1e20]])
    v32 = v.astype(np.float32).astype(np.float64)
    ref64 = np.array([math.lgamma(a) for a in v])
    ref32 = np.array([math.lgamma(a) for a in v32])
    out64 = num(rawdev.lgamma(on(v, "cpu")))
    np.testing.assert_allclose(out64, ref64, rtol=1e-12, atol=1e-12)
    cpu32 = num(rawdev.lgamma(on(v32, "cpu", rawdev.float32)))
    assert (np.abs(cpu32 - ref32) / np.maximum(np.abs(ref32), 1)).max() < 3e-6
    cuda32 = num(rawdev.lgamma(on(v32, "cuda", rawdev.float32)[::1]))
    np.testing.assert_allclose(cuda32, cpu32, rtol=1e-6, atol=1e-6)
    special = num(rawdev.lgamma(on([0.0, -1.0, -3.0, math.inf, -math.inf, NAN], "cuda", rawdev.float32)))
    assert np.isinf(special[:5]).all() and (special[:5] > 0).all() and np.isnan(special[5])


def test_digamma_polygamma_values(driver):
    r = rng()
    v = np.concatenate([r.uniform(-6.9, 25, 300), [1.0, 0.5, 1.4616321449683622, 1e-3, 9.5]])
    v = v[np.abs(v - np.round(v)) > 1e-3]          # away from the poles at 0, −1, −2, …
    ref = np.array([_digamma_ref(a) if a > 0 else _digamma_ref(1 - a) - math.pi / math.tan(math.pi * a)
                    for a in v])
    np.testing.assert_allclose(num(rawdev.digamma(on(v, "cpu"))), ref, rtol=1e-10, atol=1e-10)
    d32 = num(rawdev.digamma(on(v, "cuda", rawdev.float32)))
    assert (np.abs(d32 - ref) / np.maximum(np.abs(ref), 1)).max() < 2e-4   # poles nearby amplify f32 rounding
    pos = r.uniform(0.2, 12, 12)
    for n in (1, 2, 3):
        refn = np.array([_polygamma_ref(n, a) for a in pos])
        np.testing.assert_allclose(num(rawdev.polygamma(n, on(pos, "cpu"))), refn, rtol=1e-9)
        np.testing.assert_allclose(num(rawdev.polygamma(n, on(pos, "cuda", rawdev.float32))), refn, rtol=2e-5)
    neg = np.array([-0.5, -1.5, -2.25])                  # trigamma's reflection
    np.testing.assert_allclose(num(rawdev.polygamma(1, on(neg, "cpu"))),
                               [math.pi ** 2 / math.sin(math.pi * a) ** 2 - _polygamma_ref(1, 1 - a) for a in neg],
                               rtol=1e-9)
    # PyTorch's special values: ψ(0) = −inf, ψ(−n) = nan; ψ'(0) = inf
    assert num(rawdev.digamma(on([0.0, -1.0], "cuda", rawdev.float32))).tolist()[0] == -math.inf
    assert np.isnan(num(rawdev.digamma(on([-1.0], "cpu")))).all()
    assert num(rawdev.polygamma(1, on([0.0], "cpu")))[0] == math.inf
    assert rawdev.special.psi is rawdev.digamma and rawdev.special.gammaln is rawdev.lgamma


def test_gamma_gradients_chain_through_the_family(driver):
    r = rng()
    v = r.uniform(0.3, 6, 7)
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-9), ("cuda", rawdev.float32, 2e-5)):
        x = on(v, dev, dt, grad=True)
        y = rawdev.lgamma(x[::2])                         # a strided view
        assert y.grad_fn.name() == "LgammaBackward0"
        g1, = rawdev.autograd.grad(y.sum(), x, create_graph=True)
        ref1 = np.zeros_like(v)
        ref1[::2] = [_digamma_ref(a) for a in v[::2]]
        np.testing.assert_allclose(num(g1), ref1, rtol=tol, atol=tol)
        g2, = rawdev.autograd.grad(g1.sum(), x)
        ref2 = np.zeros_like(v)
        ref2[::2] = [_polygamma_ref(1, a) for a in v[::2]]
        np.testing.assert_allclose(num(g2), ref2, rtol=tol * 10, atol=tol)


def test_mvlgamma():
    v = np.array([2.5, 4.0, 1.2])
    ref = [0.5 * math.log(math.pi) + math.lgamma(a) + math.lgamma(a - 0.5) for a in v]
    np.testing.assert_allclose(num(rawdev.mvlgamma(on(v, "cpu"), 2)), ref, rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="All elements must be greater than"):
        rawdev.mvlgamma(rawdev.tensor([0.4]), 2)


def test_erfinv_values_and_gradient(driver):
    r = rng()
    y = np.concatenate([r.uniform(-1, 1, 300), [0.0, 0.5, -0.999, 0.99999, 1e-8]])
    ref = np.array([_erfinv_ref(a) for a in y])
    np.testing.assert_allclose(num(rawdev.erfinv(on(y, "cpu"))), ref, rtol=1e-12, atol=1e-13)
    y32 = y.astype(np.float32).astype(np.float64)
    ref32 = np.array([_erfinv_ref(a) for a in y32])
    np.testing.assert_allclose(num(rawdev.erfinv(on(y32, "cuda", rawdev.float32))), ref32, rtol=2e-5, atol=1e-6)
    edge = num(rawdev.erfinv(on([-1.0, 1.0, 1.5, NAN], "cuda", rawdev.float32)))
    assert edge[0] == -math.inf and edge[1] == math.inf and np.isnan(edge[2:]).all()
    x = on([0.3, -0.7], "cuda", rawdev.float32, grad=True)
    rawdev.erfinv(x).sum().backward()
    np.testing.assert_allclose(num(x.grad), [math.sqrt(math.pi) / 2 * math.exp(_erfinv_ref(a) ** 2)
                                             for a in (0.3, -0.7)], rtol=1e-5)


# ------------------------------------------------------------------ pointwise_composed
def test_pointwise_math_against_numpy(driver):
    r = rng()
    p = r.uniform(0.01, 0.99, (5, 6))
    a, b = r.standard_normal((5, 6)) * 3, r.standard_normal((5, 6)) * 3
    y = r.uniform(0.1, 4, (5, 6))
    y[0, :3] = 0
    x = r.standard_normal((5, 6))
    x[0, 0] = x[1, 1] = 0
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 2e-6)):
        T = lambda v, dev=dev, dt=dt: on(v, dev, dt).t().contiguous().t()   # noqa: E731 (non-contiguous)
        pd = p.astype(np.float32).astype(np.float64) if dt is rawdev.float32 else p   # the input the device sees
        # logit = log p - log(1 - p) cancels near p = 1/2: its rounding error is relative to those terms, not to it
        terms = np.abs(np.log(pd)) + np.abs(np.log1p(-pd))
        np.testing.assert_allclose(num(rawdev.logit(T(p))), np.log(pd / (1 - pd)), rtol=tol * 10,
                                   atol=tol * 10 * terms.max())
        pc = np.clip(pd, 0.1, 0.9)
        np.testing.assert_allclose(num(rawdev.logit(T(p), eps=0.1)), np.log(pc / (1 - pc)), rtol=tol * 10,
                                   atol=tol * 10 * terms.max())
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = np.where(x == 0, 0.0, x * np.log(y))
        np.testing.assert_allclose(num(rawdev.xlogy(T(x), T(y))), ref, rtol=tol * 10, atol=tol)
        np.testing.assert_allclose(num(rawdev.sinc(T(x))), np.sinc(x), rtol=tol * 10, atol=tol)
        np.testing.assert_allclose(num(rawdev.deg2rad(T(a))), np.deg2rad(a), rtol=tol)
        np.testing.assert_allclose(num(rawdev.rad2deg(T(a))), np.rad2deg(a), rtol=tol)
        # max(a, b) + log1p(exp(-|a - b|)) cancels where the result is near 0: its error is relative to max(a, b)
        big_ab = tol * 10 * np.maximum(np.abs(a), np.abs(b)).max()
        np.testing.assert_allclose(num(rawdev.logaddexp(T(a), T(b))), np.logaddexp(a, b), rtol=tol * 10, atol=big_ab)
        np.testing.assert_allclose(num(rawdev.logaddexp2(T(a), T(b))), np.logaddexp2(a, b), rtol=tol * 10,
                                   atol=big_ab)
        hv = on(x, dev, dt)
        np.testing.assert_array_equal(num(rawdev.heaviside(hv, on([0.5], dev, dt))), np.heaviside(x, 0.5))
        big = on([1000.0, -math.inf, math.inf], dev, dt)
        np.testing.assert_allclose(num(rawdev.logaddexp(big, big)), [1000 + math.log(2), -math.inf, math.inf],
                                   rtol=1e-6)
    with pytest.raises(RuntimeError, match="different dtypes"):
        rawdev.heaviside(rawdev.tensor([1.0]), rawdev.tensor([1]))
    assert rawdev.deg2rad(rawdev.tensor([180])).dtype == rawdev.float32


def test_pointwise_gradients(driver):
    r = rng()
    x = r.uniform(-2, 2, 6)
    x[0] = 0
    y = r.uniform(0.2, 3, 6)
    g = r.standard_normal(6)
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-7), ("cuda", rawdev.float32, 1e-4)):
        tx, ty = on(x, dev, dt, grad=True), on(y, dev, dt, grad=True)
        (rawdev.xlogy(tx, ty) * on(g, dev, dt)).sum().backward()
        np.testing.assert_allclose(num(tx.grad), g * np.where(x == 0, 0, np.log(y)), rtol=tol, atol=tol)
        np.testing.assert_allclose(num(ty.grad), g * x / y, rtol=tol, atol=tol)
        tx = on(x, dev, dt, grad=True)
        (rawdev.sinc(tx) * on(g, dev, dt)).sum().backward()
        np.testing.assert_allclose(num(tx.grad), numeric_grad(np.sinc, x, g), rtol=tol * 10, atol=tol)
        ta, tb = on(x, dev, dt, grad=True), on(y, dev, dt, grad=True)
        (rawdev.logaddexp(ta, tb) * on(g, dev, dt)).sum().backward()
        s = 1 / (1 + np.exp(y - x))
        np.testing.assert_allclose(num(ta.grad), g * s, rtol=tol)
        np.testing.assert_allclose(num(tb.grad), g * (1 - s), rtol=tol)
    xz = rawdev.tensor([0.0], requires_grad=True)            # PyTorch: d/dx xlogy(0, 0) is 0, not 0·log 0
    rawdev.xlogy(xz, rawdev.tensor([0.0])).sum().backward()
    assert xz.grad.tolist() == [0.0]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_gcd_lcm_shifts_against_numpy(dtype, driver):
    r = rng()
    npdt = np.dtype(dtype)
    info = np.iinfo(npdt)
    lo = max(info.min, -1000)
    a = r.integers(lo, min(info.max, 1000), 40).astype(npdt)
    b = r.integers(lo, min(info.max, 1000), 40).astype(npdt)
    a[:3], b[:3] = 0, [0, 5, 0]
    bits = npdt.itemsize * 8
    k = r.integers(0, bits, 40).astype(npdt)
    for dev in ("cpu", "cuda"):
        ta, tb = on(a, dev), on(b, dev)
        assert num(rawdev.gcd(ta, tb)).tolist() == np.gcd(a, b).tolist()
        small_a, small_b = (a % 23 - 11).astype(npdt), (b % 23 - 11).astype(npdt)   # products that fit the type
        if npdt.kind == "i":
            assert num(rawdev.lcm(on(small_a, dev), on(small_b, dev))).tolist() == np.lcm(small_a, small_b).tolist()
        tk = on(k, dev)
        with np.errstate(over="ignore"):
            assert num(ta << tk).tolist() == np.left_shift(a, k).tolist()
            assert num(ta >> tk).tolist() == np.right_shift(a, k).tolist()
    # past the width, as PyTorch: 0 to the left, the sign to the right
    assert (rawdev.tensor([1, -8]) << rawdev.tensor([64, 2])).tolist() == [0, -32]
    assert (rawdev.tensor([-8, 8]) >> rawdev.tensor([70, 1])).tolist() == [-1, 4]
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        rawdev.gcd(rawdev.tensor([1.0]), rawdev.tensor([2.0]))


def test_dtype_queries():
    assert rawdev.result_type(rawdev.tensor([1, 2]), 1.0) is rawdev.float32
    assert rawdev.result_type(rawdev.tensor([1], dtype=rawdev.int8), 1000) is rawdev.int8
    assert rawdev.promote_types(rawdev.int32, rawdev.float16) is rawdev.float16
    assert rawdev.promote_types(rawdev.uint8, rawdev.int8) is rawdev.int16
    assert not rawdev.can_cast(rawdev.float32, rawdev.int32) and rawdev.can_cast(rawdev.int32, rawdev.float16)
    assert rawdev.is_floating_point(rawdev.zeros(1)) and not rawdev.is_floating_point(rawdev.zeros(1).long())
    assert rawdev.is_nonzero(rawdev.tensor([2]))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        rawdev.is_nonzero(rawdev.tensor([1, 2]))


def test_integer_pow_on_device(driver):
    r = rng()
    a = r.integers(-9, 9, (4, 5))
    e = r.integers(0, 12, (4, 5))
    out = on(a, "cuda") ** on(e, "cuda")
    assert out.dtype is rawdev.int64 and num(out).tolist() == (a ** e).tolist()
    with pytest.raises(RuntimeError, match="negative integer powers"):
        on([2], "cuda") ** on([-1], "cuda")


def test_cpu_ops_raise_no_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z = rawdev.tensor([0.0, -1.0, 1.0])
        assert num(1.0 / z)[0] == math.inf and np.isnan(num(z.log())[1]) and np.isnan(num(z.sqrt())[1])
        assert np.isnan(num(z / 0)[0])
        rawdev.lgamma(rawdev.tensor([0.0, -1.0]))
        rawdev.digamma(rawdev.tensor([0.0, -2.0]))


# ------------------------------------------------------------------ structure
def test_structure_ops_against_numpy(driver):
    r = rng()
    x = r.standard_normal((4, 5))
    u, v = r.standard_normal((6, 3)), r.standard_normal((1, 3))
    a3, b3 = r.standard_normal((2, 3, 4)), r.standard_normal((3, 4, 5))
    m1, m2 = r.standard_normal((2, 3)), r.standard_normal((3, 2))
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 2e-5)):
        T = lambda w, dev=dev, dt=dt: on(w, dev, dt)   # noqa: E731
        np.testing.assert_allclose(num(rawdev.diff(T(x).t(), n=2, dim=0)), np.diff(x.T, n=2, axis=0),
                                   rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.diff(T(x), prepend=T(x[:, :1]), append=T(x[:, :2]))),
                                   np.diff(x, prepend=x[:, :1], append=x[:, :2]), rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.cross(T(u), T(v), dim=1)), np.cross(u, v), rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.linalg.cross(T(u).t().contiguous().t(), T(v))), np.cross(u, v),
                                   rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.tensordot(T(a3), T(b3))), np.tensordot(a3, b3), rtol=tol * 10, atol=tol)
        np.testing.assert_allclose(num(rawdev.tensordot(T(a3), T(b3), dims=([1], [0]))),
                                   np.tensordot(a3, b3, axes=([1], [0])), rtol=tol * 10, atol=tol)
        np.testing.assert_allclose(num(rawdev.kron(T(m1), T(m2))), np.kron(m1, m2), rtol=tol)
        np.testing.assert_allclose(num(rawdev.kron(T(m1[0]), T(m2))), np.kron(m1[0], m2), rtol=tol)
        np.testing.assert_allclose(num(rawdev.block_diag(T(m1), T(m2), T(x[0]))),
                                   _block_diag_ref([m1, m2, x[0][None]]), rtol=tol)
        np.testing.assert_allclose(num(rawdev.vander(T(x[0]), N=4)), np.vander(x[0], 4), rtol=tol * 10, atol=tol)
        np.testing.assert_allclose(num(rawdev.vander(T(x[0]), increasing=True)), np.vander(x[0], increasing=True),
                                   rtol=tol * 10)
        for k in (-1, 0, 1, 2, 3, 5):
            np.testing.assert_array_equal(num(rawdev.rot90(T(a3), k, (2, 0))), np.rot90(num(T(a3)), k, (2, 0)))
        de = num(rawdev.diag_embed(T(m1), 1, 0, 2))
        ref = np.zeros((4, 2, 4))
        for i in range(2):
            ref[:, i, :] = np.diag(m1[i], 1)
        np.testing.assert_allclose(de, ref, rtol=tol)
        np.testing.assert_allclose(num(rawdev.diagflat(T(m1), -1)), np.diagflat(m1, -1), rtol=tol)
        np.testing.assert_allclose(num(rawdev.trapezoid(T(x))), np.trapezoid(x), rtol=tol, atol=tol)
        xs = np.sort(r.uniform(0, 3, 5))
        np.testing.assert_allclose(num(rawdev.trapezoid(T(x), T(xs))), np.trapezoid(x, xs), rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.cumulative_trapezoid(T(x), dx=0.5, dim=0)),
                                   np.cumsum(0.25 * (x[1:] + x[:-1]), 0), rtol=tol, atol=tol)
        np.testing.assert_array_equal(num(rawdev.column_stack([T(x[:, 0]), T(x[:, 1:3])])),
                                      np.column_stack([x[:, 0], x[:, 1:3]]).astype(num(T(x)).dtype))
        for rows, cols in ((7, 3), (3, 5), (4, 4)):
            for wrap in (False, True):
                ref = np.zeros((rows, cols))
                np.fill_diagonal(ref, 2.5, wrap=wrap)
                np.testing.assert_array_equal(num(rawdev.zeros(rows, cols, device=dev).fill_diagonal_(2.5, wrap)),
                                              ref)
        cube = rawdev.zeros(3, 3, 3, device=dev).fill_diagonal_(1)
        assert num(cube).sum() == 3 and num(cube)[1, 1, 1] == 1


def _block_diag_ref(mats):
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)))
    i = j = 0
    for m in mats:
        out[i:i + m.shape[0], j:j + m.shape[1]] = m
        i, j = i + m.shape[0], j + m.shape[1]
    return out


def test_structure_index_builders(driver):
    for dev in ("cpu", "cuda"):
        for r_, c_, off in ((4, 4, 0), (3, 5, 1), (5, 3, -2), (0, 3, 0)):
            for ours, theirs in ((rawdev.tril_indices, np.tril_indices), (rawdev.triu_indices, np.triu_indices)):
                assert num(ours(r_, c_, off, device=dev)).tolist() == list(map(list, theirs(r_, off, c_)))
        p, q = on([1, 2, 3], dev), on([4, 5], dev)
        assert num(rawdev.cartesian_prod(p, q)).tolist() == [list(t) for t in itertools.product([1, 2, 3], [4, 5])]
        for rr in (1, 2, 3):
            for rep in (False, True):
                pick = itertools.combinations_with_replacement if rep else itertools.combinations
                got = rawdev.combinations(p, rr, rep)
                assert num(got).tolist() == [list(t) for t in pick([1, 2, 3], rr)]
        assert tuple(rawdev.combinations(q, 3).shape) == (0, 3)
    assert rawdev.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        rawdev.broadcast_shapes((2,), (3,))


def test_structure_gradients(driver):
    r = rng()
    u, v = r.standard_normal((4, 3)), r.standard_normal((4, 3))
    m1, m2 = r.standard_normal((2, 3)), r.standard_normal((2, 2))
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-7), ("cuda", rawdev.float32, 1e-4)):
        tu, tv = on(u, dev, dt, grad=True), on(v, dev, dt, grad=True)
        g = r.standard_normal((4, 3))
        (rawdev.cross(tu, tv, dim=1) * on(g, dev, dt)).sum().backward()
        np.testing.assert_allclose(num(tu.grad), numeric_grad(lambda w: np.cross(w, v), u, g), rtol=tol, atol=tol)
        np.testing.assert_allclose(num(tv.grad), numeric_grad(lambda w: np.cross(u, w), v, g), rtol=tol, atol=tol)
        ta, tb = on(m1, dev, dt, grad=True), on(m2, dev, dt, grad=True)
        g = r.standard_normal((4, 6))
        (rawdev.kron(ta, tb) * on(g, dev, dt)).sum().backward()
        np.testing.assert_allclose(num(ta.grad), numeric_grad(lambda w: np.kron(w, m2), m1, g), rtol=tol, atol=tol)
        tb2 = on(m2, dev, dt, grad=True)
        g = r.standard_normal((4, 5))
        (rawdev.block_diag(ta.detach(), tb2) * on(g, dev, dt)).sum().backward()
        np.testing.assert_allclose(num(tb2.grad), g[2:, 3:], rtol=tol)
        tx = on(m1, dev, dt, grad=True)
        g = r.standard_normal((2, 4, 4))
        (rawdev.diag_embed(tx, 1) * on(g, dev, dt)).sum().backward()
        np.testing.assert_allclose(num(tx.grad), np.stack([np.diagonal(gi, 1) for gi in g]), rtol=tol)


# ------------------------------------------------------------------ order statistics
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_bucketize_isin_against_numpy(side, driver):
    r = rng()
    seq = np.sort(r.integers(0, 30, (3, 25)).astype(np.float64), axis=1)      # duplicates on purpose
    vals = r.integers(-2, 33, (3, 17)).astype(np.float64)
    vals[0, :4] = seq[0, :4]
    ref = np.stack([np.searchsorted(seq[i], vals[i], side=side) for i in range(3)])
    bounds = np.unique(r.uniform(-3, 3, 9))
    x = r.uniform(-4, 4, (5, 7))
    for dev, dt in (("cpu", rawdev.float64), ("cuda", rawdev.float32)):
        got = rawdev.searchsorted(on(seq, dev, dt), on(vals, dev, dt), side=side)
        assert got.dtype is rawdev.int64 and num(got).tolist() == ref.tolist()
        one = rawdev.searchsorted(on(seq[0], dev, dt), on(vals, dev, dt).t(), right=side == "right", out_int32=True)
        assert one.dtype is rawdev.int32 and num(one).tolist() == np.searchsorted(seq[0], vals.T, side=side).tolist()
        perm = r.permutation(25)
        sorter = on(np.argsort(seq[0][perm], kind="stable"), dev)
        assert num(rawdev.searchsorted(on(seq[0][perm], dev, dt), on(vals[0], dev, dt), side=side,
                                       sorter=sorter)).tolist() == np.searchsorted(seq[0], vals[0], side=side).tolist()
        # bucketize's right=False is searchsorted's left
        assert num(rawdev.bucketize(on(x, dev, dt), on(bounds, dev, dt), right=side == "right")).tolist() == \
            np.searchsorted(bounds, x, side=side).tolist()
        ints = r.integers(0, 12, (4, 6))
        test = r.integers(0, 12, 5)
        assert num(rawdev.isin(on(ints, dev), on(test, dev))).tolist() == np.isin(ints, test).tolist()
        assert num(rawdev.isin(on(ints, dev), on(test, dev), invert=True)).tolist() == \
            np.isin(ints, test, invert=True).tolist()
    assert rawdev.searchsorted(rawdev.tensor([1, 3, 5]), 4).item() == 2
    nan_seq = rawdev.tensor([1.0, 2.0, 2.0, NAN])
    assert rawdev.searchsorted(nan_seq, rawdev.tensor([NAN, 2.0, 0.0])).tolist() == [4, 1, 0]
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        rawdev.searchsorted(rawdev.zeros(2, 3), rawdev.zeros(3, 1))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_nanquantile_against_numpy(interpolation, driver):
    r = rng()
    x = r.standard_normal((4, 9))
    xn = x.copy()
    xn[1, [2, 5]] = NAN
    xn[3, :] = NAN
    q = np.array([0.0, 0.1, 0.5, 0.77, 1.0])
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 1e-6)):
        tq = on(q, dev, dt)
        got = rawdev.quantile(on(x, dev, dt).t().contiguous().t(), tq, dim=1, keepdim=True,
                              interpolation=interpolation)
        ref = np.quantile(x, q, axis=1, keepdims=True, method=interpolation)
        assert tuple(got.shape) == ref.shape
        np.testing.assert_allclose(num(got), ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(num(rawdev.quantile(on(x, dev, dt), 0.3, interpolation=interpolation)),
                                   np.quantile(x, 0.3, method=interpolation), rtol=tol, atol=tol)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # NumPy warns about the all-NaN row
            refn = np.nanquantile(xn, q, axis=1, method=interpolation)
        np.testing.assert_allclose(num(rawdev.nanquantile(on(xn, dev, dt), tq, dim=1, interpolation=interpolation)),
                                   refn, rtol=tol, atol=tol)
        assert np.isnan(num(rawdev.quantile(on(xn, dev, dt), 0.5, dim=1))[[1, 3]]).all()
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        rawdev.quantile(rawdev.zeros(3), 1.5)
    with pytest.raises(RuntimeError, match="input tensor must be either float or double dtype"):
        rawdev.quantile(rawdev.tensor([1, 2]), 0.5)


def test_quantile_gradient_and_nanmedian(driver):
    r = rng()
    x = r.standard_normal(11)
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-7), ("cuda", rawdev.float32, 1e-5)):
        tx = on(x, dev, dt, grad=True)
        rawdev.quantile(tx, 0.35).backward()
        np.testing.assert_allclose(num(tx.grad), numeric_grad(lambda w: np.quantile(w, 0.35), x, np.ones(())),
                                   rtol=tol, atol=tol)
        m = r.standard_normal((5, 6))
        m[1, [0, 3]] = NAN
        m[4] = NAN
        vals, idx = rawdev.nanmedian(on(m, dev, dt), 1)
        for i in range(5):
            row = m[i][~np.isnan(m[i])]
            if row.size == 0:
                assert np.isnan(num(vals)[i]) and num(idx)[i] == 0
            else:
                lower = np.sort(row)[(row.size - 1) // 2]
                assert num(vals)[i] == pytest.approx(lower, rel=tol)
                assert m[i, num(idx)[i]] == pytest.approx(lower, rel=tol)
        finite = np.sort(m[~np.isnan(m)])
        assert num(rawdev.nanmedian(on(m, dev, dt))) == pytest.approx(finite[(finite.size - 1) // 2], rel=tol)


def test_aminmax_renorm_dist(driver):
    r = rng()
    x = r.standard_normal((4, 5))
    w = r.standard_normal((3, 4)) * 2
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 1e-6)):
        mn, mx = rawdev.aminmax(on(x, dev, dt), dim=1, keepdim=True)
        np.testing.assert_array_equal(num(mn), x.min(1, keepdims=True).astype(num(mn).dtype))
        np.testing.assert_array_equal(num(mx), x.max(1, keepdims=True).astype(num(mx).dtype))
        out = rawdev.aminmax(on(x, dev, dt))
        assert out.min.ndim == 0 and num(out.max) == pytest.approx(x.max(), rel=tol)
        norms = np.linalg.norm(w, axis=1, keepdims=True)
        ref = np.where(norms > 1.5, w * 1.5 / (norms + 1e-7), w)
        np.testing.assert_allclose(num(rawdev.renorm(on(w, dev, dt), 2, 0, 1.5)), ref, rtol=tol * 10)
        np.testing.assert_allclose(num(rawdev.dist(on(x, dev, dt), on(x[0], dev, dt), 3)),
                                   np.sum(np.abs(x - x[0]) ** 3) ** (1 / 3), rtol=tol * 10)


def test_random_fills_follow_their_distributions(driver):
    rawdev.manual_seed(1234)
    for dev in ("cpu", "cuda"):
        g = rawdev.empty(40000, device=dev).geometric_(0.25)
        assert num(g).min() == 1 and abs(num(g).mean() - 4.0) < 0.1 and np.all(num(g) == np.round(num(g)))
        c = num(rawdev.empty(40001, device=dev).cauchy_(1.0, 2.0))
        assert abs(np.median(c) - 1.0) < 0.1 and abs(np.percentile(c, 75) - 3.0) < 0.15     # quartiles at ±sigma
        ln = num(rawdev.empty(40000, device=dev).log_normal_(0.5, 0.25))
        assert abs(np.log(ln).mean() - 0.5) < 0.01 and abs(np.log(ln).std() - 0.25) < 0.01
    with pytest.raises(RuntimeError, match="geometric_ expects p to be in"):
        rawdev.empty(2).geometric_(1.5)
