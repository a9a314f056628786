"""The losses of rawdev/ops/loss.py beyond cross_entropy/mse (those: test_kernels_loss.py): every reduction and weight
option against an independent float64 numpy reference, gradients by finite differences (cpu, float64), the cuda path
(simulator, poisoned outputs) against the cpu on non-contiguous inputs of odd sizes, modules against F, and
PyTorch's errors."""
import math
import warnings

import numpy as np
import pytest
import rawdev
import rawdev.nn as nn
import rawdev.nn.functional as F
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(11)


def sig(x):
    return 0.5 * (1 + np.tanh(x / 2))


def red(loss, reduction, denom=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (loss.size if denom is None else denom)


# name -> (call(F, *tensors, reduction), reference(*arrays, reduction), arrays(shape) builder, grad arg indices)
def _probs(*s):
    return RNG.uniform(0.05, 0.95, s)


def _away(a, b, gap=0.05, kinks=(0.0,)):
    """a with a - b kept away from the kinks (finite differences must not straddle them)."""
    for k in kinks:
        for sgn in (1, -1):
            d = a - b - sgn * k
            a = np.where(np.abs(d) < gap, a + 2 * gap, a)
    return a


def _pair(*s, kinks=(0.0,)):
    t = RNG.standard_normal(s)
    return [_away(RNG.standard_normal(s) * 2, t, kinks=kinks), t]


W5 = RNG.uniform(0.5, 2.0, 5)

CASES = {
    "l1": (lambda F, x, t, r: F.l1_loss(x, t, reduction=r),
           lambda x, t, r: red(np.abs(x - t), r), lambda: _pair(7, 5), (0, 1)),
    "smooth_l1": (lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.7),
                  lambda x, t, r: red(np.where(np.abs(x - t) < 0.7, 0.5 * (x - t) ** 2 / 0.7, np.abs(x - t) - 0.35), r),
                  lambda: _pair(7, 5, kinks=(0.0, 0.7)), (0, 1)),
    "smooth_l1_beta0": (lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0),
                        lambda x, t, r: red(np.abs(x - t), r), lambda: _pair(7, 5), (0, 1)),
    "huber": (lambda F, x, t, r: F.huber_loss(x, t, reduction=r, delta=1.3),
              lambda x, t, r: red(np.where(np.abs(x - t) < 1.3, 0.5 * (x - t) ** 2, 1.3 * (np.abs(x - t) - 0.65)), r),
              lambda: _pair(7, 5, kinks=(0.0, 1.3)), (0, 1)),
    "bce": (lambda F, x, t, r: F.binary_cross_entropy(x, t, reduction=r),
            lambda x, t, r: red(-(t * np.log(x) + (1 - t) * np.log(1 - x)), r), lambda: [_probs(7, 5), _probs(7, 5)],
            (0, 1)),
    "bce_weight": (lambda F, x, t, w, r: F.binary_cross_entropy(x, t, weight=w, reduction=r),
                   lambda x, t, w, r: red(-w * (t * np.log(x) + (1 - t) * np.log(1 - x)), r),
                   lambda: [_probs(7, 5), _probs(7, 5), W5], (0,)),
    "bce_logits": (lambda F, x, t, r: F.binary_cross_entropy_with_logits(x, t, reduction=r),
                   lambda x, t, r: red(-(t * np.log(sig(x)) + (1 - t) * np.log(1 - sig(x))), r),
                   lambda: [RNG.standard_normal((7, 5)) * 3, _probs(7, 5)], (0, 1)),
    "bce_logits_weights": (
        lambda F, x, t, w, pw, r: F.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw, reduction=r),
        lambda x, t, w, pw, r: red(-w * (pw * t * np.log(sig(x)) + (1 - t) * np.log(1 - sig(x))), r),
        lambda: [RNG.standard_normal((7, 5)) * 3, _probs(7, 5), RNG.uniform(0.5, 2, (7, 1)), W5], (0, 1, 3)),
    "kl_div": (lambda F, x, t, r: F.kl_div(x, t, reduction=r),
               lambda x, t, r: red(t * (np.log(t) - x), r) if r != "batchmean" else (t * (np.log(t) - x)).sum() / 7,
               lambda: [RNG.standard_normal((7, 5)), _probs(7, 5)], (0, 1)),
    "kl_div_log_target": (lambda F, x, t, r: F.kl_div(x, t, reduction=r, log_target=True),
                          lambda x, t, r: (red(np.exp(t) * (t - x), r) if r != "batchmean"
                                           else (np.exp(t) * (t - x)).sum() / 7),
                          lambda: [RNG.standard_normal((7, 5)), RNG.standard_normal((7, 5))], (0, 1)),
    "margin_ranking": (lambda F, a, b, y, r: F.margin_ranking_loss(a, b, y, margin=0.3, reduction=r),
                       lambda a, b, y, r: red(np.maximum(0, -y * (a - b) + 0.3), r),
                       lambda: [(lambda b, y: [_away(RNG.standard_normal(9), b + 0.3 * y, kinks=(0.0,)), b, y])(
                           RNG.standard_normal(9), np.where(RNG.random(9) < 0.5, -1.0, 1.0))][0], (0, 1)),
    "cosine_embedding": (
        lambda F, a, b, y, r: F.cosine_embedding_loss(a, b, y, margin=0.1, reduction=r),
        lambda a, b, y, r: red(np.where(y == 1, 1 - _cos(a, b), np.maximum(0, _cos(a, b) - 0.1)), r),
        lambda: [RNG.standard_normal((9, 5)), RNG.standard_normal((9, 5)), np.array([1., -1] * 4 + [1])], (0, 1)),
    "triplet": (lambda F, a, p, n, r: F.triplet_margin_loss(a, p, n, margin=2.0, reduction=r),
                lambda a, p, n, r: red(np.maximum(_dist(a, p, 2) - _dist(a, n, 2) + 2.0, 0), r),
                lambda: [RNG.standard_normal((9, 5)), RNG.standard_normal((9, 5)), RNG.standard_normal((9, 5))],
                (0, 1, 2)),
    "triplet_p1_swap": (lambda F, a, p, n, r: F.triplet_margin_loss(a, p, n, margin=3.0, p=1, swap=True, reduction=r),
                        lambda a, p, n, r: red(np.maximum(_dist(a, p, 1) - np.minimum(_dist(a, n, 1), _dist(p, n, 1))
                                                          + 3.0, 0), r),
                        lambda: [RNG.standard_normal((9, 5)), RNG.standard_normal((9, 5)),
                                 RNG.standard_normal((9, 5))], (0, 1, 2)),
    "triplet_p3": (lambda F, a, p, n, r: F.triplet_margin_loss(a, p, n, margin=2.0, p=3, reduction=r),
                   lambda a, p, n, r: red(np.maximum(_dist(a, p, 3) - _dist(a, n, 3) + 2.0, 0), r),
                   lambda: [RNG.standard_normal((9, 5)), RNG.standard_normal((9, 5)), RNG.standard_normal((9, 5))],
                   (0, 1, 2)),
}
REDUCTIONS = {name: ("none", "sum", "mean", "batchmean") if name.startswith("kl") else ("none", "sum", "mean")
              for name in CASES}
