"""LayerNorm / RMSNorm / Embedding: float64 references written here, finite-difference gradients on the cpu,
the cuda path (simulator) against the cpu at odd sizes with non-contiguous inputs and poisoned outputs,
PyTorch's parameter names, init and errors."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(99)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def ref_layer_norm(x, w, b, eps, k, rms=False):
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = 0.0 if rms else x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _fd(f, x, w, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = ((f(xp) * w).sum() - (f(xm) * w).sum()) / (2 * eps)
    return g


@pytest.mark.parametrize("shape,ns", [((3, 7), (7,)), ((2, 5, 33), (33,)), ((4, 3, 5), (3, 5)), ((1, 1), (1,))])
@pytest.mark.parametrize("rms", [False, True])
def test_norm_values_and_cuda_matches_cpu(shape, ns, rms, driver, poison):
    x = (RNG.standard_normal(shape) * 3 + 100 * (not rms)).astype(np.float32)   # a large mean: Welford's case
    w = RNG.standard_normal(ns).astype(np.float32)
    b = RNG.standard_normal(ns).astype(np.float32)
    ref = ref_layer_norm(x.astype(np.float64), w, None if rms else b, 1e-5, len(ns), rms)
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(x).to(dev)
        if rms:
            y = F.rms_norm(t, ns, rawdev.tensor(w).to(dev), eps=1e-5)
        else:
            y = F.layer_norm(t, ns, rawdev.tensor(w).to(dev), rawdev.tensor(b).to(dev))
        np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-4, atol=2e-4)


def test_layer_norm_gradients_finite_differences():
    x = RNG.standard_normal((3, 6))
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    gw_out = RNG.standard_normal((3, 6))
    tx, tw, tb = (rawdev.tensor(a).requires_grad_() for a in (x, w, b))
    y = F.layer_norm(tx, (6,), tw, tb)
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    (y * rawdev.tensor(gw_out)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), _fd(lambda z: ref_layer_norm(z, w, b, 1e-5, 1), x, gw_out),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tw.grad.numpy(), _fd(lambda z: ref_layer_norm(x, z, b, 1e-5, 1), w, gw_out),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tb.grad.numpy(), gw_out.sum(0), rtol=1e-12, atol=1e-14)


def test_rms_norm_gradient_finite_differences():
    x, w = RNG.standard_normal((4, 5)), RNG.standard_normal(5)
    g = RNG.standard_normal((4, 5))
    tx, tw = rawdev.tensor(x).requires_grad_(), rawdev.tensor(w).requires_grad_()
    (F.rms_norm(tx, (5,), tw, eps=1e-6) * rawdev.tensor(g)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), _fd(lambda z: ref_layer_norm(z, w, None, 1e-6, 1, True), x, g),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tw.grad.numpy(), _fd(lambda z: ref_layer_norm(x, z, None, 1e-6, 1, True), w, g),
                               rtol=1e-6, atol=1e-7)


def test_layer_norm_module_cuda_gradients_match_cpu_on_a_transposed_input(driver, poison):
    x = RNG.standard_normal((37, 5)).astype(np.float32)
    g = RNG.standard_normal((5, 37)).astype(np.float32)
    grads = {}
    for dev in ("cpu", "cuda"):
        rawdev.manual_seed(0)
        ln = nn.LayerNorm(37).to(dev)
        with rawdev.no_grad():
            ln.weight.copy_(rawdev.tensor(np.linspace(0.5, 1.5, 37, dtype=np.float32)).to(dev))
        t = rawdev.tensor(x).to(dev).requires_grad_()
        (ln(t.t()) * rawdev.tensor(g).to(dev)).sum().backward()          # t.t() is a non-contiguous view
        grads[dev] = [t.grad.cpu().numpy(), ln.weight.grad.cpu().numpy(), ln.bias.grad.cpu().numpy()]
    for a, b in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_layer_norm_module_api():
    ln = nn.LayerNorm((3, 4), eps=1e-6)
    assert repr(ln) == "LayerNorm((3, 4), eps=1e-06, elementwise_affine=True)"
    assert list(ln.state_dict()) == ["weight", "bias"]
    assert (ln.weight.detach().numpy() == 1).all() and (ln.bias.detach().numpy() == 0).all()
    assert nn.LayerNorm(4, bias=False).bias is None
    assert list(nn.LayerNorm(4, elementwise_affine=False).state_dict()) == []
    assert list(nn.RMSNorm(8).state_dict()) == ["weight"]
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with shape \[\*, 5\], "
                                           r"but got input of size\[2, 3\]"):
        F.layer_norm(rawdev.ones(2, 3), (5,))


# ---------------------------------------------------------------------------------------------- embedding
def test_embedding_lookup_and_gradient_scatter_add(driver, poison):
    V, D = 11, 7
    w = RNG.standard_normal((V, D)).astype(np.float32)
    idx = RNG.integers(0, V, (5, 9))
    idx[0, :3] = 4                                       # repeated rows accumulate
    g = RNG.standard_normal((5, 9, D)).astype(np.float32)
    ref_gw = np.zeros((V, D))
    np.add.at(ref_gw, idx.reshape(-1), g.reshape(-1, D))
    for dev in ("cpu", "cuda"):
        tw = rawdev.tensor(w).to(dev).requires_grad_()
        out = F.embedding(rawdev.tensor(idx).to(dev), tw)
        assert tuple(out.shape) == (5, 9, D)
        np.testing.assert_array_equal(out.detach().cpu().numpy(), w[idx])
        (out * rawdev.tensor(g).to(dev)).sum().backward()
        np.testing.assert_allclose(tw.grad.cpu().numpy(), ref_gw, rtol=1e-5, atol=1e-5)


def test_embedding_padding_idx_and_from_pretrained(driver):
    for dev in ("cpu", "cuda"):
        e = nn.Embedding(6, 3, padding_idx=2).to(dev)
        assert (e.weight[2].detach().cpu().numpy() == 0).all()
        idx = rawdev.tensor([[2, 1, 2], [0, 2, 5]]).to(dev)
        e(idx).sum().backward()
        gw = e.weight.grad.cpu().numpy()
        assert (gw[2] == 0).all() and (gw[1] == 1).all() and (gw[5] == 1).all()
        pre = rawdev.tensor(np.arange(12, dtype=np.float32).reshape(4, 3)).to(dev)
        f = nn.Embedding.from_pretrained(pre)
        assert not f.weight.requires_grad
        np.testing.assert_array_equal(f(rawdev.tensor([3, 0]).to(dev)).cpu().numpy(), [[9, 10, 11], [0, 1, 2]])
    assert repr(nn.Embedding(6, 3, padding_idx=2)) == "Embedding(6, 3, padding_idx=2)"
    assert list(nn.Embedding(6, 3).state_dict()) == ["weight"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_embedding_scale_grad_by_freq_divides_each_row_by_its_count(driver, poison, dtype):
    V, D = 9, 5
    idx = RNG.integers(0, V, (4, 7))
    idx[0, :4] = 3                                           # one index many times
    idx[1, 0] = 1                                            # the padding row: no gradient whatever its count
    w = RNG.standard_normal((V, D)).astype(np.float32)
    g = RNG.standard_normal((4, 7, D)).astype(np.float32)
    counts = np.bincount(idx.reshape(-1), minlength=V)
    ref = np.zeros((V, D))
    np.add.at(ref, idx.reshape(-1), g.reshape(-1, D).astype(np.float64) / counts[idx.reshape(-1)][:, None])
    ref[1] = 0
    dt = getattr(rawdev, dtype)
    for dev in ("cpu", "cuda"):
        e = nn.Embedding(V, D, padding_idx=1, scale_grad_by_freq=True).to(dev)
        with rawdev.no_grad():
            e.weight.copy_(rawdev.tensor(w))
        e = e.to(dt)
        out = e(rawdev.tensor(idx).to(dev))
        (out * rawdev.tensor(g).to(dev).to(dt)).sum().backward()
        got = e.weight.grad.float().cpu().numpy()
        tol = 1e-6 if dt is rawdev.float32 else 1e-2      # bfloat16: the rounded gradient rows and the result
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
        assert e.weight.grad.dtype is dt


def test_embedding_scale_grad_by_freq_second_order():
    # for sum(out ** 2) each looked-up row's gradient is 2·w[i]·(count·1/count) = 2·w[i] (the scaling is not the
    # true derivative, so gradcheck does not apply); the gradient of <grad, v> is then 2·v on those rows
    idx = rawdev.tensor([[0, 2, 2], [1, 2, 0]])
    w0, v = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    used = np.isin(np.arange(4), [0, 1, 2])[:, None]
    w = rawdev.tensor(w0, requires_grad=True)
    gw, = rawdev.autograd.grad((F.embedding(idx, w, scale_grad_by_freq=True) ** 2).sum(), w, create_graph=True)
    np.testing.assert_allclose(gw.detach().numpy(), np.where(used, 2 * w0, 0), rtol=1e-12, atol=1e-14)
    (gw * rawdev.tensor(v)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.where(used, 2 * v, 0), rtol=1e-12, atol=1e-14)


def test_embedding_max_norm_renormalizes_looked_up_rows():
    w = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], dtype=np.float32)
    e = nn.Embedding.from_pretrained(rawdev.tensor(w), max_norm=1.0)
    out = e(rawdev.tensor([0, 1])).numpy()
    np.testing.assert_allclose(out[0], [0.6, 0.8], rtol=1e-5)
    np.testing.assert_allclose(out[1], [0.3, 0.4], rtol=1e-6)
    np.testing.assert_array_equal(e.weight.numpy()[2], [6.0, 8.0])          # not looked up: unchanged


def test_embedding_errors():
    w = rawdev.randn(4, 2)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        F.embedding(rawdev.ones(3), w)
    with pytest.raises(IndexError):
        F.embedding(rawdev.tensor([4]), w)


@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
@pytest.mark.parametrize("frozen", [None, "weight", "bias"])
def test_weight_and_bias_gradients_over_many_row_chunks(driver, poison, rms, frozen):
    """773 rows: three whole 256-row chunks of the cuda column reduction and a partial one (float32 partials, then
    their column sums); 45 columns: a whole 32-column tile and an edge tile. A transposed (non-contiguous) input,
    float64 references, and a frozen parameter's gradient not computed."""
    rows, D = 773, 45
    xt = RNG.standard_normal((D, rows)) * 2 + 5
    x = xt.T
    g = RNG.standard_normal((rows, D))
    w, b = RNG.standard_normal(D), RNG.standard_normal(D)
    mean = 0.0 if rms else x.mean(1, keepdims=True)
    xhat = (x - mean) / np.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + 1e-5)
    want = {"weight": (g * xhat).sum(0), "bias": g.sum(0)}
    norm = nn.RMSNorm(D, eps=1e-5) if rms else nn.LayerNorm(D)
    norm = norm.cuda()
    with rawdev.no_grad():
        norm.weight.copy_(rawdev.tensor(w, dtype=rawdev.float32).cuda())
        if not rms:
            norm.bias.copy_(rawdev.tensor(b, dtype=rawdev.float32).cuda())
    params = dict(norm.named_parameters())
    if frozen in params:
        params[frozen].requires_grad_(False)
    xt_dev = rawdev.tensor(xt, dtype=rawdev.float32).cuda().requires_grad_()
    t = xt_dev.t()
    assert not t.is_contiguous()
    (norm(t) * rawdev.tensor(g, dtype=rawdev.float32).cuda()).sum().backward()
    assert xt_dev.grad is not None and np.isfinite(xt_dev.grad.cpu().numpy()).all()
    for name, p in params.items():
        if name == frozen:
            assert p.grad is None
            continue
        assert p.grad.dtype is rawdev.float32 and p.grad.shape == (D,)
        got = p.grad.cpu().numpy().astype(np.float64)
        assert np.linalg.norm(got - want[name]) / np.linalg.norm(want[name]) < 1e-5, name


