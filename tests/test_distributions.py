"""rawdev.distributions on the cpu and the simulated GPU: against PyTorch 2.13's numbers (written here as literals):
log_prob, entropy, cdf, KL, validation errors, sample statistics, reparameterized gradients, and a small REINFORCE
loop (policy -> Categorical -> sample -> log_prob * return -> backward); and Exponential, Laplace, Cauchy,
LogNormal, Gamma, Beta, Dirichlet, Poisson, Geometric, MultivariateNormal and Normal.icdf: densities against
float64 formulas written out with `math`, samples against their known moments (fixed seeds: the bounds are several
standard errors wide), KL against closed forms, and gradients through rsample."""
import math

import numpy as np
import pytest
import rawdev
from rawdev import distributions as D
from rawdev.distributions import Bernoulli, Categorical, Independent, Normal, OneHotCategorical, Uniform, kl_divergence


def close(t, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(t.detach().cpu().tolist(), np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_values_match_pytorch(dev, driver):
    T = lambda v: rawdev.tensor(v, device=dev)   # noqa: E731
    c = Categorical(probs=T([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]]))
    close(c.log_prob(T([2, 1])), [-0.6931471824645996, -0.9162907004356384])
    close(c.entropy(), [1.0296530723571777, 0.6730116605758667])
    assert c.mode.tolist() == [2, 0] and tuple(c.batch_shape) == (2,)
    n = Normal(T([0.0, 1.0]), T([1.0, 2.0]))
    close(n.log_prob(T([0.5, -1.0])), [-1.0439385175704956, -2.1120858192443848])
    close(n.entropy(), [1.4189385175704956, 2.1120858192443848])
    close(n.cdf(T([0.5, -1.0])), [0.6914624571800232, 0.15865525603294373])
    b = Bernoulli(logits=T([0.3, -2.0]))
    close(b.log_prob(T([1.0, 0.0])), [-0.5543552041053772, -0.12692809104919434])
    close(b.entropy(), [0.6820224523544312, 0.3653339147567749])
    u = Uniform(T([0.0, 1.0]), T([2.0, 4.0]))
    close(u.log_prob(T([1.0, 3.0])), [-0.6931471824645996, -1.0986123085021973])
    close(u.entropy(), [0.6931471824645996, 1.0986123085021973])
    close(kl_divergence(n, Normal(T([1.0, 1.0]), T([2.0, 1.0]))), [0.4431471824645996, 0.8068528175354004])
    close(kl_divergence(c, Categorical(logits=T([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]]))),
          [0.07795286178588867, 0.42560067772865295])
    close(kl_divergence(b, Bernoulli(probs=T([0.5, 0.5]))), [0.011124663054943085, 0.32781335711479187])
    ind = Independent(Normal(T([[0.0, 1.0]]), T([[1.0, 2.0]])), 1)
    close(ind.log_prob(T([[0.5, -1.0]])), [-1.0439385175704956 - 2.1120858192443848])
    oh = OneHotCategorical(probs=T([0.2, 0.3, 0.5]))
    close(oh.log_prob(T([0.0, 0.0, 1.0])), math.log(0.5))
    s = oh.sample((4,))
    assert tuple(s.shape) == (4, 3) and s.sum(-1).tolist() == [1.0] * 4


def test_validation_errors_use_pytorch_wording():
    with pytest.raises(ValueError, match=r"Expected parameter probs .* to satisfy the constraint Simplex\(\)"):
        Categorical(probs=rawdev.tensor([-0.1, 1.1]))
    c = Categorical(probs=rawdev.tensor([[0.2, 0.3, 0.5]]))
    with pytest.raises(ValueError, match=r"IntegerInterval\(lower_bound=0, upper_bound=2\)"):
        c.log_prob(rawdev.tensor([3]))
    with pytest.raises(ValueError, match=r"constraint GreaterThan\(lower_bound=0.0\)"):
        Normal(0.0, -1.0)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        Bernoulli()
    Normal(0.0, -1.0, validate_args=False)


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_sampling_statistics_and_reparameterized_gradients(dev, driver):
    rawdev.manual_seed(0)
    rawdev.cuda.manual_seed(0) if dev == "cuda" else None
    p = rawdev.tensor([0.1, 0.2, 0.7], device=dev)
    draws = Categorical(probs=p).sample((20000,)).cpu().numpy()
    freq = np.bincount(draws, minlength=3) / 20000
    assert np.all(np.abs(freq - [0.1, 0.2, 0.7]) < 5 * np.sqrt(np.array([0.1, 0.2, 0.7]) * 0.9 / 20000) + 1e-3)
    loc = rawdev.tensor([1.0, -2.0], device=dev, requires_grad=True)
    scale = rawdev.tensor([0.5, 2.0], device=dev, requires_grad=True)
    x = Normal(loc, scale).rsample((20000,))
    m, sd = x.mean(0).detach().cpu().numpy(), x.std(0).detach().cpu().numpy()
    assert np.all(np.abs(m - [1.0, -2.0]) < 5 * np.array([0.5, 2.0]) / np.sqrt(20000))
    assert np.all(np.abs(sd - [0.5, 2.0]) < 0.05 * np.array([0.5, 2.0]))
    x.mean(0).sum().backward()
    close(loc.grad, [1.0, 1.0], 1e-3)                 # d mean(loc + eps*scale) / d loc = 1
    assert abs(scale.grad.cpu().tolist()[0]) < 0.05   # d mean / d scale = mean(eps) ~ 0
    bern = Bernoulli(probs=rawdev.tensor([0.25], device=dev)).sample((20000,))
    assert abs(float(bern.mean()) - 0.25) < 5 * math.sqrt(0.25 * 0.75 / 20000)


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_reinforce_loop(dev, driver):
    rawdev.manual_seed(1)
    policy = rawdev.nn.Sequential(rawdev.nn.Linear(4, 16), rawdev.nn.ReLU(), rawdev.nn.Linear(16, 2)).to(dev)
    opt = rawdev.optim.Adam(policy.parameters(), lr=0.05)
    state = rawdev.ones(8, 4, device=dev)
    for _ in range(30):                                # action 1 pays 1, action 0 pays 0
        dist = Categorical(logits=policy(state))
        action = dist.sample()
        reward = action.float()
        loss = -(dist.log_prob(action) * (reward - reward.mean())).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    p1 = Categorical(logits=policy(state)).probs[:, 1].mean().item()
    assert p1 > 0.8, p1


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
        np.testing.assert_allclose(got, [ref(v, i) for i, v in enumerate(vals)], rtol=1e-10, atol=1e-12,
                                   err_msg=type(d).__name__)
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
        np.testing.assert_allclose(m.covariance_matrix.numpy(), cov, rtol=1e-12, atol=1e-14)
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
