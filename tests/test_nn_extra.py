"""nn.ParameterList / nn.ParameterDict (registration, state_dict keys, moves, repr as PyTorch's), and the
distance functions: F.cosine_similarity / nn.CosineSimilarity, F.pairwise_distance / nn.PairwiseDistance (every
p), rawdev.cdist — float64 references on the cpu, the simulated GPU against the cpu, gradients."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn

RNG = np.random.default_rng()


def test_parameter_list_and_dict_register_and_move(driver):
    pl = nn.ParameterList([nn.Parameter(rawdev.randn(3, 4)), rawdev.zeros(2)])
    assert isinstance(pl[1], nn.Parameter) and pl[1].requires_grad        # a plain tensor is wrapped
    pl.append(rawdev.ones(1)).extend([rawdev.ones(2)])
    assert len(pl) == 4 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2", "3"]
    assert list(pl.state_dict()) == ["0", "1", "2", "3"] and pl[-1].shape == (2,)
    assert repr(pl).splitlines()[1] == "    (0): Parameter containing: [rawdev.float32 of size 3x4]"
    pd = nn.ParameterDict({"a": nn.Parameter(rawdev.randn(2)), "b": rawdev.zeros(3)})
    pd["c"] = rawdev.ones(1)
    assert list(pd) == ["a", "b", "c"] and list(pd.state_dict()) == ["a", "b", "c"] and "c" in pd
    assert repr(pd).splitlines()[1] == "    (a): Parameter containing: [rawdev.FloatTensor of size 2]"
    assert pd.pop("a").shape == (2,) and list(pd.keys()) == ["b", "c"]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([nn.Parameter(rawdev.ones(2)) for _ in range(2)])
            self.pd = nn.ParameterDict({"w": nn.Parameter(rawdev.ones(3))})

    m = M()
    assert [n for n, _ in m.named_parameters()] == ["ps.0", "ps.1", "pd.w"]
    first = m.ps[0]
    m.cuda()
    assert m.ps[0] is first and first.is_cuda and m.pd["w"].is_cuda     # moved in place, objects kept
    (m.ps[0].sum() + m.pd["w"].sum()).backward()
    assert m.ps[0].grad.cpu().tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="should not be called"):
        m.ps()


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
        np.testing.assert_allclose(t1.grad.cpu().numpy(), (diff / want[..., None]).sum(2), rtol=10 * tol)
    with pytest.raises(RuntimeError, match="same number of columns"):
        rawdev.cdist(rawdev.ones(2, 3), rawdev.ones(2, 4))