PARAMS = [(n, r) for n in CASES for r in REDUCTIONS[n]]


def _cos(a, b):
    return (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))


def _dist(a, b, p):
    return (np.abs(a - b + 1e-6) ** p).sum(-1) ** (1 / p)


def _call(name, tensors, r):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CASES[name][0](F, *tensors, r)


@pytest.mark.parametrize("name,reduction", PARAMS)
def test_value_against_float64(name, reduction):
    arrays = CASES[name][2]()
    got = np.asarray(_call(name, [rawdev.from_numpy(a) for a in arrays], reduction))
    ref = CASES[name][1](*arrays, reduction)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,reduction", PARAMS)
def test_gradient_cpu_float64(name, reduction):
    from test_autograd import gradcheck
    arrays = CASES[name][2]()
    ts = [rawdev.from_numpy(a) for a in arrays]
    grad_idx = CASES[name][3]
    for i in grad_idx:
        ts[i].requires_grad_()

    def fn(*g):
        full = list(ts)
        for i, t in zip(grad_idx, g):
            full[i] = t
        return _call(name, full, reduction)
    gradcheck(fn, *[ts[i] for i in grad_idx], tol=1e-5)


def _strided(a, dev, grad):
    """a as a non-contiguous view (every other element of a wider base); returns (view, base)."""
    a = np.asarray(a, np.float32)
    if a.ndim == 0:
        base = rawdev.tensor(a, device=dev, requires_grad=grad)
        return base, base
    wide = np.repeat(a, 2, axis=-1)
    base = rawdev.tensor(wide, device=dev, requires_grad=grad)
    return base[..., ::2], base


