"""rawdev.distributions against PyTorch 2.13's numbers (written here as literals) on the cpu and the simulated
GPU: log_prob, entropy, cdf, KL, validation errors, sample statistics, reparameterized gradients, and a small
REINFORCE loop (policy -> Categorical -> sample -> log_prob * return -> backward)."""
import math

import numpy as np
import pytest
import rawdev
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
