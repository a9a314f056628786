"""square, diag, numel, type_as, F.one_hot, F.normalize, nn.init.orthogonal_/dirac_/eye_ against numpy
references, on the cpu and the simulated GPU, with gradients."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn

RNG = np.random.default_rng(5)


def test_square_and_diag_values_and_gradients(driver):
    x = RNG.standard_normal((4, 5))
    v = RNG.standard_normal(4)
    for dev in ("cpu", "cuda"):
        dt = rawdev.float32 if dev == "cuda" else rawdev.float64
        tol = 1e-5 if dev == "cuda" else 1e-12
        tx = rawdev.tensor(x, dtype=dt, device=dev, requires_grad=True)
        tx_t = tx.t()              # a non-contiguous input
        np.testing.assert_allclose(rawdev.square(tx_t).detach().cpu().numpy(), x.T ** 2, rtol=tol)
        rawdev.square(tx_t).sum().backward()
        np.testing.assert_allclose(tx.grad.cpu().numpy(), 2 * x, rtol=tol)
        for k in (-2, 0, 1):
            np.testing.assert_allclose(rawdev.diag(tx.detach(), k).cpu().numpy(), np.diag(x, k), rtol=tol)
            tv = rawdev.tensor(v, dtype=dt, device=dev, requires_grad=True)
            m = rawdev.diag(tv, k)
            np.testing.assert_allclose(m.detach().cpu().numpy(), np.diag(v, k), rtol=tol)
            g = RNG.standard_normal(tuple(m.shape))
            (m * rawdev.tensor(g, dtype=dt, device=dev)).sum().backward()
            np.testing.assert_allclose(tv.grad.cpu().numpy(), np.diag(g, k), rtol=tol)
    with pytest.raises(RuntimeError, match="Supports 1D or 2D tensors"):
        rawdev.diag(rawdev.ones(2, 2, 2))


def test_numel_type_as():
    assert rawdev.numel(rawdev.ones(2, 3, 4)) == 24
    t = rawdev.tensor([1.7, -2.2]).type_as(rawdev.tensor([1]))
    assert t.dtype == rawdev.int64 and t.tolist() == [1, -2]


def test_one_hot(driver):
    idx = RNG.integers(0, 5, (3, 4))
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(idx, device=dev)
        for n in (-1, 7):
            k = idx.max() + 1 if n == -1 else n
            out = F.one_hot(t, n)
            assert out.dtype == rawdev.int64 and tuple(out.shape) == (3, 4, k)
            np.testing.assert_array_equal(out.cpu().numpy(), np.eye(k, dtype=np.int64)[idx])
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(rawdev.tensor([3]), 2)
    with pytest.raises(RuntimeError, match="only applicable to index tensor of type LongTensor"):
        F.one_hot(rawdev.tensor([1.0]))


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


def test_orthogonal_dirac_eye_init():
    rawdev.manual_seed(0)
    for shape in ((6, 4), (3, 8), (4, 2, 3, 3)):
        w = rawdev.empty(shape)
        nn.init.orthogonal_(w, gain=2.0)
        m = w.numpy().reshape(shape[0], -1)
        gram = m @ m.T if shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-5)
    w = rawdev.empty(4, 2, 3, 3)
    nn.init.dirac_(w, groups=2)
    x = rawdev.randn(1, 2, 5, 5)
    y = F.conv2d(x, w, padding=1, groups=1)
    np.testing.assert_allclose(y.numpy()[0, :2], x.numpy()[0], rtol=1e-6)
    np.testing.assert_allclose(nn.init.eye_(rawdev.empty(2, 3)).numpy(), np.eye(2, 3))