def _cpu_vs_cuda(fn, arrays, grad_idx):
    outs, grads = [], []
    cuda_ops.set_poison(True)
    try:
        for dev in ("cpu", "cuda"):
            pairs = [_strided(a, dev, i in grad_idx) for i, a in enumerate(arrays)]
            y = fn([p[0] for p in pairs])
            w = rawdev.tensor(np.linspace(-1, 2, max(y.numel(), 1), dtype=np.float32).reshape(tuple(y.shape)),
                              device=dev)
            (y * w).sum().backward()
            outs.append(np.asarray(y.detach().cpu()))
            grads.append([np.asarray(pairs[i][1].grad.cpu()) for i in grad_idx])
    finally:
        cuda_ops.set_poison(False)
    assert not np.isnan(outs[1]).any()
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-6)
    for gc, gg in zip(grads[0], grads[1]):
        assert not np.isnan(gg).any()
        assert np.linalg.norm(gg - gc) / max(np.linalg.norm(gc), 1e-30) < 1e-4
    return outs


@pytest.mark.parametrize("name,reduction", PARAMS)
def test_cuda_matches_cpu(driver, name, reduction):
    arrays = CASES[name][2]()
    _cpu_vs_cuda(lambda ts: _call(name, ts, reduction), arrays, CASES[name][3])


# ------------------------------------------------------------------ nll_loss
def _nll_ref(x, t, w, ignore, reduction):
    """x [N, C, ...] log-probabilities (moved class axis), t [N, ...]; or x [C], t []."""
    if x.ndim == 1:
        x, t = x[None], np.asarray(t)[None]
    xm = np.moveaxis(x, 1, -1)
    ts = np.where(t == ignore, 0, t)
    picked = np.take_along_axis(xm, ts[..., None], -1)[..., 0]
    ww = (w[ts] if w is not None else np.ones(t.shape)) * (t != ignore)
    loss = -picked * ww
    return red(loss, reduction, ww.sum())


NLL_SHAPES = [((7, 5), (7,)), ((3, 5, 4), (3, 4)), ((2, 5, 3, 3), (2, 3, 3)), ((5,), ())]


@pytest.mark.parametrize("shape,tshape", NLL_SHAPES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [-100, 2])
def test_nll_loss(shape, tshape, reduction, weighted, ignore):
    from test_autograd import gradcheck
    x = RNG.standard_normal(shape)       # not normalized: nll is nll on any input
    t = RNG.integers(0, 5, tshape)
    if t.ndim and ignore == 2:
        t.reshape(-1)[0] = 2
    elif not t.ndim and t == ignore:   # a lone ignored target: 'mean' is 0/0 (nan in PyTorch too), no gradient to check
        t = np.asarray((t + 1) % 5)
    w = W5 if weighted else None
    xt = rawdev.from_numpy(x).requires_grad_()
    tt, wt = rawdev.from_numpy(t.astype(np.int64)), (rawdev.from_numpy(w) if weighted else None)
    got = F.nll_loss(xt, tt, weight=wt, ignore_index=ignore, reduction=reduction)
    np.testing.assert_allclose(np.asarray(got.detach()), _nll_ref(x, t, w, ignore, reduction), rtol=1e-12, atol=1e-14)
    gradcheck(lambda a: F.nll_loss(a, tt, weight=wt, ignore_index=ignore, reduction=reduction), xt)
    m = nn.NLLLoss(weight=wt, ignore_index=ignore, reduction=reduction)
    np.testing.assert_array_equal(np.asarray(m(xt, tt).detach()), np.asarray(got.detach()))


