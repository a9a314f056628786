"""The transforms, constraints, TransformedDistribution and the families built on them, the count families,
MixtureSameFamily and the incomplete gamma function: densities against closed forms written out with `math`,
transforms against central differences, samples against the distributions' own moments (on the simulated GPU)."""
import math

import numpy as np
import pytest
import rawdev
from rawdev import distributions as D
from rawdev.distributions import constraints, transforms

from _refs import rng

F64 = rawdev.float64


def t(x):
    return rawdev.tensor(np.asarray(x, dtype=np.float64), dtype=F64)


def num(x):
    return x.detach().cpu().numpy().astype(np.float64)


# ------------------------------------------------------------------ incomplete gamma
def test_igamma_against_closed_forms_and_recurrence(driver):
    r = rng()
    x = r.uniform(0.01, 30.0, 40)
    np.testing.assert_allclose(num(rawdev.igamma(t(np.ones(40)), t(x))), -np.expm1(-x), rtol=1e-13, atol=1e-15)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(num(rawdev.special.gammainc(t(np.full(40, 0.5)), t(x))), erf(np.sqrt(x)),
                               rtol=1e-12, atol=1e-14)
    for n in (3, 12, 40):     # Q(n, x) = e^−x Σ_{k<n} x^k / k!
        want = np.array([math.exp(-v) * sum(v ** k / math.factorial(k) for k in range(n)) for v in x])
        np.testing.assert_allclose(num(rawdev.igammac(t(np.full(40, float(n))), t(x))), want, rtol=1e-10,
                                   atol=1e-300)
    a = r.uniform(0.2, 60.0, 40)      # P(a + 1, x) = P(a, x) − x^a e^−x / Γ(a + 1)
    lhs = num(rawdev.igamma(t(a + 1), t(x)))
    rhs = num(rawdev.igamma(t(a), t(x))) - np.exp(a * np.log(x) - x - np.array([math.lgamma(v + 1) for v in a]))
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)
    edge = rawdev.igamma(t([2.0, 0.0, 2.0, -1.0, 1.0]), t([0.0, 1.0, math.inf, 1.0, math.nan]))
    got = num(edge)
    assert got[:3].tolist() == [0.0, 1.0, 1.0] and np.isnan(got[3:]).all()
    # float32 where the series hands over to the continued fraction (x near a + 1 converges slowest): the
    # stopping test must be reachable in float32, or rounding accumulates over thousands of steps
    xs = np.linspace(1.0, 8.0, 141)
    want3 = 1 - np.exp(-xs) * (1 + xs + xs ** 2 / 2)
    got3 = num(rawdev.igamma(rawdev.full((141,), 3.0), rawdev.tensor(xs, dtype=rawdev.float32)))
    assert np.abs(got3 - want3).max() < 2e-6
    # float32 on the simulated GPU, large a (Stirling's form keeps the cancellation out)
    a32 = rawdev.tensor([1000.0, 5.0, 0.3], device="cuda")
    x32 = rawdev.tensor([990.0, 10.0, 0.02], device="cuda")
    want = np.array([math.nan, 0, 0])
    want[1] = 1 - math.exp(-10) * sum(10 ** k / math.factorial(k) for k in range(5))
    got32 = num(rawdev.igamma(a32, x32))
    np.testing.assert_allclose(got32[1], want[1], rtol=2e-6)
    assert abs(got32[0] - num(rawdev.igamma(t([1000.0]), t([990.0])))[0]) < 3e-6
    np.testing.assert_allclose(got32[2], num(rawdev.igamma(t([0.3]), t([0.02])))[0], rtol=2e-6)


def test_igamma_gradient_in_x_only(driver):
    x = t([0.5, 3.0, 7.0]).requires_grad_(True)
    a = t([2.0, 4.0, 0.7])
    rawdev.igamma(a, x).sum().backward()
    av, xv = num(a), num(x)
    want = np.exp((av - 1) * np.log(xv) - xv - np.array([math.lgamma(v) for v in av]))
    np.testing.assert_allclose(num(x.grad), want, rtol=1e-12, atol=1e-14)
    x.grad = None
    rawdev.igammac(a, x).sum().backward()
    np.testing.assert_allclose(num(x.grad), -want, rtol=1e-12, atol=1e-14)
    with pytest.raises(NotImplementedError, match="not implemented for the input a"):
        rawdev.igamma(a.clone().requires_grad_(True), x).sum().backward()


