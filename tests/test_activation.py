"""The activation family (rawdev/ops/activation.py) and the activations beyond the unary table: softmin, prelu,
glu, threshold/hardshrink/softshrink/rrelu, Softmax2d, gumbel_softmax, every activation's module and F forms, the
in-place forms, and the channel-wise (dropout3d included) and alpha dropouts: values against float64 numpy,
gradients by finite differences (cpu), the cuda path (simulator, poisoned outputs) against the cpu on
non-contiguous inputs. (test_softmax2d_lrn_channel_shuffle also covers LocalResponseNorm and ChannelShuffle.)"""
# ruff: noqa: B023  (each lambda is called inside the loop iteration that makes it)
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn as nn
import rawdev.nn.functional as F
from rawdev.ops import cuda as cuda_ops

from _composed_checks import DEVICES, check, num, on
from _refs import rng

RNG = np.random.default_rng(5)


def _softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def _sig(x):
    return 0.5 * (1 + np.tanh(x / 2))


def _prelu_ref(x, w):
    shape = [1] * x.ndim
    if x.ndim >= 2:
        shape[1] = -1
    return np.where(x > 0, x, np.reshape(w, shape) * x if w.size > 1 else w.reshape(()) * x)


# name -> (call(*tensors), reference(*arrays), arrays, grad indices)
CASES = {
    "softmin_dim1": (lambda x: F.softmin(x, 1), lambda x: _softmax(-x, 1), lambda: [RNG.standard_normal((6, 7))], (0,)),
    "softmin_dim0": (lambda x: F.softmin(x, dim=0), lambda x: _softmax(-x, 0), lambda: [RNG.standard_normal((5, 3))],
                     (0,)),
    "prelu_channels": (lambda x, w: F.prelu(x, w), _prelu_ref,
                       lambda: [RNG.standard_normal((4, 3, 5)), RNG.uniform(0.1, 0.5, 3)], (0, 1)),
    "prelu_single": (lambda x, w: F.prelu(x, w), _prelu_ref, lambda: [RNG.standard_normal((5, 7)), np.array([0.3])],
                     (0, 1)),
    "prelu_1d": (lambda x, w: F.prelu(x, w), _prelu_ref, lambda: [RNG.standard_normal(9), np.array([0.2])], (0, 1)),
    "glu_last": (lambda x: F.glu(x), lambda x: x[:, :3] * _sig(x[:, 3:]), lambda: [RNG.standard_normal((5, 6))],
                 (0,)),
    "glu_dim0": (lambda x: F.glu(x, 0), lambda x: x[:2] * _sig(x[2:]), lambda: [RNG.standard_normal((4, 3))], (0,)),
}


def _away_from_zero(a):
    return np.where(np.abs(a) < 1e-2, 0.5, a)


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_cpu_float64(name):
    from test_autograd import gradcheck
    call, ref, make, gidx = CASES[name]
    arrays = [_away_from_zero(a) for a in make()]
    ts = [rawdev.from_numpy(a) for a in arrays]
    np.testing.assert_allclose(np.asarray(call(*ts)), ref(*arrays), rtol=1e-12, atol=1e-14)
    for i in gidx:
        ts[i].requires_grad_()

    def fn(*g):
        full = list(ts)
        for i, t in zip(gidx, g):
            full[i] = t
        return call(*full)
    gradcheck(fn, *[ts[i] for i in gidx])


def _strided(a, dev, grad):
    a = np.asarray(a, np.float32)
    base = rawdev.tensor(np.repeat(a, 2, axis=-1), device=dev, requires_grad=grad)
    return base[..., ::2], base


