"""Autograd engine + every op's backward against central finite differences (float64, cpu)."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
import rawdev.ops  # noqa: F401  (installs Tensor methods)
from rawdev.autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from rawdev.autograd import grad as autograd_grad
from rawdev.tensor.factory import from_numpy, tensor

RNG = np.random.default_rng(1234)


def t64(*shape, lo=None, requires_grad=True):
    a = RNG.standard_normal(shape)
    if lo is not None:
        a = np.abs(a) + lo
    return from_numpy(np.ascontiguousarray(a)).requires_grad_(requires_grad)


def numgrad(fn, inputs, eps=1e-6):
    """Central differences of sum(fn(*inputs) * w) for a fixed random w, for each input (evaluated without a graph:
    the values are the same, and recording 2·numel graphs that are never differentiated was most of the cost)."""
    with no_grad():
        out = fn(*inputs)
        w = RNG.standard_normal(tuple(out.shape))
        grads = []
        for x in inputs:
            a = x._host_storage()
            g = np.zeros_like(a)
            it = np.nditer(a, flags=["multi_index"])
            for _ in it:
                i = it.multi_index
                old = a[i]
                a[i] = old + eps
                fp = (np.asarray(fn(*inputs)) * w).sum()
                a[i] = old - eps
                fm = (np.asarray(fn(*inputs)) * w).sum()
                a[i] = old
                g[i] = (fp - fm) / (2 * eps)
            grads.append(g)
    return w, grads


def gradcheck(fn, *inputs, tol=1e-6):
    w, ref = numgrad(fn, inputs)
    for x in inputs:
        x.grad = None
    out = fn(*inputs)
    out.backward(from_numpy(np.array(w, order="C")))
    for x, r in zip(inputs, ref):
        assert x.grad is not None
        got = np.asarray(x.grad)
        err = np.linalg.norm(got - r) / max(np.linalg.norm(r), 1e-12)
        assert err < tol, f"relative error {err:.2e}"


OPS = {
    "add": (lambda a, b: a + b, [(3, 4), (3, 4)]),
    "add_broadcast": (lambda a, b: a + b, [(3, 4), (4,)]),
    "add_broadcast_col": (lambda a, b: rawdev.ops.add(a, b, alpha=2.5), [(3, 4), (3, 1)]),
    "sub": (lambda a, b: a - b, [(5, 3), (5, 3)]),
    "rsub_scalar": (lambda a: 2.0 - a, [(4,)]),
    "mul": (lambda a, b: a * b, [(2, 3), (2, 3)]),
    "mul_broadcast": (lambda a, b: a * b, [(2, 3), (1, 3)]),
    "mul_scalar": (lambda a: a * 3.5, [(2, 3)]),
    "div_scalar": (lambda a: a / 3.0, [(2, 3)]),
    "div": (lambda a, b: a / b, [(2, 3), ("pos", 2, 3)]),
    "neg": (lambda a: -a, [(3,)]),
    "div_broadcast": (lambda a, b: a / b, [(2, 3), ("pos", 3)]),
    "abs": (lambda a: a.abs(), [(4, 5)]),
    "exp": (lambda a: rawdev.exp(a), [(4, 5)]),
    "log": (lambda a: a.log(), [("pos", 4, 5)]),
    "pow3": (lambda a: a ** 3, [(3, 2)]),
    "pow_frac": (lambda a: a ** 0.5, [("pos", 3, 2)]),
    "pow_neg": (lambda a: rawdev.pow(a, -1.5), [("pos", 4)]),
    "max_dim": (lambda a: a.max(1).values, [(4, 5)]),
    "max_dim_keepdim": (lambda a: a.max(0, keepdim=True)[0], [(3, 4, 2)]),
    "min_dim": (lambda a: rawdev.min(a, -1).values, [(3, 4, 2)]),
    "max_all": (lambda a: a.max(), [(3, 4)]),
    "min_all": (lambda a: a.min(), [(3, 4)]),
    "pow2": (lambda a: a ** 2, [(3, 2)]),
    "sum_all": (lambda a: a.sum(), [(3, 4)]),
    "sum_dim": (lambda a: a.sum(1), [(3, 4, 2)]),
    "sum_keepdim": (lambda a: a.sum((0, 2), keepdim=True), [(3, 4, 2)]),
    "mean_all": (lambda a: a.mean(), [(3, 4)]),
    "mean_dim": (lambda a: a.mean(-1), [(3, 5)]),
    "reshape": (lambda a: (a.reshape(6, 2) * a.reshape(6, 2)).view(-1), [(3, 4)]),
    "flatten": (lambda a: a.flatten(1) * 2.0, [(2, 3, 2)]),
    "matmul": (lambda a, b: a @ b, [(3, 5), (5, 4)]),
    "matmul_vec": (lambda a, b: a @ b, [(3, 5), (5,)]),
    "matmul_batched": (lambda a, b: a @ b, [(2, 3, 5), (5, 4)]),
    "matmul_bmm": (lambda a, b: a @ b, [(2, 3, 5), (2, 5, 4)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(4, 5), (3, 5), (3,)]),
    "linear_3d": (lambda x, w: F.linear(x, w), [(2, 4, 5), (3, 5)]),
    "relu": (lambda a: F.relu(a), [(4, 5)]),
    "leaky_relu": (lambda a: F.leaky_relu(a, 0.2), [(4, 5)]),
    "gelu": (lambda a: F.gelu(a), [(4, 5)]),
    "gelu_tanh": (lambda a: F.gelu(a, approximate="tanh"), [(4, 5)]),
    "tanh": (lambda a: F.tanh(a), [(4, 5)]),
    "sigmoid": (lambda a: F.sigmoid(a), [(4, 5)]),
    "softmax": (lambda a: F.softmax(a, 1), [(3, 5)]),
    "softmax_dim0": (lambda a: F.softmax(a, 0), [(3, 5)]),
    "log_softmax": (lambda a: F.log_softmax(a, -1), [(3, 5)]),
    "mse_loss": (lambda a, b: F.mse_loss(a, b), [(4, 3), (4, 3)]),
    "mse_loss_sum": (lambda a, b: F.mse_loss(a, b, reduction="sum"), [(4, 3), (4, 3)]),
    "mse_loss_none": (lambda a, b: F.mse_loss(a, b, reduction="none"), [(4, 3), (4, 3)]),
    "t": (lambda a: a.t() * 1.5, [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradcheck(name):
    fn, shapes = OPS[name]
    ins = [t64(*s[1:], lo=0.5) if s and s[0] == "pos" else t64(*s) for s in shapes]
    gradcheck(fn, *ins)


TARGET = np.array([0, 3, 2, 4, 1, 3])


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 3},
                                {"label_smoothing": 0.1}, {"weight": True},
                                {"weight": True, "ignore_index": 2, "label_smoothing": 0.2},
                                {"weight": True, "ignore_index": 2, "label_smoothing": 0.3, "reduction": "sum"},
                                {"weight": True, "ignore_index": 3, "label_smoothing": 1.0, "reduction": "none"}])
def test_gradcheck_cross_entropy(kw):
    kw = dict(kw)
    if kw.get("weight"):
        kw["weight"] = from_numpy(np.abs(RNG.standard_normal(5)) + 0.1)
    y = from_numpy(TARGET.copy())
    gradcheck(lambda x: F.cross_entropy(x, y, **kw), t64(6, 5))


def test_cross_entropy_values():
    x = RNG.standard_normal((6, 5))
    lp = x - x.max(1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    ref = -lp[np.arange(6), TARGET].mean()
    got = F.cross_entropy(from_numpy(x), from_numpy(TARGET.copy())).item()
    assert abs(got - ref) < 1e-12
    # label smoothing: (1-e)*nll + e/C * sum(-logp)
    e = 0.1
    ref_s = ((1 - e) * -lp[np.arange(6), TARGET] + e / 5 * -lp.sum(1)).mean()
    assert abs(F.cross_entropy(from_numpy(x), from_numpy(TARGET.copy()), label_smoothing=e).item() - ref_s) < 1e-12
    # class-probability targets
    p = np.abs(RNG.standard_normal((6, 5)))
    p /= p.sum(1, keepdims=True)
    ref_p = -(p * lp).sum(1).mean()
    assert abs(F.cross_entropy(from_numpy(x), from_numpy(p)).item() - ref_p) < 1e-12


def test_cross_entropy_probs_grad():
    p = np.abs(RNG.standard_normal((4, 3)))
    p /= p.sum(1, keepdims=True)
    gradcheck(lambda x: F.cross_entropy(x, from_numpy(p)), t64(4, 3))


def test_dropout_mask_and_grad():
    x = t64(50, 40)
    rawdev.manual_seed(0)
    y = F.dropout(x, 0.3, training=True)
    yv, xv = np.asarray(y.detach()), np.asarray(x.detach())
    kept = yv != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(yv[kept], xv[kept] / 0.7)
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), kept / 0.7)
    assert F.dropout(x, 0.3, training=False) is x


def test_accumulation_and_zero():
    x = t64(3)
    (x * 2.0).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), 5.0)


def test_shared_input_and_diamond():
    x = t64(4)
    a = x * 2.0
    y = (a * a + a).sum()      # diamond through a
    y.backward()
    xv = np.asarray(x.detach())
    np.testing.assert_allclose(np.asarray(x.grad), 8 * xv + 2)


def test_backward_errors():
    x = t64(3)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    z = t64(3, requires_grad=False)
    with pytest.raises(RuntimeError, match="does not require grad"):
        z.sum().backward()
    s = (x * x).sum()
    s.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.backward()
    s2 = (x * x).sum()
    s2.backward(retain_graph=True)
    s2.backward()


def test_inplace_modification_detected():
    x = t64(3)
    y = x * 1.0
    z = F.sigmoid(y)
    z.add_(1.0)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[rawdev.DoubleTensor \[3\]\], "
                                           r"which is output 0 of SigmoidBackward0, is at version 1; expected "
                                           r"version 0 instead"):
        z.sum().backward()
    w = t64(3).detach()                  # saved by mul, not made by an op: PyTorch names no producer
    out = (x * w).sum()
    w.add_(1.0)
    with pytest.raises(RuntimeError, match=r"\[rawdev.DoubleTensor \[3\]\] is at version 1; expected version 0"):
        out.backward()


def test_leaf_inplace_error():
    x = t64(3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1.0)
    with no_grad():
        x.add_(1.0)


def test_no_grad_detach_requires_grad_():
    x = t64(3)
    with no_grad():
        y = x * 2.0
    assert not y.requires_grad and y.grad_fn is None
    assert is_grad_enabled() is not True or is_grad_enabled()

    @no_grad()
    def f(a):
        return a * 2.0
    assert not f(x).requires_grad
    with no_grad():
        with enable_grad():
            assert (x * 2.0).requires_grad
    with set_grad_enabled(False):
        assert not (x * 2.0).requires_grad
    assert is_grad_enabled()
    d = (x * 2.0).detach()
    assert not d.requires_grad and d.grad_fn is None
    u = t64(2, requires_grad=False)
    assert u.requires_grad_() is u and u.requires_grad
    assert (x * 2.0).grad_fn.name() == "MulBackward0"
    assert x.is_leaf and not (x * 2.0).is_leaf


def test_grad_function_and_retain_grad():
    x = t64(3)
    y = x * x
    y.retain_grad()
    s = y.sum()
    gx, = autograd_grad(s, x, retain_graph=True)
    np.testing.assert_allclose(np.asarray(gx), 2 * np.asarray(x.detach()))
    assert x.grad is None
    s.backward()
    np.testing.assert_allclose(np.asarray(y.grad), 1.0)


def test_backward_inputs():
    a, b = t64(2), t64(2)
    (a * b).sum().backward(inputs=[a])
    assert a.grad is not None and b.grad is None


def test_int_promotion_and_scalars():
    x = tensor([1, 2, 3])
    assert (x * 2.5).dtype is rawdev.float32
    assert (x + 1).dtype is rawdev.int64
    f = tensor([1.0, 2.0])
    assert (f + x[:2]).dtype is rawdev.float32
    assert np.allclose(np.asarray(1.0 / f), [1.0, 0.5])
    assert np.allclose(np.asarray(np.float32(2) * f), [2.0, 4.0])


def test_to_device_is_differentiable_like_pytorch(driver):
    """x.cuda() / h.cpu() / x.to(dtype) stay in the graph (ToCopyBackward0): the gradient reaches the
    source on its own device; a moved leaf is not a leaf; under no_grad, or to an integer dtype, the
    copy does not require grad."""
    xv = np.random.default_rng(5).standard_normal(7).astype(np.float32)
    x = tensor(xv, requires_grad=True)
    y = x.cuda()
    assert not y.is_leaf and y.requires_grad and type(y.grad_fn).__name__ == "ToCopyBackward0"
    h = y * 3.0
    (h.cpu() * tensor(xv)).sum().backward()           # cpu -> cuda -> cpu and back again
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * xv, rtol=1e-6)
    with no_grad():
        z = x.cuda()
    assert not z.requires_grad and z.is_leaf
    assert not x.to(dtype=rawdev.int64).requires_grad
    d = x.double()
    d.sum().backward()
    assert x.grad.dtype == rawdev.float32
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * xv + 1.0, rtol=1e-6)


def test_clone_is_differentiable_like_pytorch(driver):
    """x.clone() records CloneBackward0 (the gradient flows back to x); it was a new leaf that cut the
    graph. Under no_grad the clone is a plain copy that does not require grad."""
    x = tensor([1.0, -2.0, 3.0], requires_grad=True)
    c = x.clone()
    assert type(c.grad_fn).__name__ == "CloneBackward0" and not c.is_leaf and c.requires_grad
    (c * tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]
    with no_grad():
        n = x.clone()
    assert n.is_leaf and not n.requires_grad and n.tolist() == [1.0, -2.0, 3.0]
    xc = tensor([1.0, 2.0], requires_grad=True)
    yc = xc.cuda().clone()                      # the cuda path records the same node
    assert type(yc.grad_fn).__name__ == "CloneBackward0"
    (yc * 2.0).sum().backward()
    assert xc.grad.tolist() == [2.0, 2.0]


def test_full_reduction_node_names_like_pytorch():
    """x.sum() / x.mean() with no dim are SumBackward0 / MeanBackward0; with a dim, ...Backward1."""
    x = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert type(x.sum().grad_fn).__name__ == "SumBackward0"
    assert type(x.sum(0).grad_fn).__name__ == "SumBackward1"
    assert type(x.mean().grad_fn).__name__ == "MeanBackward0"
    assert type(x.mean(dim=(0, 1)).grad_fn).__name__ == "MeanBackward1"


def test_bool_tensor_with_int_scalar_promotes_to_int64():
    b = tensor([True, False])
    assert (b + 1).dtype is rawdev.int64 and (b + 1).tolist() == [2, 1]
    assert (b * 2).dtype is rawdev.int64 and (b * 2).tolist() == [2, 0]
    assert (b + True).dtype is rawdev.bool and (b + True).tolist() == [True, True]
    assert (b * 2.5).dtype is rawdev.float32


def test_cross_entropy_all_targets_ignored_gives_nan_loss_zero_grad():
    """PyTorch: mean over zero weight is nan, but every row's gradient is exactly 0 (rawdev's cpu path
    made it nan, and numpy warned)."""
    import warnings
    x = tensor([[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = F.cross_entropy(x, tensor([-100, -100]))
        loss.backward()
    assert np.isnan(loss.item())
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_cross_entropy_target_errors_match_pytorch():
    x = tensor(np.zeros((5, 4), np.float32))
    with pytest.raises(RuntimeError, match="^expected target dtype to be Long or Byte, but got Float$"):
        F.cross_entropy(x, tensor(np.zeros(5, np.float32)))        # not the input's shape: class indices
    with pytest.raises(RuntimeError, match="^0D or 1D target tensor expected, multi-target not supported$"):
        F.cross_entropy(x, tensor(np.zeros((5, 3), np.int64)))
    with pytest.raises(ValueError, match=r"^Expected input batch_size \(5\) to match target batch_size \(4\)\.$"):
        F.cross_entropy(x, tensor(np.zeros((4, 4), np.float32)))


def test_indexing_a_tensor_that_requires_grad_stays_in_the_graph(driver):
    """x[i] / x[a:b] record SelectBackward0 / SliceBackward0 (the rows' gradient, zero elsewhere); they
    returned a grad-free view that silently cut the graph."""
    p = tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    for dev in ("cpu", "cuda"):
        p.grad = None
        q = p.to(dev)
        y = (q * 2.0)[1]
        z = q[1:]
        assert type(y.grad_fn).__name__ == "SelectBackward0" and type(z.grad_fn).__name__ == "SliceBackward0"
        (y.sum() + (z * z).sum()).backward()
        assert p.grad.tolist() == [[0.0, 0.0], [8.0, 10.0], [10.0, 12.0]]
    with no_grad():
        assert not p[0].requires_grad


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_gradient_arrives_in_its_inputs_dtype(driver, device):
    """As PyTorch's engine does: the gradient a node receives is cast to the dtype of the tensor it is the gradient
    of, so a bfloat16 intermediate of a float32 sum sees a bfloat16 gradient in its hook and its own backward (and a
    float64 one, on the cpu, a float64 gradient), not the wider dtype of the op that consumed it."""
    xv = np.random.default_rng(9).standard_normal(6).astype(np.float32)
    b = tensor(xv, device=device).to(rawdev.bfloat16).requires_grad_()
    a = tensor(xv, device=device)
    cb = b * 2.0
    seen = {}
    cb.register_hook(lambda g: seen.__setitem__("bf16", g.dtype))
    loss = (a + cb).sum()        # float32
    if device == "cpu":          # float32 + float64 is float64: the float32 operand's gradient comes back float32
        d = tensor(xv).requires_grad_()
        cd = d * 3.0
        cd.register_hook(lambda g: seen.__setitem__("f32", g.dtype))
        loss = loss + (cd + a.double()).sum().float()
    loss.backward()
    assert seen == ({"bf16": rawdev.bfloat16} if device == "cuda" else {"bf16": rawdev.bfloat16, "f32": rawdev.float32})
    assert b.grad.dtype is rawdev.bfloat16
    np.testing.assert_array_equal(b.grad.float().cpu().numpy(), np.full(6, 2.0, np.float32))
    if device == "cpu":
        assert d.grad.dtype is rawdev.float32
        np.testing.assert_allclose(d.grad.numpy(), np.full(6, 3.0), rtol=1e-7)
