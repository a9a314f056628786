"""The norms and distances of rawdev/ops/distance.py (F.normalize, F.cosine_similarity / nn.CosineSimilarity,
rawdev.cdist, F.pdist) and F.pairwise_distance / nn.PairwiseDistance (every p): float64 references on the cpu,
the simulated GPU against the cpu, gradients."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn

RNG = np.random.default_rng()


def test_cosine_similarity_pairwise_distance_cdist(driver):
    a, b = RNG.standard_normal((5, 7)), RNG.standard_normal((5, 7))
    a[0] *= 1e-9                                                          # hits the eps clamp
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 1e-5)):
        ta = rawdev.tensor(a, dtype=dt, device=dev, requires_grad=True)
        tb = rawdev.tensor(b, dtype=dt, device=dev)
        for eps in (1e-8, 1e-3):
            got = F.cosine_similarity(ta, tb, 1, eps)
            na = np.maximum(np.linalg.norm(a, axis=1), eps)
            nb = np.maximum(np.linalg.norm(b, axis=1), eps)
            np.testing.assert_allclose(got.detach().cpu().numpy(), (a * b).sum(1) / (na * nb), rtol=tol, atol=tol)
        assert tuple(nn.CosineSimilarity(dim=-1)(ta, tb[0]).shape) == (5,)          # broadcast
        for p in (1, 2, 3, float("inf"), 0):
            d = a - b + 1e-6
            want = {1: np.abs(d).sum(1), 2: np.sqrt((d * d).sum(1)), 3: (np.abs(d) ** 3).sum(1) ** (1 / 3),
                    float("inf"): np.abs(d).max(1), 0: (d != 0).sum(1).astype(float)}[p]
            got = nn.PairwiseDistance(p=p)(ta, tb)
            np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=tol)
        x1, x2 = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 6, 3))
        t1 = rawdev.tensor(x1, dtype=dt, device=dev, requires_grad=True)
        got = rawdev.cdist(t1, rawdev.tensor(x2, dtype=dt, device=dev))
        want = np.sqrt(((x1[:, :, None, :] - x2[:, None, :, :]) ** 2).sum(-1))
        np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=tol)
        got.sum().backward()
        diff = x1[:, :, None, :] - x2[:, None, :, :]
        unit = diff / want[..., None]              # the gradient sums unit vectors: bound it by what cancels
        np.testing.assert_allclose(t1.grad.cpu().numpy(), unit.sum(2), rtol=10 * tol,
                                   atol=10 * tol * np.abs(unit).sum(2).max())
    with pytest.raises(RuntimeError, match="same number of columns"):
        rawdev.cdist(rawdev.ones(2, 3), rawdev.ones(2, 4))


def test_pdist_values_and_gradient(driver):
    r = np.random.default_rng()
    x = r.standard_normal((5, 3))
    i, j = np.triu_indices(5, 1)
    for p in (1.0, 2.0, 3.0):
        ref = (np.abs(x[i] - x[j]) ** p).sum(-1) ** (1 / p)
        for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 2e-5)):
            t = rawdev.tensor(x, dtype=dt, device=dev, requires_grad=True)
            y = F.pdist(t, p)
            np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=tol)
            y.sum().backward()
            assert t.grad.shape == (5, 3)
    t = rawdev.tensor(x, requires_grad=True)
    F.pdist(t).sum().backward()
    d = x[:, None] - x[None]
    n = np.linalg.norm(d, axis=-1)
    np.fill_diagonal(n, 1)
    np.testing.assert_allclose(t.grad.numpy(), (d / n[..., None]).sum(1), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p,dim", [(2, 1), (1, 0), (3, -1), (float("inf"), 1)])
def test_normalize(p, dim, driver):
    x = RNG.standard_normal((3, 6))
    x[1] = 0                                   # a zero row: divided by eps, stays 0
    n = np.linalg.norm(x, ord=p, axis=dim, keepdims=True)
    ref = x / np.maximum(n, 1e-12)
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(x.astype(np.float32), device=dev, requires_grad=True)
        y = F.normalize(t, p=p, dim=dim)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
        y.sum().backward()
        assert np.isfinite(t.grad.cpu().numpy()).all()
