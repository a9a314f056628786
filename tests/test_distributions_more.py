"""Exponential, Laplace, Cauchy, LogNormal, Gamma, Beta, Dirichlet, Poisson, Geometric, MultivariateNormal and
Normal.icdf: densities against float64 formulas written out with `math`, samples on the cpu and the simulated
GPU against their known moments (fixed seeds: the bounds are several standard errors wide), KL against
closed forms, and gradients through rsample."""
import math

import numpy as np
import pytest
import rawdev
from rawdev import distributions as D


def t64(x):
    return rawdev.tensor(x, dtype=rawdev.float64)


def test_densities_against_formulas():
    x = [0.3, 1.7, 2.5]
    a, b = [0.5, 2.0, 3.0], [1.0, 0.5, 2.0]
    lg = math.lgamma
    checks = [
        (D.Exponential(t64(b)), x, lambda v, i: math.log(b[i]) - b[i] * v),
        (D.Laplace(t64(a), t64(b)), x, lambda v, i: -math.log(2 * b[i]) - abs(v - a[i]) / b[i]),
        (D.Cauchy(t64(a), t64(b)), x, lambda v, i: -math.log(math.pi * b[i] * (1 + ((v - a[i]) / b[i]) ** 2))),
        (D.LogNormal(t64(a), t64(b)), x,
         lambda v, i: -math.log(v * b[i] * math.sqrt(2 * math.pi)) - (math.log(v) - a[i]) ** 2 / (2 * b[i] ** 2)),
        (D.Gamma(t64(a), t64(b)), x,
         lambda v, i: a[i] * math.log(b[i]) + (a[i] - 1) * math.log(v) - b[i] * v - lg(a[i])),
        (D.Beta(t64(a), t64(b)), [0.3, 0.7, 0.5],
         lambda v, i: (a[i] - 1) * math.log(v) + (b[i] - 1) * math.log(1 - v) + lg(a[i] + b[i]) - lg(a[i]) - lg(b[i])),
        (D.Poisson(t64(a)), [0.0, 2.0, 5.0], lambda k, i: k * math.log(a[i]) - a[i] - lg(k + 1)),
        (D.Geometric(t64([0.2, 0.5, 0.9])), [0.0, 2.0, 5.0],
         lambda k, i: k * math.log(1 - [0.2, 0.5, 0.9][i]) + math.log([0.2, 0.5, 0.9][i])),
    ]
    for d, vals, ref in checks:
        got = d.log_prob(t64(vals)).numpy()
        np.testing.assert_allclose(got, [ref(v, i) for i, v in enumerate(vals)], rtol=1e-10, err_msg=type(d).__name__)
    conc = [0.5, 2.0, 3.0]
    p = [0.2, 0.3, 0.5]
    ref = sum((c - 1) * math.log(q) for c, q in zip(conc, p)) + lg(sum(conc)) - sum(lg(c) for c in conc)
    assert D.Dirichlet(t64(conc)).log_prob(t64(p)).item() == pytest.approx(ref, rel=1e-12)
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    mu = np.array([0.0, 1.0])
    v = np.array([0.3, -0.4])
    d = v - mu
    ref = -0.5 * (2 * math.log(2 * math.pi) + math.log(np.linalg.det(cov)) + d @ np.linalg.solve(cov, d))
    for kw in ({"covariance_matrix": t64(cov)}, {"precision_matrix": t64(np.linalg.inv(cov))},
               {"scale_tril": t64(np.linalg.cholesky(cov))}):
        m = D.MultivariateNormal(t64(mu), **kw)
        assert m.log_prob(t64(v)).item() == pytest.approx(ref, rel=1e-12)
        np.testing.assert_allclose(m.covariance_matrix.numpy(), cov, rtol=1e-12)
        h = 0.5 * (2 * (1 + math.log(2 * math.pi)) + math.log(np.linalg.det(cov)))
        assert m.entropy().item() == pytest.approx(h)
    from statistics import NormalDist
    for q in (0.01, 0.2, 0.5, 0.97):
        assert D.Normal(t64(1.0), t64(2.0)).icdf(t64(q)).item() == pytest.approx(NormalDist(1, 2).inv_cdf(q), rel=1e-9)


