"""Batched matmul on cpu and cuda (simulator): broadcast batch dims, transposed (non-contiguous) operands,
odd sizes past the GEMM tiles, gradients against float64 references, PyTorch's shape error."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(5)
CASES = [((2, 3, 4, 5), (3, 5, 6)), ((4, 7, 33), (4, 33, 9)), ((1, 5, 2), (3, 2, 5)), ((6,), (2, 6, 3)),
         ((2, 1, 3, 4), (1, 5, 4, 2))]


@pytest.mark.parametrize("sa,sb", CASES)
def test_batched_matmul_values_and_gradients(sa, sb, driver):
    cuda_ops.set_poison(True)
    try:
        a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
        ref = np.matmul(a, b)
        w = RNG.standard_normal(ref.shape)
        ga_ref = np.matmul(w, np.swapaxes(b, -1, -2)) if a.ndim > 1 else (w[..., None, :] * b).sum(-1).sum(
            axis=tuple(range(w.ndim - 1)))
        for dev in ("cpu", "cuda"):
            ta = rawdev.tensor(a.astype(np.float32)).to(dev).requires_grad_()
            tb = rawdev.tensor(np.swapaxes(b, -1, -2).copy().astype(np.float32)).to(dev).transpose(-1, -2)
            tb = tb.detach().requires_grad_()           # a transposed (non-contiguous) leaf
            y = ta @ tb
            np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
            (y * rawdev.tensor(w.astype(np.float32)).to(dev)).sum().backward()
            if a.ndim > 1:
                ga = ga_ref
                while ga.ndim > a.ndim:
                    ga = ga.sum(0)
                for i, s in enumerate(sa):
                    if s == 1:
                        ga = ga.sum(i, keepdims=True)
                np.testing.assert_allclose(ta.grad.cpu().numpy(), ga, rtol=1e-4, atol=1e-4)
            assert tuple(tb.grad.shape) == sb
    finally:
        cuda_ops.set_poison(False)


def test_attention_scores_shape_on_cuda(driver):
    q = rawdev.randn(2, 4, 8, 16).cuda()
    s = q @ q.transpose(-2, -1)
    assert tuple(s.shape) == (2, 4, 8, 8)
    ref = np.matmul(q.cpu().numpy(), np.swapaxes(q.cpu().numpy(), -1, -2))
    np.testing.assert_allclose(s.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)


def test_batched_shape_error():
    with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2 tensor"):
        rawdev.ones(2, 3, 4) @ rawdev.ones(2, 5, 6)


@pytest.mark.parametrize("batch,m,k,n", [(5, 33, 17, 40), (70, 3, 4, 2)])
def test_a_batched_product_is_one_gemm_launch(batch, m, k, n, driver):
    a = RNG.standard_normal((batch, m, k)).astype(np.float32)
    b = RNG.standard_normal((batch, k, n)).astype(np.float32)
    ta, tb = rawdev.tensor(a).cuda(), rawdev.tensor(b).cuda()
    cuda_ops.set_poison(True)
    try:
        with rawdev.trace() as t:
            y = rawdev.bmm(ta, tb)
    finally:
        cuda_ops.set_poison(False)
    gemms = [c.owner for c in t.calls if c.fn == "cuLaunchKernel" and "gemm" in str(c.owner)]
    assert len(gemms) == 1 and gemms[0].endswith("_batched"), [c.owner for c in t.calls if c.fn == "cuLaunchKernel"]
    np.testing.assert_allclose(y.cpu().numpy(), np.matmul(a.astype(np.float64), b), rtol=1e-4, atol=1e-4)