def _cpu_vs_cuda(fn, arrays, gidx):
    outs, grads = [], []
    cuda_ops.set_poison(True)
    try:
        for dev in ("cpu", "cuda"):
            pairs = [_strided(a, dev, i in gidx) for i, a in enumerate(arrays)]
            y = fn(*[p[0] for p in pairs])
            w = rawdev.tensor(np.linspace(-1, 2, y.numel(), dtype=np.float32).reshape(tuple(y.shape)), device=dev)
            (y * w).sum().backward()
            outs.append(np.asarray(y.detach().cpu()))
            grads.append([np.asarray(pairs[i][1].grad.cpu()) for i in gidx])
    finally:
        cuda_ops.set_poison(False)
    assert not np.isnan(outs[1]).any()
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-6)
    for gc, gg in zip(*grads):
        assert not np.isnan(gg).any()
        assert np.linalg.norm(gg - gc) / max(np.linalg.norm(gc), 1e-30) < 1e-4
    return outs


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_matches_cpu(driver, name):
    call, ref, make, gidx = CASES[name]
    arrays = [_away_from_zero(a) for a in make()]
    outs = _cpu_vs_cuda(call, arrays, gidx)
    np.testing.assert_allclose(outs[1], ref(*arrays), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ modules against F, reprs
MODULES = [
    (nn.SiLU(), F.silu, "SiLU()"), (nn.Mish(), F.mish, "Mish()"),
    (nn.ELU(alpha=0.5), lambda x: F.elu(x, 0.5), "ELU(alpha=0.5)"),
    (nn.ELU(inplace=True), F.elu, "ELU(alpha=1.0, inplace=True)"),
    (nn.SELU(), F.selu, "SELU()"), (nn.SELU(True), F.selu, "SELU(inplace=True)"),
    (nn.CELU(alpha=2.0), lambda x: F.celu(x, 2.0), "CELU(alpha=2.0)"),
    (nn.Softplus(beta=2, threshold=10), lambda x: F.softplus(x, 2, 10), "Softplus(beta=2, threshold=10)"),
    (nn.Hardtanh(-2.0, 0.5), lambda x: F.hardtanh(x, -2.0, 0.5), "Hardtanh(min_val=-2.0, max_val=0.5)"),
    (nn.ReLU6(), F.relu6, "ReLU6()"), (nn.ReLU6(inplace=True), F.relu6, "ReLU6(inplace=True)"),
    (nn.Hardswish(), F.hardswish, "Hardswish()"), (nn.Hardsigmoid(), F.hardsigmoid, "Hardsigmoid()"),
    (nn.LogSigmoid(), F.logsigmoid, "LogSigmoid()"), (nn.Softsign(), F.softsign, "Softsign()"),
    (nn.Tanhshrink(), F.tanhshrink, "Tanhshrink()"), (nn.Softmin(dim=1), lambda x: F.softmin(x, 1), "Softmin(dim=1)"),
    (nn.GLU(), F.glu, "GLU(dim=-1)"), (nn.GLU(0), lambda x: F.glu(x, 0), "GLU(dim=0)"),
]


@pytest.mark.parametrize("m,fn,rep", MODULES, ids=[c[2] for c in MODULES])
def test_module_matches_functional(device_name, m, fn, rep):
    a = (RNG.standard_normal((4, 6)) * 4).astype(np.float32)
    got = m(rawdev.tensor(a, device=device_name))
    ref = fn(rawdev.tensor(a, device=device_name))
    np.testing.assert_array_equal(np.asarray(got.cpu()), np.asarray(ref.cpu()))
    assert repr(m) == rep


def test_prelu_module_learns_its_weight(device_name):
    m = nn.PReLU(3, init=0.1)
    assert repr(m) == "PReLU(num_parameters=3)" and m.weight.tolist() == pytest.approx([0.1] * 3)
    m = m.to(device_name)
    x = rawdev.tensor([[-1.0, 2.0, -3.0], [-2.0, -1.0, 1.0]], device=device_name)
    y = m(x)
    np.testing.assert_allclose(np.asarray(y.detach().cpu()), [[-0.1, 2.0, -0.3], [-0.2, -0.1, 1.0]], rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(m.weight.grad.cpu()), [-3.0, -1.0, -3.0])
    assert nn.PReLU().weight.shape == (1,)


def test_inplace_forms(device_name):
    a = (RNG.standard_normal((3, 5)) * 3).astype(np.float32)
    for fn, inplace_call in [
        (lambda x: F.elu(x, 0.3), lambda x: F.elu_(x, 0.3)),
        (lambda x: F.elu(x, 0.3), lambda x: F.elu(x, 0.3, inplace=True)),
        (F.selu, rawdev.selu_), (lambda x: F.celu(x, 1.5), lambda x: F.celu_(x, 1.5)),
        (lambda x: F.hardtanh(x, -1, 2), lambda x: F.hardtanh_(x, -1, 2)),
        (F.relu6, lambda x: F.relu6(x, inplace=True)), (F.silu, lambda x: F.silu(x, inplace=True)),
        (F.mish, lambda x: F.mish(x, True)), (F.hardswish, lambda x: F.hardswish(x, True)),
        (F.hardsigmoid, lambda x: F.hardsigmoid(x, inplace=True)),
    ]:
        ref = np.asarray(fn(rawdev.tensor(a, device=device_name)).cpu())
        x = rawdev.tensor(a, device=device_name)
        view = x.t()
        out = inplace_call(view)        # through a view: the base is written
        assert out is view
        np.testing.assert_allclose(np.asarray(x.cpu()), ref, rtol=1e-6, atol=1e-7)


def test_inplace_on_a_non_leaf_keeps_the_gradient():
    a = RNG.standard_normal((4, 3))
    x = rawdev.from_numpy(a).requires_grad_()
    y = x * 1.0
    F.elu_(y, 0.5)
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.where(a > 0, 1.0, 0.5 * np.exp(a)))


