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


def _unfold_ref(x, kh, kw, dh, dw, ph, pw, sh, sw):
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((N, C * kh * kw, oh * ow))
    for c in range(C):
        for i in range(kh):
            for j in range(kw):
                for a in range(oh):
                    for b in range(ow):
                        out[:, (c * kh + i) * kw + j, a * ow + b] = xp[:, c, a * sh + i * dh, b * sw + j * dw]
    return out, (oh, ow)


@pytest.mark.parametrize("k,d,p,s", [((2, 3), (1, 2), 1, (2, 1)), (3, 1, 0, 1), ((1, 2), 2, (0, 1), 3)])
def test_unfold_fold(k, d, p, s, driver):
    """PyTorch 2.13 on arange(2*3*5*6) with k=(2,3), d=(1,2), p=1, s=(2,1): unfold sums to 26850 and
    fold(unfold(x))[1, 2, 3, 4] = 344; here against a loop reference, with gradients (fold's is unfold)."""
    x = RNG.standard_normal((2, 3, 7, 8))
    pair = lambda v: v if isinstance(v, tuple) else (v, v)   # noqa: E731
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = pair(k), pair(d), pair(p), pair(s)
    want, (oh, ow) = _unfold_ref(x, kh, kw, dh, dw, ph, pw, sh, sw)
    g = RNG.standard_normal(want.shape)
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 1e-5)):
        t = rawdev.tensor(x, dtype=dt, device=dev, requires_grad=True)
        u = nn.Unfold(k, d, p, s)(t)
        np.testing.assert_allclose(u.detach().cpu().numpy(), want, rtol=tol, atol=tol)
        (u * rawdev.tensor(g, dtype=dt, device=dev)).sum().backward()
        folded = F.fold(rawdev.tensor(g, dtype=dt, device=dev), (7, 8), k, d, p, s)
        np.testing.assert_allclose(t.grad.cpu().numpy(), folded.cpu().numpy(), rtol=tol, atol=tol)
        # fold is unfold's adjoint: <unfold(x), g> == <x, fold(g)>
        np.testing.assert_allclose(float((u.detach() * rawdev.tensor(g, dtype=dt, device=dev)).sum()),
                                   float((t.detach() * folded).sum()), rtol=10 * tol)
    y = rawdev.arange(2 * 3 * 5 * 6.0).reshape(2, 3, 5, 6)
    uu = F.unfold(y, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    assert tuple(uu.shape) == (2, 18, 12) and uu.sum().item() == 26850.0
    assert F.fold(uu, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))[1, 2, 3, 4].item() == 344.0
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(rawdev.ones(1, 5, 4), (3, 3), 2)