def test_nll_loss_is_not_cross_entropy():
    x = rawdev.tensor([[1.0, 2.0, 3.0]])
    assert F.nll_loss(x, rawdev.tensor([2])).item() == -3.0


@pytest.mark.parametrize("shape,tshape", NLL_SHAPES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss_cuda_matches_cpu(driver, shape, tshape, reduction):
    x = RNG.standard_normal(shape)
    t = rawdev.tensor(RNG.integers(0, 5, tshape))
    t.reshape(-1)[0:1] if t.ndim else None
    for weighted in (False, True):
        def fn(ts, w=weighted):
            tt = t.to(ts[0].device)
            if tt.ndim:
                tt = tt.clone()
                tt.reshape(-1)[0] = 1   # an ignored target too
            wt = rawdev.tensor(W5, dtype=rawdev.float32, device=ts[0].device) if w else None
            return F.nll_loss(ts[0], tt, weight=wt, ignore_index=1 if tt.ndim else -100, reduction=reduction)
        _cpu_vs_cuda(fn, [x], (0,))


def test_nll_loss_errors():
    x = rawdev.randn(3, 4)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)\."):
        F.nll_loss(x, rawdev.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        F.nll_loss(x, rawdev.zeros(3, 2, dtype=rawdev.int64))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3, 5\], got \[3, 4\]"):
        F.nll_loss(rawdev.randn(3, 4, 5), rawdev.zeros(3, 4, dtype=rawdev.int64))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 classes or no classes"):
        F.nll_loss(x, rawdev.tensor([0, 1, 2]), weight=rawdev.ones(3))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.nll_loss(x, rawdev.tensor([0, 7, 2]))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.nll_loss(x, rawdev.tensor([0, 1, 2]), reduction="bogus")
    # every target ignored: mean is nan, gradient zero (PyTorch)
    xr = rawdev.randn(2, 3, requires_grad=True)
    out = F.nll_loss(xr, rawdev.tensor([-100, -100]))
    assert math.isnan(out.item())
    out.backward()
    assert np.asarray(xr.grad).tolist() == [[0.0] * 3] * 2


# ------------------------------------------------------------------ modules, options and errors
MODULE_CASES = [
    (nn.L1Loss(reduction="sum"), lambda x, t: F.l1_loss(x, t, reduction="sum"), "L1Loss()"),
    (nn.SmoothL1Loss(beta=0.5), lambda x, t: F.smooth_l1_loss(x, t, beta=0.5), "SmoothL1Loss()"),
    (nn.HuberLoss(reduction="none", delta=0.5), lambda x, t: F.huber_loss(x, t, reduction="none", delta=0.5),
     "HuberLoss()"),
    (nn.KLDivLoss(reduction="batchmean", log_target=True),
     lambda x, t: F.kl_div(x, t, reduction="batchmean", log_target=True), "KLDivLoss()"),
    (nn.BCEWithLogitsLoss(pos_weight=rawdev.tensor([1., 2, 3, 4, 5], dtype=rawdev.float64)),
     lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=rawdev.tensor([1., 2, 3, 4, 5],
                                                                                   dtype=rawdev.float64)),
     "BCEWithLogitsLoss()"),
]


@pytest.mark.parametrize("m,fn,rep", MODULE_CASES, ids=[c[2] for c in MODULE_CASES])
def test_modules_agree_with_functional(m, fn, rep):
    x, t = rawdev.from_numpy(RNG.standard_normal((4, 5))), rawdev.from_numpy(_probs(4, 5))
    np.testing.assert_array_equal(np.asarray(m(x, t)), np.asarray(fn(x, t)))
    assert repr(m) == rep


