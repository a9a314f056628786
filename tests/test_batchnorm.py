"""BatchNorm1d/2d: float64 references written here, running statistics (momentum, cumulative average,
unbiased variance), train/eval, finite-difference gradients on the cpu, the cuda path (simulator) against the
cpu with poisoned outputs, buffers moving with the module, PyTorch's names and errors."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(77)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def ref_bn_train(x, w, b, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return y * w.reshape(shape) + b.reshape(shape), mean, var


def _fd(f, x, gout, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = ((f(xp) - f(xm)) * gout).sum() / (2 * eps)
    return g


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 7), (2, 5, 3, 4), (3, 2, 17, 19)])
def test_batch_norm_training_matches_reference_and_cuda(shape, driver, poison):
    x = RNG.standard_normal(shape) * 2 + 50          # a large mean: where one-pass E[x²]−E[x]² loses digits
    C = shape[1]
    w, b = RNG.standard_normal(C), RNG.standard_normal(C)
    ref, mean, var = ref_bn_train(x, w, b, 1e-5)
    n = x.size // C
    gout = RNG.standard_normal(shape)
    res = {}
    for dev in ("cpu", "cuda"):
        bn = nn.BatchNorm1d(C) if len(shape) < 4 else nn.BatchNorm2d(C)
        with rawdev.no_grad():
            bn.weight.copy_(rawdev.tensor(w.astype(np.float32)))
            bn.bias.copy_(rawdev.tensor(b.astype(np.float32)))
        bn.to(dev)
        tx = rawdev.tensor(x.astype(np.float32), device=dev, requires_grad=True)
        y = bn(tx)
        (y * rawdev.tensor(gout.astype(np.float32), device=dev)).sum().backward()
        res[dev] = [y.detach().cpu().numpy(), tx.grad.cpu().numpy(), bn.weight.grad.cpu().numpy(),
                    bn.bias.grad.cpu().numpy()]
        np.testing.assert_allclose(res[dev][0], ref, rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(bn.running_mean.cpu().numpy(), 0.1 * mean, rtol=1e-5)
        np.testing.assert_allclose(bn.running_var.cpu().numpy(), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-4)
        assert int(bn.num_batches_tracked.item()) == 1
    for a, c in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(c, a, rtol=1e-4, atol=1e-4)


def test_batch_norm_gradients_finite_differences():
    x = RNG.standard_normal((3, 2, 2, 3))
    w, b = RNG.standard_normal(2), RNG.standard_normal(2)
    gout = RNG.standard_normal(x.shape)
    tx, tw, tb = (rawdev.tensor(a).requires_grad_() for a in (x, w, b))
    y = F.batch_norm(tx, None, None, tw, tb, training=True)
    assert y.grad_fn.name() == "NativeBatchNormBackward0"
    (y * rawdev.tensor(gout)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), _fd(lambda z: ref_bn_train(z, w, b, 1e-5)[0], x, gout), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(tw.grad.numpy(), _fd(lambda z: ref_bn_train(x, z, b, 1e-5)[0], w, gout), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(tb.grad.numpy(), gout.sum(axis=(0, 2, 3)), rtol=1e-10, atol=1e-12)


def test_batch_norm_eval_uses_running_stats_and_its_gradient(driver):
    C = 4
    x = RNG.standard_normal((6, C, 3))
    rm, rv = RNG.standard_normal(C), RNG.random(C) + 0.5
    w, b = RNG.standard_normal(C), RNG.standard_normal(C)
    s = (1, -1, 1)
    ref = (x - rm.reshape(s)) / np.sqrt(rv.reshape(s) + 1e-5) * w.reshape(s) + b.reshape(s)
    gout = RNG.standard_normal(x.shape)
    for dev in ("cpu", "cuda"):
        bn = nn.BatchNorm1d(C)
        sd = {"weight": w, "bias": b, "running_mean": rm, "running_var": rv}
        bn.load_state_dict({k: rawdev.tensor(v_.astype(np.float32)) for k, v_ in sd.items()} |
                           {"num_batches_tracked": rawdev.tensor(7)})
        bn.to(dev).eval()
        tx = rawdev.tensor(x.astype(np.float32), device=dev, requires_grad=True)
        y = bn(tx)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
        (y * rawdev.tensor(gout.astype(np.float32), device=dev)).sum().backward()
        np.testing.assert_allclose(tx.grad.cpu().numpy(), gout * (w / np.sqrt(rv + 1e-5)).reshape(s), rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(bn.running_mean.cpu().numpy(), rm, rtol=1e-6)     # eval leaves them
        assert int(bn.num_batches_tracked.item()) == 7


def test_momentum_none_is_a_cumulative_average_and_no_tracking():
    bn = nn.BatchNorm1d(3, momentum=None)
    batches = [RNG.standard_normal((8, 3)) for _ in range(4)]
    for xb in batches:
        bn(rawdev.tensor(xb.astype(np.float32)))
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([xb.mean(0) for xb in batches], 0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean([xb.var(0, ddof=1) for xb in batches], 0),
                               rtol=1e-5)
    free = nn.BatchNorm2d(3, track_running_stats=False, affine=False)
    assert list(free.state_dict()) == [] and free.running_mean is None
    x = RNG.standard_normal((2, 3, 4, 4))
    free.eval()     # no running statistics: the batch's, in eval too
    np.testing.assert_allclose(free(rawdev.tensor(x)).numpy(), ref_bn_train(x, np.ones(3), np.zeros(3), 1e-5)[0],
                               rtol=1e-6, atol=1e-8)


def test_buffers_move_with_the_module_and_state_dict_names(driver):
    m = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4))
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                    "1.running_var", "1.num_batches_tracked"]
    rm = m[1].running_mean
    assert m.cuda() is m
    assert m[1].running_mean is rm and rm.is_cuda and m[1].num_batches_tracked.is_cuda
    assert m[1].num_batches_tracked.dtype == rawdev.int64
    m(rawdev.randn(2, 1, 6, 6, device="cuda"))
    assert int(m[1].num_batches_tracked.item()) == 1
    m.cpu()
    assert not rm.is_cuda and abs(float(rm.abs().sum())) > 0
    assert repr(m[1]) == "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"torch.Size\(\[1, 4\]\)"):
        nn.BatchNorm1d(4)(rawdev.randn(1, 4))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(4)(rawdev.randn(2, 4, 5))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(4)(rawdev.randn(2, 4, 5, 5))