def test_activation_node_names():
    x = rawdev.randn(3, requires_grad=True)
    assert F.relu6(x).grad_fn.name() == "HardtanhBackward0"
    assert F.logsigmoid(x).grad_fn.name() == "LogSigmoidBackward0"
    assert F.silu(x).grad_fn.name() == "SiluBackward0"
    assert F.softplus(x).grad_fn.name() == "SoftplusBackward0"


def test_activation_errors():
    x = rawdev.randn(4, 3)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size. Found parameter "
                                           "numbers = 2 and channel size = 3."):
        F.prelu(x, rawdev.ones(2))
    with pytest.raises(RuntimeError, match="prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"):
        F.prelu(x, rawdev.ones(1, 3))
    with pytest.raises(AssertionError):
        nn.Hardtanh(1.0, -1.0)


def test_softplus_threshold_and_large_inputs():
    x = rawdev.tensor([-100.0, 0.0, 10.0, 25.0, 100.0])
    got = F.softplus(x).tolist()
    assert got[4] == 100.0 and got[3] == 25.0
    assert got[1] == pytest.approx(math.log(2)) and 0 <= got[0] < 1e-40
    assert F.logsigmoid(rawdev.tensor([-100.0, 100.0])).tolist()[0] == -100.0
    assert F.mish(rawdev.tensor([100.0])).tolist() == [100.0]


# ------------------------------------------------------------------ channel-wise and alpha dropout
@pytest.mark.parametrize("shape,fn,mod", [((4, 6, 5), F.dropout1d, nn.Dropout1d), ((6, 5), F.dropout1d, nn.Dropout1d),
                                          ((3, 8, 2, 3), F.dropout2d, nn.Dropout2d),
                                          ((8, 4, 3), F.dropout2d, nn.Dropout2d)])
