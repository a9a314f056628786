"""The cuda path of every op (shipped PTX, on the simulator and on a real GPU when present) against the cpu
path: forward values and gradients, float32, relative error < 1e-4. Op outputs are poisoned with NaN
before the kernels write them. Gradient correctness itself is checked in float64 in test_autograd.py."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.ops import cuda as C
from rawdev.tensor.factory import from_numpy

CASES = {
    "add": (lambda a, b: a + b, [(33, 17), (33, 17)]),
    "add_bias": (lambda a, b: a + b, [(33, 17), (17,)]),
    "add_col": (lambda a, b: rawdev.ops.add(a, b, alpha=2.5), [(9, 17), (9, 1)]),
    "sub": (lambda a, b: a - b, [(5, 67), (5, 67)]),
    "add_scalar": (lambda a: a + 1.5, [(7, 9)]),
    "rsub_scalar": (lambda a: 2.0 - a, [(45,)]),
    "mul": (lambda a, b: a * b, [(21, 13), (21, 13)]),
    "mul_broadcast": (lambda a, b: a * b, [(21, 13), (1, 13)]),
    "mul_scalar": (lambda a: a * 3.5, [(37, 3)]),
    "div_scalar": (lambda a: a / 3.0, [(37, 3)]),
    "div": (lambda a, b: a / b, [(20, 3), ("pos", 20, 3)]),
    "div_broadcast": (lambda a, b: a / b, [(20, 3), ("pos", 3)]),
    "div_int": (lambda a: a / rawdev.arange(1, 4).to(a.device), [(20, 3)]),
    "abs": (lambda a: a.abs(), [(45, 33)]),
    "exp": (lambda a: a.exp(), [(45, 33)]),
    "log": (lambda a: a.log(), [("pos", 45, 33)]),
    "pow3": (lambda a: a ** 3, [(13, 7)]),
    "pow_sqrt": (lambda a: a ** 0.5, [("pos", 13, 7)]),
    "pow_neg": (lambda a: rawdev.pow(a, -1.5), [("pos", 301)]),
    "max_dim1": (lambda a: a.max(1).values, [(37, 10)]),
    "min_dim0": (lambda a: a.min(0, keepdim=True)[0], [(37, 10)]),
    "max_mid": (lambda a: rawdev.max(a, 1).values, [(3, 300, 5)]),
    "max_long_row": (lambda a: a.max(-1).values, [(2, 9000)]),
    "max_all": (lambda a: a.max(), [(33, 47)]),
    "min_all": (lambda a: rawdev.min(a), [(1000,)]),
    "neg": (lambda a: -a, [(70,)]),
    "pow2": (lambda a: a ** 2, [(13, 2)]),
    "sum_all": (lambda a: a.sum(), [(33, 47)]),
    "sum_dim0": (lambda a: a.sum(0), [(33, 47)]),
    "sum_dim1": (lambda a: a.sum(1), [(33, 47)]),
    "sum_mid": (lambda a: a.sum(1, keepdim=True), [(3, 40, 7)]),
    "sum_02": (lambda a: a.sum((0, 2)), [(3, 40, 7)]),
    "mean_all": (lambda a: a.mean(), [(130, 3)]),
    "mean_dim": (lambda a: a.mean(-1), [(13, 50)]),
    "reshape": (lambda a: a.reshape(6, -1).flatten() * 2.0, [(3, 4, 5)]),
    "matmul": (lambda a, b: a @ b, [(67, 35), (35, 41)]),
    "matmul_vec": (lambda a, b: a @ b, [(67, 35), (35,)]),
    "matmul_3d": (lambda a, b: a @ b, [(2, 33, 35), (35, 40)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(70, 65), (33, 65), (33,)]),
    "linear_big": (lambda x, w, b: F.linear(x, w, b), [(300, 64), (260, 64), (260,)]),
    "linear_nobias": (lambda x, w: F.linear(x, w), [(5, 9), (130, 9)]),
    "relu": (lambda a: F.relu(a), [(45, 33)]),
    "leaky_relu": (lambda a: F.leaky_relu(a, 0.2), [(45, 33)]),
    "gelu": (lambda a: F.gelu(a), [(45, 33)]),
    "gelu_tanh": (lambda a: F.gelu(a, approximate="tanh"), [(45, 33)]),
    "tanh": (lambda a: F.tanh(a), [(45, 33)]),
    "sigmoid": (lambda a: F.sigmoid(a), [(45, 33)]),
    "softmax": (lambda a: F.softmax(a, 1), [(37, 10)]),
    "softmax_wide": (lambda a: F.softmax(a, -1), [(5, 1000)]),
    "log_softmax": (lambda a: F.log_softmax(a, -1), [(37, 10)]),
    "mse_loss": (lambda a, b: F.mse_loss(a, b), [(40, 3), (40, 3)]),
    "t": (lambda a: a.t() * 1.5, [(33, 40)]),
}

RNG = np.random.default_rng(99)


def _inputs(shapes):
    out = []
    for s in shapes:
        if s and s[0] == "pos":
            a = np.abs(RNG.standard_normal(s[1:])) + 0.5
        else:
            a = RNG.standard_normal(s)
        out.append(a.astype(np.float32))
    return out


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


def run_both(fn, arrays, extra=()):
    res = {}
    for dev in ("cpu", "cuda"):
        ins = [from_numpy(a.copy()).to(dev).requires_grad_() for a in arrays]
        out = fn(*ins, *[e.to(dev) for e in extra])
        w = from_numpy(np.random.default_rng(5).standard_normal(tuple(out.shape)).astype(np.float32)).to(dev)
        out.backward(w)
        res[dev] = (np.asarray(out.detach().cpu()), [np.asarray(i.grad.cpu()) for i in ins])
    return res


@pytest.fixture
def poisoned(driver):
    C.set_poison(True)
    yield driver
    C.set_poison(False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_matches_cpu(poisoned, name):
    fn, shapes = CASES[name]
    res = run_both(fn, _inputs(shapes))
    (yc, gc), (yg, gg) = res["cpu"], res["cuda"]
    assert not np.isnan(yg).any()
    assert rel(yg, yc) < 1e-4
    for a, b in zip(gg, gc):
        assert rel(a, b) < 1e-4


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 3},
                                {"label_smoothing": 0.1}, {"weight": True},
                                {"weight": True, "reduction": "sum"}, {"weight": True, "reduction": "none"},
                                {"weight": True, "ignore_index": 3},
                                {"label_smoothing": 0.2, "ignore_index": 3},
                                {"label_smoothing": 0.3, "reduction": "none", "ignore_index": 3},
                                {"label_smoothing": 1.0},
                                {"weight": True, "label_smoothing": 0.2, "ignore_index": 3},
                                {"weight": True, "label_smoothing": 0.2, "reduction": "sum"},
                                {"weight": True, "label_smoothing": 0.2, "reduction": "none", "ignore_index": 3},
                                {"weight": True, "label_smoothing": 0.1, "shape": (1, 1)},
                                {"weight": True, "label_smoothing": 0.1, "shape": (3, 45)}])
def test_cross_entropy_cuda(poisoned, kw):
    kw = dict(kw)
    n, c = kw.pop("shape", (37, 10))
    x = _inputs([(n, c)])
    tgt = RNG.integers(0, c, n)
    if "ignore_index" in kw:
        tgt[::4] = kw["ignore_index"]
    tgt = from_numpy(tgt)
    wt = from_numpy(RNG.uniform(0.1, 3.0, c).astype(np.float32)) if kw.pop("weight", None) else None
    res = run_both(lambda a, t, *w: F.cross_entropy(a, t, weight=w[0] if w else None, **kw), x,
                   (tgt,) + ((wt,) if wt is not None else ()))
    (yc, gc), (yg, gg) = res["cpu"], res["cuda"]
    assert not np.isnan(yg).any() and not np.isnan(gg[0]).any()
    assert rel(yg, yc) < 1e-4 and rel(gg[0], gc[0]) < 1e-4


def test_cross_entropy_module_with_weight_and_smoothing_on_cuda(poisoned):
    # nn.CrossEntropyLoss with weight= (a buffer: criterion.to(device) moves it, as in PyTorch)
    import rawdev.nn as nn
    x = _inputs([(9, 4)])[0]
    t = from_numpy(np.array([0, 1, 2, 3, 3, 2, 1, 0, -100]))
    w = np.array([0.5, 1.0, 2.0, 4.0], np.float32)
    out = {}
    for dev in ("cpu", "cuda"):
        crit = nn.CrossEntropyLoss(weight=from_numpy(w.copy()), label_smoothing=0.05).to(dev)
        assert crit.weight.device.type == dev
        a = from_numpy(x.copy()).to(dev).requires_grad_()
        loss = crit(a, t.to(dev))
        loss.backward()
        out[dev] = (loss.item(), np.asarray(a.grad.cpu()))
    assert abs(out["cuda"][0] - out["cpu"][0]) <= 1e-5 * abs(out["cpu"][0])
    assert rel(out["cuda"][1], out["cpu"][1]) < 1e-5


def test_cross_entropy_weight_checks_on_cuda(driver):
    x = rawdev.randn(4, 3).cuda()
    t = from_numpy(np.array([0, 1, 2, 1])).cuda()
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 3 classes"):
        F.cross_entropy(x, t, weight=rawdev.ones(4).cuda())
    with pytest.raises(TypeError, match="float32"):
        F.cross_entropy(x, t, weight=from_numpy(np.ones(3)).cuda())


LN2 = float(np.log(2.0))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_cross_entropy_hand_computed_values(poisoned, device):
    """Values worked out by hand (not from a reference implementation), on both paths."""
    def ce(logits, target, **kw):
        x = from_numpy(np.array(logits, np.float32)).to(device).requires_grad_()
        if "weight" in kw:
            kw["weight"] = from_numpy(np.array(kw["weight"], np.float32)).to(device)
        loss = F.cross_entropy(x, from_numpy(np.array(target, np.int64)).to(device), **kw)
        loss.sum().backward()
        return np.asarray(loss.detach().cpu(), np.float64), np.asarray(x.grad.cpu(), np.float64)

    # 2 classes, equal logits: log-probs are both -ln 2, so any target distribution gives ln 2;
    # grad = p - q = [0.5, 0.5] - [1 - e + e/2, e/2]
    for e in (0.0, 0.2, 1.0):
        loss, g = ce([[0, 0]], [0], label_smoothing=e)
        assert abs(loss - LN2) < 1e-6
        assert np.abs(g - [[-0.5 + e / 2, 0.5 - e / 2]]).max() < 1e-6
    # weights [1, 3], targets 0 and 1: l0 = ln 2 (logits [0, 0]), l1 = -ln(3/4) (logits [0, ln 3])
    L = [[0, 0], [0, np.log(3.0)]]
    l0, l1 = LN2, np.log(4 / 3)
    assert abs(ce(L, [0, 1], weight=[1, 3])[0] - (1 * l0 + 3 * l1) / 4) < 1e-6
    assert abs(ce(L, [0, 1], weight=[1, 3], reduction="sum")[0] - (l0 + 3 * l1)) < 1e-6
    assert np.abs(ce(L, [0, 1], weight=[1, 3], reduction="none")[0] - [l0, 3 * l1]).max() < 1e-6
    # an ignored row leaves the weighted mean: only the weight of the kept target (3) divides
    assert abs(ce(L, [-100, 1], weight=[1, 3])[0] - l1) < 1e-6
    # weights [1, 3], logits [0, 0], target 0, e = 0.2: the smoothing term is weighted per class,
    # loss = 0.8 * 1 * ln 2 + 0.1 * (1 + 3) * ln 2 = 1.2 ln 2, divided by w[target] = 1;
    # grad = (sum of the weighted target dist [0.9, 0.3]) * p - [0.9, 0.3] = [-0.3, 0.3]
    loss, g = ce([[0, 0]], [0], weight=[1, 3], label_smoothing=0.2)
    assert abs(loss - 1.2 * LN2) < 1e-6
    assert np.abs(g - [[-0.3, 0.3]]).max() < 1e-6
    # an ignored row with label smoothing counts in neither the sum nor the mean's denominator
    loss, g = ce([[0, 0], [5, -5]], [0, -100], label_smoothing=0.2)
    assert abs(loss - LN2) < 1e-6 and (g[1] == 0).all()
    # every target ignored: mean is nan (0/0), gradients 0
    loss, g = ce([[1, 2], [3, 4]], [-100, -100], weight=[1, 3], label_smoothing=0.2)
    assert np.isnan(loss) and (g == 0).all()


def test_mixing_devices_names_both(driver):
    a = rawdev.randn(3, 4)
    b = rawdev.randn(3, 4).cuda()
    with pytest.raises(RuntimeError, match=r"cpu and cuda:0|cuda:0 and cpu"):
        a + b
    with pytest.raises(RuntimeError, match=r"cuda:0 and cpu"):
        F.linear(rawdev.randn(2, 4).cuda(), rawdev.randn(3, 4))


def test_cuda_ops_run_on_compute_stream(driver):
    x = rawdev.randn(40, 30).cuda()
    w = rawdev.randn(20, 30).cuda()
    with rawdev.trace() as t:
        y = F.linear(x, w)
    launches = [c for c in t.calls if c.fn == "cuLaunchKernel"]
    assert launches and all(c.stream.endswith("compute") for c in launches)
    assert not any(c.fn.startswith("cuMemcpyDtoH") for c in t.calls)   # nothing comes back to the host
    assert y.is_cuda


def test_dropout_cuda_kernel(poisoned):
    """cuda dropout: Philox mask seeded from rawdev's generator; kept values scaled by 1/(1-p); the backward
    uses the saved mask; the same seed gives the same mask (what checkpoint's recomputation relies on)."""
    xv = RNG.standard_normal((60, 50)).astype(np.float32)
    x = from_numpy(xv.copy()).cuda().requires_grad_()
    rawdev.manual_seed(3)
    y = F.dropout(x, 0.4)
    yv = np.asarray(y.detach().cpu())
    kept = yv != 0
    assert 0.55 < kept.mean() < 0.65
    np.testing.assert_allclose(yv[kept], xv[kept] / 0.6, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad.cpu()), kept / 0.6, rtol=1e-6)
    rawdev.manual_seed(3)
    np.testing.assert_array_equal(np.asarray(F.dropout(x.detach(), 0.4).cpu()), yv)


