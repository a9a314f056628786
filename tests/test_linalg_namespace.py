"""rawdev.linalg: vector_norm, matrix_norm, norm, vecdot against numpy.linalg (float64), on the cpu and the
simulated GPU, with gradients."""
import math

import numpy as np
import pytest
import rawdev

RNG = np.random.default_rng(8)


@pytest.mark.parametrize("ord_", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm(ord_, driver):
    A = RNG.standard_normal((2, 3, 5))
    want = np.linalg.norm(A, ord=ord_, axis=(-2, -1))
    np.testing.assert_allclose(rawdev.linalg.matrix_norm(rawdev.tensor(A), ord_).numpy(), want, rtol=1e-12, atol=1e-14)
    grads = []
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(A.astype(np.float32), device=dev, requires_grad=True)
        y = rawdev.linalg.matrix_norm(t, ord_, keepdim=True)
        assert tuple(y.shape) == (2, 1, 1)
        np.testing.assert_allclose(y.detach().cpu().numpy().ravel(), want, rtol=1e-5)
        y.sum().backward()
        grads.append(t.grad.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rawdev.linalg.matrix_norm(rawdev.tensor(A), "nuc").numpy(),
                               np.linalg.norm(A, "nuc", axis=(-2, -1)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ord_,dim", [(2, None), (1, 1), (math.inf, -1), (3, (0, 2)), (0, None)])
def test_vector_norm_and_norm(ord_, dim, driver):
    x = RNG.standard_normal((3, 4, 2))
    flat = x.ravel() if dim is None else x
    axis = None if dim is None else dim
    want = np.linalg.norm(flat, ord=ord_) if dim is None else \
        (np.sum(np.abs(x) ** ord_, axis=axis) ** (1 / ord_) if ord_ not in (math.inf,) else np.abs(x).max(axis=axis))
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(x.astype(np.float32), device=dev)
        np.testing.assert_allclose(rawdev.linalg.vector_norm(t, ord_, dim).cpu().numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(float(rawdev.linalg.norm(rawdev.tensor(x))), np.linalg.norm(x.ravel()),
                               rtol=1e-12, atol=1e-14)
    m = x[:, :, 0]
    np.testing.assert_allclose(float(rawdev.linalg.norm(rawdev.tensor(m), 1)), np.linalg.norm(m, 1),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rawdev.linalg.vecdot(rawdev.tensor(x), rawdev.tensor(x)).numpy(), (x * x).sum(-1),
                               rtol=1e-12, atol=1e-14)