def test_layer_norm_weight_gradient_holds_no_rows_by_columns_buffer(driver):
    """The weight's and bias's gradients come from a column reduction: computing them alone allocates the
    per-chunk float32 partials and the two [D] results, not a [rows, D] buffer of products."""
    from rawdev.ops.dispatch import cuda_backend
    rows, D = 1000, 96
    x = rawdev.tensor(RNG.standard_normal((rows, D)), dtype=rawdev.float32).cuda()
    g = rawdev.tensor(RNG.standard_normal((rows, D)), dtype=rawdev.float32).cuda()
    w = rawdev.ones(D).cuda()
    _, mean, rstd = cuda_backend.row_norm(x, w, None, 1e-5, False)
    rawdev.cuda.synchronize()
    rawdev.cuda.reset_peak_memory_stats()
    before = rawdev.cuda.memory_allocated()
    dx, dw, db = cuda_backend.row_norm_bwd(g, x, mean, rstd, w, False, False, True, True)
    peak = rawdev.cuda.max_memory_allocated() - before
    assert dx is None and dw.shape == (D,) and db.shape == (D,)
    assert peak <= 2 * 4 * D * 4 + 2 * D * 4 + 4 * 512, peak    # 4 partial rows each, two results, rounding
    xv, gv = x.cpu().numpy().astype(np.float64), g.cpu().numpy().astype(np.float64)
    xhat = (xv - xv.mean(1, keepdims=True)) / np.sqrt(xv.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(dw.cpu().numpy(), (gv * xhat).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db.cpu().numpy(), gv.sum(0), rtol=1e-4, atol=1e-4)