def test_three_input_modules_and_bce_module():
    a, b, c = (rawdev.from_numpy(RNG.standard_normal((6, 4))) for _ in range(3))
    y = rawdev.tensor([1.0, -1, 1, -1, 1, 1], dtype=rawdev.float64)
    assert nn.CosineEmbeddingLoss(margin=0.2)(a, b, y).item() == F.cosine_embedding_loss(a, b, y, 0.2).item()
    assert nn.MarginRankingLoss(0.5)(a[:, 0], b[:, 0], y).item() == F.margin_ranking_loss(a[:, 0], b[:, 0], y,
                                                                                         0.5).item()
    m = nn.TripletMarginLoss(margin=0.5, p=1, swap=True)
    assert m(a, b, c).item() == F.triplet_margin_loss(a, b, c, 0.5, 1, swap=True).item()
    assert repr(m) == "TripletMarginLoss()" and repr(nn.MarginRankingLoss()) == "MarginRankingLoss()"
    p, t = rawdev.from_numpy(_probs(3, 4)), rawdev.from_numpy(_probs(3, 4))
    w = rawdev.from_numpy(RNG.uniform(0.5, 2, (3, 1)))
    bce = nn.BCELoss(weight=w, reduction="sum")
    assert bce(p, t).item() == F.binary_cross_entropy(p, t, w, reduction="sum").item()
    assert "weight" in dict(bce.named_buffers())


def test_legacy_size_average_and_reduce():
    x, t = rawdev.randn(3, 4), rawdev.randn(3, 4)
    assert F.l1_loss(x, t, size_average=False).item() == pytest.approx(F.l1_loss(x, t, reduction="sum").item())
    assert tuple(F.smooth_l1_loss(x, t, reduce=False).shape) == (3, 4)
    assert nn.L1Loss(size_average=False).reduction == "sum"


def test_bce_clamps_log_at_minus_100():
    x = rawdev.tensor([0.0, 1.0, 0.5])
    t = rawdev.tensor([1.0, 0.0, 0.5])
    np.testing.assert_allclose(F.binary_cross_entropy(x, t, reduction="none").tolist(),
                               [100.0, 100.0, math.log(2)], rtol=1e-6)


def test_bce_with_logits_is_stable_for_large_logits():
    x = rawdev.tensor([1000.0, -1000.0, 80.0])
    t = rawdev.tensor([0.0, 1.0, 1.0])
    got = F.binary_cross_entropy_with_logits(x, t, reduction="none").tolist()
    assert got[:2] == [1000.0, 1000.0] and 0 <= got[2] < 1e-30


def test_loss_errors():
    x = rawdev.rand(3, 4)
    with pytest.raises(ValueError, match=r"Using a target size \(rawdev.Size\(\[3\]\)\) that is different to the "
                                         r"input size \(rawdev.Size\(\[3, 4\]\)\) is deprecated"):
        F.binary_cross_entropy(x, rawdev.rand(3))
    with pytest.raises(ValueError, match=r"Target size \(rawdev.Size\(\[3\]\)\) must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, rawdev.rand(3))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(x + 1, rawdev.rand(3, 4))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, x, beta=-1)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta."):
        F.huber_loss(x, x, delta=0)
    with pytest.raises(ValueError, match="mean2 is not a valid value for reduction"):
        F.l1_loss(x, x, reduction="mean2")
    with pytest.raises(RuntimeError, match="margin_ranking_loss : All input tensors should have same dimension"):
        F.margin_ranking_loss(x, x, rawdev.ones(3))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        F.cosine_embedding_loss(rawdev.rand(3), rawdev.rand(3), rawdev.ones(3))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        F.cosine_embedding_loss(x, x, rawdev.ones(3, 4))
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D inputs"):
        F.triplet_margin_loss(x, rawdev.rand(4), x)
    with pytest.warns(UserWarning, match="that is different to the input size"):
        F.l1_loss(x, rawdev.rand(4))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(x, x)


def test_target_broadcasting_matches_expanded_target():
    x, t = rawdev.randn(3, 4), rawdev.randn(4)
    with pytest.warns(UserWarning):
        got = F.smooth_l1_loss(x, t, reduction="none")
    assert got.tolist() == F.smooth_l1_loss(x, t.expand(3, 4), reduction="none").tolist()
