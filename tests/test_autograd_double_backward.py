"""Higher-order autograd (create_graph=True): double backward checked against central finite differences of the first
derivative (computed by plain first-order autograd, float64, cpu): for phi(x) = sum_i <grad_i(x), v_i> with
grad = d<f(x), w>/dx, the recorded second pass must give d(phi)/dx; gradient penalties, MAML-style inner steps,
user Functions' double backward, once_differentiable, autograd.functional's jacobian and hessian. cuda (the
simulator) is checked against cpu."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.autograd import Function
from rawdev.tensor.factory import from_numpy

import _poisoned_device

device = _poisoned_device.device   # the fixture its tests take

RNG = np.random.default_rng()


def t64(*shape, positive=False):
    a = RNG.standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return from_numpy(np.ascontiguousarray(a)).requires_grad_()


def first_grads(fn, inputs, w, create_graph):
    out = fn(*inputs)
    return rawdev.autograd.grad((out * from_numpy(w)).sum(), inputs, create_graph=create_graph)


def check_double_backward(fn, *inputs, eps=1e-6, tol=1e-6):
    w = RNG.standard_normal(tuple(fn(*inputs).shape))
    vs = [RNG.standard_normal(tuple(x.shape)) for x in inputs]

    def phi():
        gs = first_grads(fn, inputs, w, create_graph=False)
        return sum(float((np.asarray(g) * v).sum()) for g, v in zip(gs, vs))

    ref = []
    for x in inputs:
        a = x._host_storage()
        r = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            old = a[i]
            a[i] = old + eps
            fp = phi()
            a[i] = old - eps
            fm = phi()
            a[i] = old
            r[i] = (fp - fm) / (2 * eps)
        ref.append(r)
    gs = first_grads(fn, inputs, w, create_graph=True)
    assert all(g.requires_grad for g in gs)
    s = sum((g * from_numpy(v)).sum() for g, v in zip(gs, vs))
    got = rawdev.autograd.grad(s, inputs, allow_unused=True, materialize_grads=True)
    for g, r in zip(got, ref):
        err = np.linalg.norm(np.asarray(g) - r) / max(np.linalg.norm(r), 1e-9)
        assert err < tol, f"relative error {err:.2e}"


CASES = {
    "add_broadcast": (lambda a, b: (a + b) * (a + b), [(3, 4), (4,)], False),
    "add_alpha": (lambda a, b: rawdev.add(a, b, alpha=2.5) ** 2, [(3, 1), (3, 5)], False),
    "sub": (lambda a, b: (a - b) * a, [(4, 3), (4, 3)], False),
    "mul": (lambda a, b: a * b * a, [(2, 5), (5,)], False),
    "div": (lambda a, b: a / b, [(3, 4), (3, 4)], True),
    "scalar_ops": (lambda a: (3.0 - a) * (a * 2.0 + 1.0) / 4.0 - 2.0 / a, [(6,)], True),
    "neg": (lambda a: -(a * a), [(5,)], False),
    "pow3": (lambda a: a ** 3, [(7,)], False),
    "pow_half": (lambda a: a ** 0.5, [(7,)], True),
    "pow2": (lambda a: a ** 2 * a, [(7,)], False),
    "exp": (lambda a: rawdev.exp(a * 0.5), [(2, 3)], False),
    "log": (lambda a: rawdev.log(a) * a, [(2, 3)], True),
    "tanh": (lambda a: rawdev.tanh(a), [(9,)], False),
    "sigmoid": (lambda a: rawdev.sigmoid(a), [(9,)], False),
    "relu": (lambda a: F.relu(a) * a, [(11,)], False),
    "sin_cos_sqrt": (lambda a: rawdev.sin(a) * rawdev.cos(a) + rawdev.sqrt(a), [(5,)], True),
    "matmul": (lambda a, b: rawdev.tanh(a @ b), [(3, 4), (4, 2)], False),
    "matmul_batched": (lambda a, b: (a @ b) ** 2, [(2, 3, 4), (4, 2)], False),
    "matmul_vec": (lambda a, b: (a @ b) ** 2, [(4,), (4, 3)], False),
    "linear": (lambda x, w, b: rawdev.tanh(F.linear(x, w, b)), [(3, 4), (2, 4), (2,)], False),
    "linear_3d": (lambda x, w: F.linear(x, w) ** 2, [(2, 3, 4), (5, 4)], False),
    "sum_dim": (lambda a: a.sum(1, keepdim=True) * a, [(3, 4)], False),
    "mean": (lambda a: a.mean(0) ** 2, [(3, 4)], False),
    "mean_all": (lambda a: a.mean() * a, [(3, 4)], False),
    "views": (lambda a: (a.t().reshape(-1)[2:] ** 2).unsqueeze(0).expand(3, -1), [(4, 3)], False),
    "select": (lambda a: a[1] * a[:, 0].sum(), [(3, 4)], False),
    "softmax": (lambda a: F.softmax(a, dim=1) * a, [(3, 5)], False),
    "log_softmax": (lambda a: F.log_softmax(a, dim=-1) ** 2, [(2, 6)], False),
}

TARGET = from_numpy(np.array([2, 0, 4, 1, 4, 3]))
TARGET_P = from_numpy(np.array([[0.2, 0.9, 0.5], [1.0, 0.0, 0.3]]))
TARGET_45 = from_numpy(RNG.standard_normal((4, 5)))
BN_MEAN, BN_VAR = from_numpy(np.array([0.3, -0.2])), from_numpy(np.array([1.5, 0.7]))
POS_W = from_numpy(np.array([0.5, 2.0, 1.5]))
CE_WEIGHT = from_numpy(np.array([0.5, 1.0, 2.0, 1.5, 0.25]))
CASES.update({
    "cross_entropy": (lambda a: F.cross_entropy(a, TARGET), [(6, 5)], False),
    "cross_entropy_sum_weight": (lambda a: F.cross_entropy(a, TARGET, weight=CE_WEIGHT, reduction="sum"),
                                 [(6, 5)], False),
    "cross_entropy_none_ignore": (lambda a: F.cross_entropy(a, TARGET, ignore_index=4, reduction="none"),
                                  [(6, 5)], False),
    "cross_entropy_smoothing": (lambda a: F.cross_entropy(a * a, TARGET, weight=CE_WEIGHT, label_smoothing=0.2),
                                [(6, 5)], False),
    "cross_entropy_1d": (lambda a: F.cross_entropy(a, TARGET[0]), [(5,)], False),
    "mse_loss": (lambda a, b: F.mse_loss(rawdev.tanh(a), b), [(4, 3), (4, 3)], False),
    "gelu": (lambda a: F.gelu(a) * a, [(7,)], False),
    "silu": (lambda a: F.silu(a) * a, [(7,)], False),
    "erf": (lambda a: rawdev.erf(a) * a, [(7,)], False),
    "elu_selu_celu": (lambda a: F.elu(a * 3, 0.7) * F.selu(a) + F.celu(a * 2, 1.3) ** 2, [(9,)], False),
    "softplus": (lambda a: F.softplus(a * 4, beta=2.0, threshold=5.0) * a, [(9,)], False),
    "logsigmoid_softsign_tanhshrink": (lambda a: F.logsigmoid(a) * F.softsign(a) + F.tanhshrink(a) * a, [(6,)],
                                       False),
    "hard_family": (lambda a: (F.hardtanh(a * 2, -1.5, 1.0) + F.relu6(a * 8) + F.hardswish(a * 5)
                               + F.hardsigmoid(a * 5)) * a, [(9,)], False),
    "where": (lambda a, b: rawdev.where(a > 0, a * b, b * b) * a, [(3, 4), (4,)], False),
    "clamp": (lambda a: rawdev.clamp(a, min=-0.5, max=0.7) * a, [(9,)], False),
    "maximum": (lambda a, b: rawdev.maximum(a * a, b) * rawdev.minimum(a, b), [(3, 4), (4,)], False),
    "layer_norm": (lambda x, w, b: F.layer_norm(x * x, (4,), w, b) * x, [(2, 3, 4), (4,), (4,)], False),
    "layer_norm_2d_no_affine": (lambda x: F.layer_norm(x, (2, 3)) ** 2, [(3, 2, 3)], False),
    "rms_norm": (lambda x, w: F.rms_norm(x, (5,), w, eps=1e-3) * x, [(3, 5), (5,)], False),
    "dropout": (lambda a: (rawdev.manual_seed(7), F.dropout(a * a, 0.4))[1] * a, [(5, 9)], False),
    "index_select": (lambda a: rawdev.index_select(a, 1, from_numpy(np.array([2, 0, 2, 3]))) ** 2, [(3, 4)],
                     False),
    "embedding": (lambda w: F.embedding(from_numpy(np.array([[1, 3, 1], [0, 3, 2]])), w * w, padding_idx=0) ** 2,
                  [(4, 3)], False),
    "masked_fill_flip": (lambda a: rawdev.masked_fill(a, a > 0.3, 2.0).flip(1) * a, [(3, 4)], False),
    "pointwise_losses": (lambda a: F.l1_loss(a * a, TARGET_45) + F.smooth_l1_loss(a * a, TARGET_45, beta=0.5)
                         + F.huber_loss(a * a, TARGET_45, delta=0.7, reduction="sum"), [(4, 5)], False),
    "bce": (lambda a: F.binary_cross_entropy(rawdev.sigmoid(a), TARGET_P), [(2, 3)], False),
    "bce_logits": (lambda a: F.binary_cross_entropy_with_logits(a * a, TARGET_P, pos_weight=POS_W), [(2, 3)],
                   False),
    "kl_div": (lambda a: F.kl_div(F.log_softmax(a, 1), TARGET_P / 3, reduction="batchmean")
               + F.kl_div(a * a, TARGET_P, log_target=True, reduction="sum"), [(2, 3)], False),
    "max_min": (lambda a: a.max() * a + a.max(1).values.unsqueeze(1) * a.min(0, keepdim=True).values * a,
                [(3, 4)], False),
    "conv2d": (lambda x, w, b: rawdev.tanh(F.conv2d(x, w, b, stride=2, padding=1, dilation=1)),
               [(2, 2, 5, 6), (4, 2, 3, 3), (4,)], False),
    "conv2d_groups_dilation": (lambda x, w: F.conv2d(x * x, w, groups=2, dilation=2) ** 2,
                               [(1, 4, 6, 5), (2, 2, 2, 2)], False),
    "conv1d": (lambda x, w: F.conv1d(x, w, padding=1) ** 2, [(2, 3, 7), (2, 3, 3)], False),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=1) ** 2,
                         [(1, 3, 3, 4), (3, 2, 3, 3), (2,)], False),
    "pools": (lambda x: F.max_pool2d(x * x, 2, stride=2, padding=1) ** 2 + F.avg_pool2d(x * x, 3, stride=2,
                                                                                        padding=1) * 3,
              [(2, 2, 5, 5)], False),
    "adaptive_pools": (lambda x: F.adaptive_avg_pool2d(x * x, (2, 3)) * F.adaptive_max_pool2d(x, (2, 3)),
                       [(1, 2, 5, 7)], False),
    "batch_norm_train": (lambda x, w, b: F.batch_norm(x * x, None, None, w, b, training=True, eps=1e-3) * x,
                         [(3, 2, 4), (2,), (2,)], False),
    "batch_norm_2d_no_affine": (lambda x: F.batch_norm(x, None, None, training=True) ** 2, [(2, 3, 2, 2)], False),
    "batch_norm_eval": (lambda x, w: F.batch_norm(x * x, BN_MEAN, BN_VAR, w, None, training=False) ** 2,
                        [(4, 2), (2,)], False),
    "cat_stack": (lambda a, b: rawdev.cat([a * a, rawdev.stack([b, b * a[0]])], 0) ** 2, [(3, 4), (4,)], False),
})


@pytest.mark.parametrize("name", sorted(CASES))
def test_double_backward_matches_finite_differences(name):
    fn, shapes, positive = CASES[name]
    check_double_backward(fn, *[t64(*s, positive=positive) for s in shapes])


def test_grad_of_linear_function_is_constant():
    x = t64(3)
    g, = rawdev.autograd.grad((x * 2).sum(), x, create_graph=True)
    assert not g.requires_grad
    np.testing.assert_allclose(np.asarray(g), np.full(3, 2.0))


def test_backward_create_graph_keeps_grad_graph():
    x = t64(4)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    gx = x.grad
    x.grad = None
    gx.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), 6 * np.asarray(x.detach()), rtol=1e-12, atol=1e-14)


def test_gradient_penalty_through_mlp():
    rawdev.manual_seed(0)
    net = rawdev.nn.Sequential(rawdev.nn.Linear(3, 8), rawdev.nn.Tanh(), rawdev.nn.Linear(8, 1)).double()
    x = t64(5, 3)
    out = net(x)
    g, = rawdev.autograd.grad(out.sum(), x, create_graph=True)
    penalty = ((g * g).sum(1) - 1) ** 2
    penalty.mean().backward()
    # the penalty depends on every parameter but the last bias (it is not in d(out)/dx)
    assert [p.grad is not None for p in net.parameters()] == [True, True, True, False]
    # finite differences of the penalty in the first weight
    W = net[0].weight
    a = W.detach()._host_storage()

    def pen():
        xx = x.detach().requires_grad_()
        gg, = rawdev.autograd.grad(net(xx).sum(), xx)
        return float(((np.asarray(gg) ** 2).sum(1) - 1) @ ((np.asarray(gg) ** 2).sum(1) - 1)) / 5
    ref = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        old = a[i]
        a[i] = old + 1e-6
        fp = pen()
        a[i] = old - 1e-6
        fm = pen()
        a[i] = old
        ref[i] = (fp - fm) / 2e-6
    got = np.asarray(W.grad)
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-6


def test_unsupported_double_backward_raises():
    # mish's backward is one kernel: the first derivative is right, differentiating it again raises
    a = RNG.standard_normal(5)
    x = from_numpy(a.copy()).requires_grad_()
    g, = rawdev.autograd.grad(F.mish(x).sum(), x, create_graph=True)
    sp = np.log1p(np.exp(a))
    ref = np.tanh(sp) + a * (1 - np.tanh(sp) ** 2) / (1 + np.exp(-a))
    np.testing.assert_allclose(np.asarray(g.detach()), ref, rtol=1e-10, atol=1e-12)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="rawdev: double backward is not supported for MishBackward0"):
        rawdev.autograd.grad(g.sum(), x)
    q = from_numpy(RNG.standard_normal((1, 2, 3, 4))).requires_grad_()    # a Function with plain kernels
    g, = rawdev.autograd.grad((F.scaled_dot_product_attention(q, q, q) * q).sum(), q, create_graph=True)
    with pytest.raises(RuntimeError,
                       match="rawdev: double backward is not supported for ScaledDotProductAttentionBackward0"):
        rawdev.autograd.grad(g.sum(), q)


def test_user_function_double_backward_and_ctx():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            assert ctx.needs_input_grad == (True, False)
            return x * x * x * k

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x * x * ctx.k, None

    check_double_backward(lambda a: Cube.apply(a, 2.0), t64(6))


def test_double_backward_cuda_matches_cpu(device):
    a = RNG.standard_normal((5, 37)).astype(np.float32)
    b = RNG.standard_normal((37, 3)).astype(np.float32)
    v = RNG.standard_normal((5, 37)).astype(np.float32)

    def hvp(dev):
        x = rawdev.tensor(a, device=dev, requires_grad=True)
        w = rawdev.tensor(b, device=dev, requires_grad=True)
        y = (rawdev.sigmoid(x @ w) * rawdev.exp(x.mean(1, keepdim=True)) - x.t().sum(0).unsqueeze(1) / 3).sum()
        gx, gw = rawdev.autograd.grad(y, (x, w), create_graph=True)
        s = (gx * rawdev.tensor(v, device=dev)).sum() + (gw * gw).sum()
        return [np.asarray(t.cpu()) for t in rawdev.autograd.grad(s, (x, w))]

    ref = hvp("cpu")
    got = hvp(device)
    for g, r in zip(got, ref):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)


def test_maml_style_inner_step_cuda_matches_cpu(device):
    """One inner SGD step with create_graph=True, then the outer loss's gradient w.r.t. the initial weights."""
    rawdev.manual_seed(5)
    w0 = RNG.standard_normal((7, 33)).astype(np.float32) * 0.3
    x = RNG.standard_normal((9, 33)).astype(np.float32)
    y = RNG.integers(0, 7, 9)

    def outer(dev):
        w = rawdev.tensor(w0, device=dev, requires_grad=True)
        xs, ys = rawdev.tensor(x, device=dev), rawdev.tensor(y, device=dev)
        inner = F.cross_entropy(F.linear(xs, w), ys)
        gw, = rawdev.autograd.grad(inner, w, create_graph=True)
        w1 = w - 0.5 * gw
        F.cross_entropy(rawdev.relu(F.linear(xs, w1)) * 2, ys, label_smoothing=0.1).backward()
        return np.asarray(w.grad.cpu())

    ref = outer("cpu")
    got = outer(device)
    for g, r in zip(got, ref):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)


