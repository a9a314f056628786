"""rawdev.autograd.forward_ad and rawdev.func.jvp/linearize: J·t against central differences (float64 on the cpu)
and against the cpu result on the simulated GPU; PyTorch's errors and None tangents."""
import numpy as np
import pytest
import rawdev
import rawdev.autograd.forward_ad as fwAD
import rawdev.nn.functional as F

from _refs import rng


def f(x, w):
    return F.softmax(rawdev.tanh(x @ w) * x.sum(-1, keepdim=True), -1).log1p() / (1 + x.pow(2).sum())


def test_unpack_dual_tangent_is_the_directional_derivative(driver):
    r = rng()
    x0, t0, w0 = r.standard_normal((3, 4)), r.standard_normal((3, 4)), r.standard_normal((4, 5))
    h = 1e-6
    wd = rawdev.tensor(w0)
    fd = (f(rawdev.tensor(x0 + h * t0), wd) - f(rawdev.tensor(x0 - h * t0), wd)).numpy() / (2 * h)
    with fwAD.dual_level():
        x = fwAD.make_dual(rawdev.tensor(x0), rawdev.tensor(t0))
        y = f(x, wd)
        primal, tangent = fwAD.unpack_dual(y)
        np.testing.assert_allclose(primal.numpy(), f(rawdev.tensor(x0), wd).numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(tangent.numpy(), fd, rtol=1e-6, atol=1e-9)
        assert not primal.requires_grad and fwAD.unpack_dual(rawdev.ones(2)).tangent is None
    with fwAD.dual_level():     # the simulated GPU's float32 kernels against the float64 cpu value
        xc = fwAD.make_dual(rawdev.tensor(x0, dtype=rawdev.float32, device="cuda"),
                            rawdev.tensor(t0, dtype=rawdev.float32, device="cuda"))
        tc = fwAD.unpack_dual(f(xc, wd.float().cuda())).tangent
        np.testing.assert_allclose(tc.cpu().numpy(), fd, rtol=2e-3, atol=2e-5)
    assert fwAD.unpack_dual(y).tangent is None           # the level is closed


def test_forward_ad_errors_match_pytorchs():
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(rawdev.ones(2), rawdev.ones(2))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"forward gradient is of size \[3\]"):
            fwAD.make_dual(rawdev.ones(2), rawdev.ones(3))
        with pytest.raises(ValueError, match="floating point"):
            fwAD.make_dual(rawdev.ones(2, dtype=rawdev.int64), rawdev.ones(2))


def test_func_jvp_and_linearize_match_the_jacobian(driver):
    r = rng()
    a0, b0, ta, tb = (r.standard_normal(5) for _ in range(4))

    def g(a, b):
        return (a.sin() * b).cumsum(0) / (1 + b.exp())

    A, B = rawdev.tensor(a0), rawdev.tensor(b0)
    value, jt = rawdev.func.jvp(g, (A, B), (rawdev.tensor(ta), rawdev.tensor(tb)))
    ja, jb = rawdev.autograd.functional.jacobian(g, (A, B))
    np.testing.assert_allclose(value.numpy(), g(A, B).numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(jt.numpy(), ja.numpy() @ ta + jb.numpy() @ tb, rtol=1e-10, atol=1e-12)
    v, fn = rawdev.func.linearize(rawdev.exp, rawdev.tensor(a0, device="cuda", dtype=rawdev.float32))
    np.testing.assert_allclose(fn(rawdev.tensor(ta, device="cuda", dtype=rawdev.float32)).cpu().numpy(),
                               np.exp(a0) * ta, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="tuples"):
        rawdev.func.jvp(g, A, B)