# ------------------------------------------------------------------ transforms and constraints
ELEMENTWISE = [
    (transforms.ExpTransform(), -3.0, 3.0),
    (transforms.SigmoidTransform(), -8.0, 8.0),
    (transforms.TanhTransform(), -4.0, 4.0),
    (transforms.SoftplusTransform(), -5.0, 5.0),
    (transforms.AffineTransform(0.5, -2.0), -3.0, 3.0),
    (transforms.PowerTransform(2.5), 0.1, 3.0),
    (transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(1.0, 3.0)]), -2.0, 2.0),
]


@pytest.mark.parametrize("tr,lo,hi", ELEMENTWISE, ids=lambda v: type(v).__name__ if hasattr(v, "inv") else "")
def test_elementwise_transforms_invert_and_their_jacobians_match_differences(tr, lo, hi):
    x = rng().uniform(lo, hi, 30)
    y = tr(t(x))
    np.testing.assert_allclose(num(tr.inv(y)), x, rtol=1e-9, atol=1e-10)
    h = 1e-6
    slope = (num(tr(t(x + h))) - num(tr(t(x - h)))) / (2 * h)
    np.testing.assert_allclose(num(tr.log_abs_det_jacobian(t(x), y)), np.log(np.abs(slope)), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(num(tr.inv.log_abs_det_jacobian(y, t(x))), -np.log(np.abs(slope)), rtol=1e-6,
                               atol=1e-6)
    assert tr.codomain.check(y).all()


def test_stick_breaking_maps_onto_the_simplex_with_its_jacobian():
    x = rng().standard_normal(4)
    sb = transforms.StickBreakingTransform()
    y = sb(t(x))
    assert y.shape == (5,) and abs(float(y.sum()) - 1) < 1e-12 and constraints.simplex.check(y).item()
    np.testing.assert_allclose(num(sb.inv(y)), x, rtol=1e-9, atol=1e-10)
    h, J = 1e-6, np.zeros((4, 4))
    for j in range(4):
        e = np.zeros(4)
        e[j] = h
        J[:, j] = (num(sb(t(x + e)))[:4] - num(sb(t(x - e)))[:4]) / (2 * h)
    assert abs(float(sb.log_abs_det_jacobian(t(x), y)) - np.log(abs(np.linalg.det(J)))) < 1e-6


def test_constraints_check_and_print_as_pytorchs():
    v = t([-1.0, 0.0, 0.5, 2.0])
    assert num(constraints.positive.check(v)).tolist() == [0, 0, 1, 1]
    assert num(constraints.nonnegative(v)).tolist() == [0, 1, 1, 1]
    assert num(constraints.unit_interval.check(v)).tolist() == [0, 1, 1, 0]
    assert num(constraints.interval(-1.0, 1.0).check(v)).tolist() == [1, 1, 1, 0]
    assert num(constraints.half_open_interval(-1.0, 2.0).check(v)).tolist() == [1, 1, 1, 0]
    assert num(constraints.integer_interval(0, 2).check(v)).tolist() == [0, 1, 0, 1]
    assert num(constraints.real_vector.check(t([[1.0, math.nan], [1.0, 2.0]]))).tolist() == [0, 1]
    assert num(constraints.lower_cholesky.check(t([[1.0, 0.0], [2.0, 3.0]]))).item() == 1
    assert num(constraints.positive_definite.check(t([[2.0, 1.0], [1.0, 2.0]]))).item() == 1
    assert num(constraints.positive_definite.check(t([[1.0, 2.0], [2.0, 1.0]]))).item() == 0
    assert repr(constraints.positive) == "GreaterThan(lower_bound=0.0)"
    assert repr(constraints.integer_interval(0, 3)) == "IntegerInterval(lower_bound=0, upper_bound=3)"
    assert repr(constraints.real_vector) == "IndependentConstraint(Real(), 1)"
    assert constraints.boolean.is_discrete and constraints.simplex.event_dim == 1
    for c in (constraints.positive, constraints.unit_interval, constraints.interval(-2.0, 5.0),
              constraints.greater_than(3.0), constraints.less_than(-1.0), constraints.simplex,
              constraints.real_vector):
        z = t(rng().standard_normal(6) * 4)
        assert bool(c.check(D.biject_to(c)(z)).all()), c
        assert bool(c.check(D.transform_to(c)(z)).all()), c
    with pytest.raises(ValueError, match="to satisfy the constraint GreaterThan"):
        D.Normal(t([0.0]), t([-1.0]))


# ------------------------------------------------------------------ densities against closed forms
def _studentt_pdf(x, df, loc, scale):
    y = (x - loc) / scale
    return math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / (math.sqrt(df * math.pi) * scale) * \
        (1 + y * y / df) ** (-(df + 1) / 2)


CLOSED = [
    ("Gumbel", lambda: D.Gumbel(t([0.1, -0.5, 1.0]), t([1.0, 2.0, 0.5])), [0.3, 1.2, 2.5],
     lambda x, i: (lambda z, s: math.exp(-(z + math.exp(-z))) / s)((x - [0.1, -0.5, 1.0][i]) / [1.0, 2.0, 0.5][i],
                                                                   [1.0, 2.0, 0.5][i])),
    ("HalfNormal", lambda: D.HalfNormal(t([1.0, 2.0, 0.5])), [0.3, 1.2, 2.5],
     lambda x, i: math.sqrt(2 / math.pi) / [1.0, 2.0, 0.5][i] * math.exp(-x * x / (2 * [1.0, 2.0, 0.5][i] ** 2))),
    ("HalfCauchy", lambda: D.HalfCauchy(t([1.0, 2.0, 0.5])), [0.3, 1.2, 2.5],
     lambda x, i: 2 / (math.pi * [1.0, 2.0, 0.5][i] * (1 + (x / [1.0, 2.0, 0.5][i]) ** 2))),
    ("Weibull", lambda: D.Weibull(t([1.0, 2.0, 0.5]), t([0.7, 1.5, 3.0])), [0.3, 1.2, 2.5],
     lambda x, i: (lambda lam, k: k / lam * (x / lam) ** (k - 1) * math.exp(-(x / lam) ** k))(
         [1.0, 2.0, 0.5][i], [0.7, 1.5, 3.0][i])),
    ("Pareto", lambda: D.Pareto(t([0.2, 0.5, 1.0]), t([0.7, 2.5, 3.0])), [0.3, 1.2, 2.5],
     lambda x, i: (lambda s, a: a * s ** a / x ** (a + 1))([0.2, 0.5, 1.0][i], [0.7, 2.5, 3.0][i])),
    ("StudentT", lambda: D.StudentT(t([0.7, 1.5, 3.0]), t([0.1, 0.2, 0.3]), t([1.0, 2.0, 0.5])), [0.3, 1.2, 2.5],
     lambda x, i: _studentt_pdf(x, [0.7, 1.5, 3.0][i], [0.1, 0.2, 0.3][i], [1.0, 2.0, 0.5][i])),
    ("Chi2", lambda: D.Chi2(t([0.7, 1.5, 3.0])), [0.3, 1.2, 2.5],
     lambda x, i: (lambda k: x ** (k / 2 - 1) * math.exp(-x / 2) / (2 ** (k / 2) * math.gamma(k / 2)))(
         [0.7, 1.5, 3.0][i])),
    ("InverseGamma", lambda: D.InverseGamma(t([0.7, 1.5, 3.0]), t([1.0, 2.0, 0.5])), [0.3, 1.2, 2.5],
     lambda x, i: (lambda a, b: b ** a / math.gamma(a) * x ** (-a - 1) * math.exp(-b / x))(
         [0.7, 1.5, 3.0][i], [1.0, 2.0, 0.5][i])),
]


@pytest.mark.parametrize("name,make,xs,pdf", CLOSED, ids=[c[0] for c in CLOSED])
def test_log_prob_matches_the_closed_form_density(name, make, xs, pdf):
    d = make()
    got = num(d.log_prob(t(xs)))
    want = np.array([math.log(pdf(x, i)) for i, x in enumerate(xs)])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    cdf = CDFS.get(name)
    if cdf is not None:
        want = [cdf(x, i) for i, x in enumerate(xs)]
        np.testing.assert_allclose(num(d.cdf(t(xs))), want, rtol=1e-10, atol=1e-12)
        q = t([0.2, 0.5, 0.9])
        np.testing.assert_allclose(num(d.cdf(d.icdf(q))), num(q), rtol=1e-9)


S3, C3 = [1.0, 2.0, 0.5], [0.7, 1.5, 3.0]
CDFS = {
    "Gumbel": lambda x, i: math.exp(-math.exp(-(x - [0.1, -0.5, 1.0][i]) / S3[i])),
    "HalfNormal": lambda x, i: math.erf(x / (S3[i] * math.sqrt(2))),
    "HalfCauchy": lambda x, i: 2 / math.pi * math.atan(x / S3[i]),
    "Weibull": lambda x, i: 1 - math.exp(-(x / S3[i]) ** C3[i]),
    "Pareto": lambda x, i: 1 - ([0.2, 0.5, 1.0][i] / x) ** [0.7, 2.5, 3.0][i],
}


def test_gamma_and_chi2_cdf_in_closed_form(driver):
    x = rng().uniform(0.05, 12.0, 20)
    np.testing.assert_allclose(num(D.Chi2(t(np.full(20, 2.0))).cdf(t(x))), -np.expm1(-x / 2), rtol=1e-12, atol=1e-14)
    g = D.Gamma(t(np.full(20, 3.0)), t(np.full(20, 1.5)))
    want = 1 - np.exp(-1.5 * x) * (1 + 1.5 * x + (1.5 * x) ** 2 / 2)
    np.testing.assert_allclose(num(g.cdf(t(x))), want, rtol=1e-10, atol=1e-15)
    gc = D.Gamma(rawdev.full((20,), 3.0, device="cuda"), rawdev.full((20,), 1.5, device="cuda"))
    np.testing.assert_allclose(num(gc.cdf(rawdev.tensor(x, dtype=rawdev.float32, device="cuda"))), want, atol=3e-6)


def test_count_families_log_prob():
    b = D.Binomial(t([5.0, 5.0, 9.0]), probs=t([0.2, 0.5, 0.9]))
    k = [0, 3, 7]
    want = [math.log(math.comb(n, kk) * p ** kk * (1 - p) ** (n - kk))
            for n, kk, p in zip([5, 5, 9], k, [0.2, 0.5, 0.9])]
    np.testing.assert_allclose(num(b.log_prob(t(k))), want, rtol=1e-12, atol=1e-14)
    b5 = D.Binomial(5, logits=t([-0.3, 1.1]))
    assert abs(float(b5.entropy()[0]) - -sum(
        (lambda pk: pk * math.log(pk))(math.comb(5, j) * q ** j * (1 - q) ** (5 - j))
        for q in [1 / (1 + math.exp(0.3))] for j in range(6))) < 1e-12
    m = D.Multinomial(6, probs=t([0.2, 0.3, 0.5]))
    want = math.log(math.factorial(6) / (1 * 2 * 6) * 0.2 * 0.3 ** 2 * 0.5 ** 3)
    assert abs(float(m.log_prob(t([1.0, 2.0, 3.0]))) - want) < 1e-12
    nb = D.NegativeBinomial(t([3.0, 2.5]), probs=t([0.3, 0.6]))
    want = [math.lgamma(kk + r) - math.lgamma(kk + 1) - math.lgamma(r) + kk * math.log(p) + r * math.log(1 - p)
            for kk, r, p in zip([0, 4], [3.0, 2.5], [0.3, 0.6])]
    np.testing.assert_allclose(num(nb.log_prob(t([0.0, 4.0]))), want, rtol=1e-12, atol=1e-14)


def test_mixture_same_family_log_prob_moments_and_samples(driver):
    w, mu, sd = np.array([0.2, 0.3, 0.5]), np.array([-1.0, 0.0, 2.0]), np.array([0.5, 1.0, 2.0])
    mix = D.MixtureSameFamily(D.Categorical(probs=t(w)), D.Normal(t(mu), t(sd)))
    x = np.array([0.1, -1.0, 3.0])
    dens = (w * np.exp(-0.5 * ((x[:, None] - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))).sum(1)
    np.testing.assert_allclose(num(mix.log_prob(t(x))), np.log(dens), rtol=1e-12, atol=1e-14)
    mean = (w * mu).sum()
    assert abs(float(mix.mean) - mean) < 1e-12
    assert abs(float(mix.variance) - ((w * (sd ** 2 + mu ** 2)).sum() - mean ** 2)) < 1e-12
    mc = D.MixtureSameFamily(D.Categorical(probs=rawdev.tensor(w, dtype=rawdev.float32, device="cuda")),
                             D.Normal(rawdev.tensor(mu, dtype=rawdev.float32, device="cuda"),
                                      rawdev.tensor(sd, dtype=rawdev.float32, device="cuda")))
    s = num(mc.sample((20000,)))
    assert s.shape == (20000,)
    se = math.sqrt(float(mix.variance) / 20000)
    assert abs(s.mean() - mean) < 5 * se
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(D.Categorical(probs=t([0.5, 0.5])), D.Normal(t(mu), t(sd)))
    mv = D.MixtureSameFamily(D.Categorical(probs=t([[0.2, 0.8], [0.6, 0.4]])),
                             D.Independent(D.Normal(t(np.zeros((2, 2, 3))), t(np.ones((2, 2, 3)))), 1))
    assert tuple(mv.batch_shape) == (2,) and tuple(mv.event_shape) == (3,)
    assert tuple(mv.sample((4,)).shape) == (4, 2, 3)


@pytest.mark.parametrize("make", [
    lambda dev: D.Binomial(rawdev.tensor([3.0, 300.0], device=dev), probs=rawdev.tensor([0.3, 0.7], device=dev)),
    lambda dev: D.NegativeBinomial(rawdev.tensor([3.0, 2.5], device=dev), probs=rawdev.tensor([0.3, 0.6], device=dev)),
    lambda dev: D.StudentT(rawdev.tensor([6.0, 9.0], device=dev), rawdev.tensor([0.5, -1.0], device=dev),
                           rawdev.tensor([1.0, 2.0], device=dev)),
    lambda dev: D.Gumbel(rawdev.tensor([0.1, -0.5], device=dev), rawdev.tensor([1.0, 2.0], device=dev)),
    lambda dev: D.Weibull(rawdev.tensor([1.0, 2.0], device=dev), rawdev.tensor([1.5, 3.0], device=dev)),
    lambda dev: D.HalfNormal(rawdev.tensor([1.0, 2.0], device=dev)),
    lambda dev: D.InverseGamma(rawdev.tensor([9.0, 12.0], device=dev), rawdev.tensor([1.0, 2.0], device=dev)),
], ids=["Binomial", "NegativeBinomial", "StudentT", "Gumbel", "Weibull", "HalfNormal", "InverseGamma"])
def test_samples_have_the_distributions_moments(driver, make):
    n = 20000
    for dev in ("cpu", "cuda"):
        d = make(dev)
        s = num(d.sample((n,)))
        assert s.shape == (n, 2) and np.isfinite(s).all()
        mean, var = num(d.mean), num(d.variance)
        assert (np.abs(s.mean(0) - mean) < 5 * np.sqrt(var / n)).all(), (dev, s.mean(0), mean)
        assert (np.abs(s.var(0) / var - 1) < 0.15).all(), (dev, s.var(0), var)
        if dev == "cpu":
            assert bool(d.support.check(d.sample((50,))).all())


def test_transformed_distribution_squashed_gaussian_and_affine_exp(driver):
    for dev in ("cpu", "cuda"):
        dt = F64 if dev == "cpu" else rawdev.float32
        loc = rawdev.tensor([0.2, -0.3], dtype=dt, device=dev, requires_grad=True)
        base = D.Normal(loc, rawdev.tensor([1.0, 0.5], dtype=dt, device=dev))
        sq = D.TransformedDistribution(base, [transforms.TanhTransform()])
        a = sq.rsample((5,))
        assert tuple(a.shape) == (5, 2) and bool((a.abs() < 1).all())
        y = np.array([0.5, -0.9])
        u = np.arctanh(y)
        want = -0.5 * ((u - [0.2, -0.3]) / [1.0, 0.5]) ** 2 - np.log([1.0, 0.5]) - 0.5 * math.log(2 * math.pi) \
            - np.log(1 - y ** 2)
        got = sq.log_prob(rawdev.tensor(y, dtype=dt, device=dev))
        np.testing.assert_allclose(num(got), want, rtol=1e-10 if dev == "cpu" else 2e-5)
        got.sum().backward()
        np.testing.assert_allclose(num(loc.grad), (u - [0.2, -0.3]) / np.array([1.0, 0.5]) ** 2,
                                   rtol=1e-9 if dev == "cpu" else 2e-5)
    d = D.TransformedDistribution(D.Normal(t([0.2]), t([1.0])),
                                  [transforms.AffineTransform(1.0, -2.0), transforms.ExpTransform()])
    p = t([0.1, 0.3, 0.8])
    np.testing.assert_allclose(num(d.cdf(d.icdf(p))), num(p), rtol=1e-10, atol=1e-12)   # a decreasing map: cdf flipped
    assert float(d.cdf(t([1e-3]))) < 1e-3 and float(d.cdf(t([1e3]))) > 0.999
    ln = D.LogisticNormal(t([0.1, -0.2]), t([1.0, 0.5]))
    s = ln.sample((7,))
    assert tuple(s.shape) == (7, 3) and np.allclose(num(s.sum(-1)), 1.0)
    assert tuple(ln.batch_shape) == () and tuple(ln.event_shape) == (3,)


def test_relaxed_distributions_sample_in_their_support_and_sharpen(driver):
    for dev in ("cpu", "cuda"):
        probs = rawdev.tensor([0.3, 0.8], device=dev)
        rb = D.RelaxedBernoulli(rawdev.tensor(0.5, device=dev), probs=probs)
        s = rb.rsample((4000,))
        assert bool(((s > 0) & (s < 1)).all())
        np.testing.assert_allclose(num((s > 0.5).float().mean(0)), [0.3, 0.8], atol=0.04)
        cold = D.RelaxedBernoulli(rawdev.tensor(0.05, device=dev), probs=probs).rsample((2000,))
        assert float(((cold < 0.05) | (cold > 0.95)).float().mean()) > 0.9
        ro = D.RelaxedOneHotCategorical(rawdev.tensor(0.5, device=dev),
                                        probs=rawdev.tensor([0.2, 0.3, 0.5], device=dev))
        s = ro.rsample((4000,))
        np.testing.assert_allclose(num(s.sum(-1)), 1.0, rtol=1e-5)
        np.testing.assert_allclose(np.bincount(num(s.argmax(-1)).astype(int), minlength=3) / 4000, [0.2, 0.3, 0.5],
                                   atol=0.04)
    # log densities: the logit-space forms against their closed forms
    lrb = D.LogitRelaxedBernoulli(t(0.5), probs=t([0.3]))
    v, lam, L = 0.4, 0.5, math.log(0.3 / 0.7)
    want = math.log(lam) - lam * v + L - 2 * math.log1p(math.exp(-lam * v + L))
    assert abs(float(lrb.log_prob(t([v]))) - want) < 1e-12