def test_once_differentiable_gives_constant_second_derivative():
    from rawdev.autograd.function import once_differentiable

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x

    x = t64(3)
    g, = rawdev.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(x.detach()))


# ------------------------------------------------------------------ autograd.functional
def test_jacobian_and_hessian():
    from rawdev.autograd.functional import hessian, jacobian, vjp
    a = RNG.standard_normal(3)
    x = from_numpy(a.copy())
    J = jacobian(lambda t: rawdev.sin(t) * t.sum(), x)
    ref = np.diag(np.cos(a) * a.sum()) + np.sin(a)[:, None]
    np.testing.assert_allclose(np.asarray(J), ref, rtol=1e-12, atol=1e-14)
    H = hessian(lambda t: (t ** 3).sum() + t[0] * t[1], x)
    Href = np.diag(6 * a)
    Href[0, 1] = Href[1, 0] = 1.0
    np.testing.assert_allclose(np.asarray(H), Href, rtol=1e-12, atol=1e-12)
    y = from_numpy(RNG.standard_normal(2))
    Jx, Jy = jacobian(lambda s, t: (s[:2] * t), (x, y))
    assert tuple(Jx.shape) == (2, 3) and tuple(Jy.shape) == (2, 2)
    np.testing.assert_allclose(np.asarray(Jy), np.diag(a[:2]), rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        jacobian(lambda s, t: s * 2, (x, y), strict=True)
    out, g = vjp(lambda t: t * t, x, from_numpy(np.ones(3)))
    np.testing.assert_allclose(np.asarray(g), 2 * a, rtol=1e-12, atol=1e-14)


def test_double_backward_activations_cuda_matches_cpu(device):
    a = RNG.standard_normal((3, 41)).astype(np.float32)
    v = RNG.standard_normal((3, 41)).astype(np.float32)

    def hvp(dev):
        x = rawdev.tensor(a, device=dev, requires_grad=True)
        y = (F.gelu(x) * F.silu(x) + F.layer_norm(x * x, (41,)) * x + rawdev.clamp(x, -0.3, 0.8) * F.softplus(x)
             + rawdev.where(x > 0, x * x, rawdev.cat([x[:, :20], x[:, 20:] * 2], 1))).sum()
        gx, = rawdev.autograd.grad(y, x, create_graph=True)
        return np.asarray(rawdev.autograd.grad((gx * rawdev.tensor(v, device=dev)).sum(), x)[0].cpu())

    ref = hvp("cpu")
    got = hvp(device)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_double_backward_index_ops_cuda_matches_cpu(device):
    a = RNG.standard_normal((6, 37)).astype(np.float32)
    v = RNG.standard_normal((6, 37)).astype(np.float32)
    idx = np.array([[5, 1, 1], [0, 5, 3]])

    def hvp(dev):
        w = rawdev.tensor(a, device=dev, requires_grad=True)
        i = rawdev.tensor(idx, device=dev)
        e = F.embedding(i, w * w, padding_idx=1)
        s = rawdev.index_select(w, 0, rawdev.tensor([4, 4, 2], device=dev))
        y = ((e.sum(0) * s).sum() + (rawdev.masked_fill(w, w > 0.5, 0.0) ** 3).sum()
             + (w.max(1).values ** 2).sum() * w.max())
        gw, = rawdev.autograd.grad(y, w, create_graph=True)
        return np.asarray(rawdev.autograd.grad((gw * rawdev.tensor(v, device=dev)).sum(), w)[0].cpu())

    ref = hvp("cpu")
    got = hvp(device)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_pointwise_loss_target_grad_is_a_delayed_error():
    x, t = t64(3), t64(3)
    gx, gt = rawdev.autograd.grad(F.l1_loss(x * x, t), (x, t), create_graph=True)
    np.testing.assert_allclose(np.asarray(gt.detach()), -np.sign(np.asarray((x * x - t).detach())) / 3)
    rawdev.autograd.grad(gx.sum(), x, retain_graph=True)    # the input's gradient is recorded
    with pytest.raises(RuntimeError, match="rawdev: double backward is not supported for L1LossBackward0"):
        rawdev.autograd.grad(gt.sum(), t)


def test_gradient_penalty_conv_net_cuda_matches_cpu(device):
    """WGAN-GP's penalty on a small conv critic: conv, batch norm, leaky_relu, pooling, linear, double backward."""
    rawdev.manual_seed(11)
    net = rawdev.nn.Sequential(rawdev.nn.Conv2d(3, 5, 3, stride=1, padding=1, bias=False), rawdev.nn.BatchNorm2d(5),
                               rawdev.nn.LeakyReLU(0.2),
                               rawdev.nn.MaxPool2d(2), rawdev.nn.Conv2d(5, 4, 3, padding=1), rawdev.nn.Tanh(),
                               rawdev.nn.AvgPool2d(2), rawdev.nn.Flatten(), rawdev.nn.Linear(4 * 2 * 2, 1))
    state = {k: v.clone() for k, v in net.state_dict().items()}
    x0 = RNG.standard_normal((3, 3, 9, 9)).astype(np.float32)

    def run(dev):
        net.load_state_dict(state)
        net.to(dev)
        net.zero_grad()
        x = rawdev.tensor(x0, device=dev, requires_grad=True)
        g, = rawdev.autograd.grad(net(x).sum(), x, create_graph=True)
        ((g.reshape(3, -1) ** 2).sum(1).sqrt() - 1).pow(2).mean().backward()
        # every parameter but the last bias shapes d(out)/dx
        assert [p.grad is None for p in net.parameters()] == [False] * 6 + [True]
        return [np.asarray(p.grad.cpu()) for p in list(net.parameters())[:6]]

    ref = run("cpu")
    got = run(device)
    for a, r in zip(got, ref):
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a, r, rtol=1e-3, atol=1e-4)