def test_samples_have_the_right_moments(driver):
    n = 40000
    for dev in ("cpu", "cuda"):
        rawdev.manual_seed(11)

        def T(v, dev=dev):
            return rawdev.tensor(v, dtype=rawdev.float32, device=dev)
        cases = [
            (D.Exponential(T([0.5, 3.0])), [2.0, 1 / 3], [4.0, 1 / 9]),
            (D.Laplace(T([0.0, 2.0]), T([1.0, 0.5])), [0.0, 2.0], [2.0, 0.5]),
            (D.Gamma(T([0.4, 3.0]), T([2.0, 0.5])), [0.2, 6.0], [0.1, 12.0]),
            (D.Beta(T([0.5, 3.0]), T([2.0, 4.0])), [0.2, 3 / 7], [0.5 * 2 / (6.25 * 3.5), 12 / (49 * 8)]),
            (D.Poisson(T([0.7, 6.0])), [0.7, 6.0], [0.7, 6.0]),
            (D.Geometric(T([0.3, 0.8])), [1 / 0.3 - 1, 0.25], [(1 / 0.3 - 1) / 0.3, 0.25 / 0.8]),
            (D.LogNormal(T([0.0, 0.5]), T([0.25, 0.1])), [math.exp(0.25 ** 2 / 2), math.exp(0.5 + 0.005)],
             [math.expm1(0.0625) * math.exp(0.0625), math.expm1(0.01) * math.exp(1.01)]),
        ]
        for d, mean, var in cases:
            s = d.sample((n,))
            assert tuple(s.shape) == (n, 2) and s.device.type == dev
            v = s.cpu().numpy().astype(np.float64)
            for j in range(2):
                se = math.sqrt(var[j] / n)
                assert abs(v[:, j].mean() - mean[j]) < 6 * se, (type(d).__name__, dev, j, v[:, j].mean(), mean[j])
                assert abs(v[:, j].var() / var[j] - 1) < 0.1, (type(d).__name__, dev, j, v[:, j].var(), var[j])
        c = D.Cauchy(T([1.0]), T([2.0])).sample((n,)).cpu().numpy()
        assert abs(np.median(c) - 1.0) < 0.08 and abs(np.percentile(c, 75) - 3.0) < 0.15
        dd = D.Dirichlet(T([[1.0, 2.0, 3.0]])).sample((n,)).cpu().numpy()
        np.testing.assert_allclose(dd.sum(-1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(dd.mean(0)[0], [1 / 6, 2 / 6, 3 / 6], atol=0.01)
        cov = np.array([[2.0, 0.5], [0.5, 1.0]])
        m = D.MultivariateNormal(T([0.0, 1.0]), covariance_matrix=T(cov)).sample((n,)).cpu().numpy()
        np.testing.assert_allclose(np.cov(m.T), cov, atol=0.06)
        np.testing.assert_allclose(m.mean(0), [0.0, 1.0], atol=0.03)


def test_kl_closed_forms_match_monte_carlo():
    rawdev.manual_seed(5)
    pairs = [
        (D.Exponential(t64(0.5)), D.Exponential(t64(2.0))),
        (D.Gamma(t64(2.0), t64(1.0)), D.Gamma(t64(3.0), t64(2.0))),
        (D.Beta(t64(2.0), t64(3.0)), D.Beta(t64(1.5), t64(1.0))),
        (D.Laplace(t64(0.0), t64(1.0)), D.Laplace(t64(0.5), t64(2.0))),
        (D.MultivariateNormal(t64([0.0, 1.0]), scale_tril=t64([[1.0, 0.0], [0.5, 2.0]])),
         D.MultivariateNormal(t64([1.0, -1.0]), covariance_matrix=t64([[2.0, 0.5], [0.5, 1.0]]))),
    ]
    for p, q in pairs:
        x = p.sample((200000,))
        mc = (p.log_prob(x) - q.log_prob(x)).mean().item()
        assert D.kl_divergence(p, q).item() == pytest.approx(mc, abs=0.02), type(p).__name__
    kl = D.kl_divergence(D.Poisson(t64(2.0)), D.Poisson(t64(3.0))).item()
    ref = sum(math.exp(-2) * 2 ** k / math.factorial(k) * (k * math.log(2 / 3) - 2 + 3) for k in range(60))
    assert kl == pytest.approx(ref, rel=1e-9)


def test_rsample_gradients_and_refusals(driver):
    for dev in ("cpu", "cuda"):
        rate = rawdev.tensor([2.0], device=dev, requires_grad=True)
        s = D.Exponential(rate).rsample((1000,))
        s.mean().backward()
        np.testing.assert_allclose(rate.grad.cpu().numpy(), -(s.detach().mean() / rate.detach()).cpu().numpy(),
                                   rtol=1e-5)
        loc = rawdev.zeros(2, device=dev, requires_grad=True)
        L = rawdev.tensor([[1.0, 0.0], [0.3, 0.5]], device=dev, requires_grad=True)
        x = D.MultivariateNormal(loc, scale_tril=L).rsample((5,))
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.cpu().numpy(), [5.0, 5.0])
        assert L.grad is not None
    with pytest.raises(NotImplementedError, match="concentration is not implemented"):
        D.Gamma(rawdev.tensor([2.0], requires_grad=True), rawdev.tensor([1.0])).rsample()
    g = D.Gamma(rawdev.tensor([2.0]), rawdev.tensor([1.0], requires_grad=True)).rsample((10,))
    g.sum().backward()