def test_cross_entropy_near_tied_huge_logits_on_cuda(driver):
    """Logits around +-1e4 only a few units apart: the float32 ulp of a saved full logsumexp (~1e-3 at
    1e4) would cost ~1e-4 of the gradient; the ops save log-sum-exp less the row max instead."""
    rng = np.random.default_rng(21)
    n, c = 9, 13
    base = rng.choice([-1e4, 1e4], size=(n, 1))
    x = (base + rng.uniform(-3, 3, (n, c))).astype(np.float32)
    t = rng.integers(0, c, n)
    xt = from_numpy(x).cuda().requires_grad_()
    loss = F.cross_entropy(xt, from_numpy(t).cuda())
    loss.backward()
    x64 = x.astype(np.float64)
    lp = x64 - x64.max(1, keepdims=True)
    lp -= np.log(np.exp(lp).sum(1, keepdims=True))
    ref_loss = -lp[np.arange(n), t].mean()
    ref_grad = np.exp(lp)
    ref_grad[np.arange(n), t] -= 1
    ref_grad /= n
    assert abs(loss.item() - ref_loss) / abs(ref_loss) < 1e-5
    assert rel(xt.grad.cpu().numpy(), ref_grad) < 1e-5


def test_scalar_over_tensor_on_cuda(driver):
    """`1 / x` and `s / x` on cuda: the reciprocal kernel (the backend had no rdiv_scalar)."""
    a = np.array([1.0, -2.0, 4.0, 0.5], np.float32)
    x = rawdev.tensor(a).cuda().requires_grad_()
    y = 3.0 / x
    np.testing.assert_allclose(y.detach().cpu().numpy(), 3.0 / a, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), -3.0 / a ** 2, rtol=1e-6)
    np.testing.assert_allclose((1 / x.detach()).cpu().numpy(), 1 / a, rtol=1e-6)