def test_channel_dropout_zeroes_whole_channels(device_name, shape, fn, mod):
    import warnings
    rawdev.manual_seed(0)
    x = rawdev.tensor(RNG.uniform(1, 2, shape).astype(np.float32), device=device_name, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(x, 0.4)
    ya, xa = np.asarray(y.detach().cpu()), np.asarray(x.detach().cpu())
    chan = ya.reshape(ya.shape[:2] + (-1,)) if len(shape) > 2 or fn is F.dropout2d else ya.reshape(ya.shape[0], -1)
    xc = xa.reshape(chan.shape)
    for c, xcc in zip(chan.reshape(-1, chan.shape[-1]), xc.reshape(-1, chan.shape[-1])):
        assert (c == 0).all() or np.allclose(c, xcc / 0.6, rtol=1e-6)
    dropped = np.mean([(c == 0).all() for c in chan.reshape(-1, chan.shape[-1])])
    assert 0 < dropped < 1
    y.sum().backward()
    g = np.asarray(x.grad.cpu())
    np.testing.assert_allclose(g, np.where(ya == 0, 0, 1 / 0.6), rtol=1e-6)
    m = mod(0.4)
    assert repr(m) == f"{mod.__name__}(p=0.4, inplace=False)"
    m.eval()
    assert m(x) is x


def test_channel_dropout_errors_and_warnings():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(rawdev.randn(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(rawdev.randn(2, 3, 4))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(rawdev.randn(2, 3))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout1d(rawdev.randn(2, 3), 1.5)
    assert F.dropout2d(rawdev.ones(2, 3, 2, 2), 1.0).tolist() == rawdev.zeros(2, 3, 2, 2).tolist()


def test_dropout_inplace_writes_the_input(device_name):
    rawdev.manual_seed(3)
    x = rawdev.ones(4, 5, 3, device=device_name)
    out = F.dropout1d(x, 0.5, inplace=True)
    assert out is x
    xa = np.asarray(x.cpu())
    assert set(np.unique(xa)) <= {0.0, 2.0}


def test_alpha_dropout_keeps_mean_and_variance(device_name):
    rawdev.manual_seed(1)
    a = RNG.standard_normal((400, 250)).astype(np.float32)
    a[np.abs(a + 1.7580993408473766) < 1e-3] = 0.0     # where a kept element would equal a dropped one
    x = rawdev.tensor(a, device=device_name, requires_grad=True)
    p = 0.2
    y = F.alpha_dropout(x, p, training=True)
    ya = np.asarray(y.detach().cpu())
    alpha = 1.7580993408473766
    ka = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    kept = np.isclose(ya, a * ka + alpha * ka * p, rtol=1e-5, atol=1e-6)
    dropped = np.isclose(ya, -alpha * ka + alpha * ka * p, rtol=1e-5, atol=1e-6)
    assert (kept | dropped).all()
    assert abs(dropped.mean() - p) < 0.01
    assert abs(ya.mean()) < 0.02 and abs(ya.std() - 1) < 0.02
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad.cpu()), np.where(kept & ~dropped, ka, 0.0), rtol=1e-6)
    assert F.alpha_dropout(x, p) is x                # training defaults to False, as PyTorch
    m = nn.AlphaDropout(0.2)
    assert repr(m) == "AlphaDropout(p=0.2, inplace=False)"
    assert m(x).shape == x.shape
    m.eval()
    assert m(x) is x


def test_feature_alpha_dropout_is_per_channel():
    rawdev.manual_seed(2)
    y = np.asarray(F.feature_alpha_dropout(rawdev.ones(6, 8, 5), 0.5, training=True))
    assert (y == y[:, :, :1]).all() and len(np.unique(y)) == 2


@pytest.fixture(params=["cpu", "sim"])
def device_name(request):
    if request.param == "cpu":
        return "cpu"
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    return "cuda"


def test_shrink_threshold_rrelu(driver):
    r = rng()
    x = r.standard_normal((3, 7))
    x[np.abs(np.abs(x) - 0.5) < 1e-3] = 0.9            # away from the kinks, for the central differences
    x[np.abs(x - 0.1) < 1e-3] = 0.9
    for dev in DEVICES:
        check(dev, lambda t: F.threshold(t, 0.1, 20.0), lambda a: np.where(a > 0.1, a, 20.0), x)
        check(dev, F.hardshrink, lambda a: np.where(np.abs(a) > 0.5, a, 0.0), x)
        check(dev, F.softshrink, lambda a: np.where(a > 0.5, a - 0.5, np.where(a < -0.5, a + 0.5, 0.0)), x)
        check(dev, F.rrelu, lambda a: np.where(a >= 0, a, a * (1 / 8 + 1 / 3) / 2), x)
        m = nn.RReLU(0.1, 0.3).train()
        t = on(x, dev)
        y = num(m(t))
        slope = y[x < 0] / x[x < 0]
        assert (slope >= 0.1 - 1e-6).all() and (slope <= 0.3 + 1e-6).all() and slope.std() > 0.01
        assert (y[x >= 0] == num(t)[x >= 0]).all()
        y2 = nn.Threshold(0.1, 20.0, inplace=True)(t)
        assert y2 is t and num(t).max() == 20.0
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(rawdev.zeros(2), -1.0)


def test_softmax2d_lrn_channel_shuffle(driver):
    r = rng()
    x = r.standard_normal((2, 5, 3, 4))

    def lrn_ref(a, size=3, alpha=1e-2, beta=0.75, k=2.0):
        sq = np.pad(a * a, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
        div = sum(sq[:, j:j + a.shape[1]] for j in range(size)) / size
        return a / (k + alpha * div) ** beta

    for dev in DEVICES:
        check(dev, nn.Softmax2d(), lambda a: np.exp(a - a.max(1, keepdims=True)) /
              np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True), x)
        check(dev, nn.LocalResponseNorm(3, 1e-2, 0.75, 2.0), lrn_ref, x)
        check(dev, lambda t: F.local_response_norm(t, 4, 0.5), lambda a: lrn_ref(a, 4, 0.5, 0.75, 1.0), x)
        perm = np.arange(6).reshape(3, 2).T.reshape(-1)
        x6 = r.standard_normal((2, 6, 3))
        check(dev, nn.ChannelShuffle(3), lambda a: a[:, perm], x6)
    with pytest.raises(ValueError, match="divisible by groups"):
        F.channel_shuffle(rawdev.zeros(1, 5, 2), 2)


def test_gumbel_softmax(driver):
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    for dev in ("cpu", "cuda"):
        rawdev.manual_seed(3)
        lg = rawdev.tensor(np.tile(logits, (20000, 1)), dtype=rawdev.float32, device=dev, requires_grad=True)
        soft = F.gumbel_softmax(lg, tau=0.5)
        np.testing.assert_allclose(soft.detach().cpu().numpy().sum(-1), 1.0, rtol=1e-5)
        hard = F.gumbel_softmax(lg, hard=True)
        h = hard.detach().cpu().numpy()
        assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
        np.testing.assert_allclose(h.mean(0), [0.1, 0.2, 0.7], atol=0.015)     # argmax of logits + Gumbel noise
        (hard * rawdev.tensor([1.0, 2.0, 3.0], device=dev)).sum().backward()
        assert lg.grad is not None and float(lg.grad.abs().sum()) > 0           # the straight-through gradient


def test_dropout3d_and_instancenorm3d(driver):
    r = np.random.default_rng()
    x = r.standard_normal((3, 4, 2, 3, 5))
    for dev in ("cpu", "cuda"):
        rawdev.manual_seed(0)
        y = nn.Dropout3d(0.5)(rawdev.ones(8, 6, 2, 2, 2, device=dev)).cpu().numpy()
        per_channel = y.reshape(8, 6, -1)
        assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
        assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7
        m = nn.Dropout3d(0.5).eval()
        t = rawdev.tensor(x, device=dev)
        assert m(t) is t
        got = nn.InstanceNorm3d(4)(rawdev.tensor(x, dtype=rawdev.float32, device=dev)).cpu().numpy()
        mu, var = x.mean((2, 3, 4), keepdims=True), x.var((2, 3, 4), keepdims=True)
        np.testing.assert_allclose(got, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