def test_mean_of_an_empty_cuda_tensor_is_nan_as_on_the_cpu(driver):
    assert np.isnan(rawdev.zeros(0).mean().item())
    assert np.isnan(rawdev.zeros(0).cuda().mean().item())
    m = rawdev.zeros(3, 0).cuda().mean(1).cpu().numpy()
    assert m.shape == (3,) and np.isnan(m).all()


def test_a_0_dim_cpu_tensor_joins_cuda_arithmetic_as_a_scalar(driver):
    x = rawdev.tensor([1.0, 2.0]).cuda()
    s = rawdev.tensor(3.0)
    assert (x + s).device.type == "cuda" and (x + s).cpu().tolist() == [4.0, 5.0]
    assert (s * x).cpu().tolist() == [3.0, 6.0]
    np.testing.assert_allclose((x / s).cpu().numpy(), [1 / 3, 2 / 3], rtol=1e-6)
    assert (x > s).cpu().tolist() == [False, False]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x + rawdev.tensor([1.0, 2.0])


def test_matrix_products_refuse_mixed_dtypes_like_pytorch():
    lin = rawdev.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="^mat1 and mat2 must have the same dtype, but got Long and Float$"):
        lin(rawdev.tensor([[1, 2]]))
    with pytest.raises(RuntimeError, match="must have the same dtype, but got Double and Float"):
        rawdev.ones(2, 3, dtype=rawdev.float64) @ rawdev.ones(3, 2)
