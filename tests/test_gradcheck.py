"""autograd.gradcheck / gradgradcheck and autograd.functional.jvp / hvp / vhp — and gradcheck run over the
composed op families (special functions, structure ops, decompositions, grid_sample, conv3d) in float64."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.autograd import GradcheckError, gradcheck, gradgradcheck
from rawdev.autograd.functional import hvp, jvp, vhp


def d(*shape, lo=-1.0, hi=1.0):
    return rawdev.tensor(np.random.default_rng().uniform(lo, hi, shape), dtype=rawdev.float64, requires_grad=True)


class _WrongSquare(rawdev.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x                     # should be 2x


def test_gradcheck_passes_right_and_catches_wrong_backwards():
    x = d(4)
    assert gradcheck(rawdev.sin, (x,)) and gradgradcheck(rawdev.sin, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(_WrongSquare.apply, (x,))
    assert gradcheck(_WrongSquare.apply, (x,), raise_exception=False) is False
    with pytest.warns(UserWarning, match="not a double precision"):      # (float32 is too coarse to pass)
        gradcheck(rawdev.sin, (rawdev.randn(3, requires_grad=True),), raise_exception=False)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(rawdev.sin, (rawdev.randn(3, dtype=rawdev.float64),))


def test_jvp_hvp_vhp():
    x = rawdev.tensor([1.0, 2.0, -0.5], dtype=rawdev.float64)
    v = rawdev.tensor([0.3, -1.0, 2.0], dtype=rawdev.float64)
    out, jv = jvp(lambda t: t ** 3, x, v)
    np.testing.assert_allclose(jv.numpy(), 3 * x.numpy() ** 2 * v.numpy())
    np.testing.assert_allclose(out.numpy(), x.numpy() ** 3)

    def f(t):
        return (t ** 3).sum() + t[0] * t[1]
    H = np.diag(6 * x.numpy())
    H[0, 1] = H[1, 0] = 1.0
    for fn in (hvp, vhp):
        val, hv = fn(f, x, v)
        np.testing.assert_allclose(hv.numpy(), H @ v.numpy())
        assert val.item() == pytest.approx(f(x).item())


@pytest.mark.parametrize("name,fn,args", [
    ("lgamma", rawdev.lgamma, lambda: (d(5, lo=0.3, hi=6),)),
    ("digamma", rawdev.digamma, lambda: (d(5, lo=0.3, hi=6),)),
    ("polygamma2", lambda x: rawdev.polygamma(2, x), lambda: (d(4, lo=0.5, hi=4),)),
    ("erfinv", rawdev.erfinv, lambda: (d(5, lo=-0.9, hi=0.9),)),
    ("erfc", rawdev.erfc, lambda: (d(5, lo=-3, hi=3),)),
    ("xlogy", rawdev.xlogy, lambda: (d(4), d(4, lo=0.2, hi=2))),
    ("logaddexp", rawdev.logaddexp, lambda: (d(4), d(4))),
    ("sinc", rawdev.sinc, lambda: (d(5),)),
    ("cross", lambda a, b: rawdev.linalg.cross(a, b), lambda: (d(2, 3), d(2, 3))),
    ("kron", rawdev.kron, lambda: (d(2, 2), d(2, 3))),
    ("quantile", lambda x: rawdev.quantile(x, 0.3, dim=1), lambda: (d(3, 5),)),
    ("diff", lambda x: rawdev.diff(x, n=2), lambda: (d(2, 5),)),
    ("inv", rawdev.linalg.inv, lambda: (d(3, 3) + 3 * rawdev.eye(3, dtype=rawdev.float64),)),
    ("det", rawdev.linalg.det, lambda: (d(2, 3, 3),)),
    ("solve", rawdev.linalg.solve, lambda: (d(3, 3) + 3 * rawdev.eye(3, dtype=rawdev.float64), d(3, 2))),
    ("cholesky", lambda a: rawdev.linalg.cholesky(a @ a.mT + rawdev.eye(3, dtype=rawdev.float64)), lambda: (d(3, 3),)),
    ("qr", lambda a: rawdev.linalg.qr(a).Q, lambda: (d(4, 3),)),
    ("eigvalsh", lambda a: rawdev.linalg.eigvalsh(a + a.mT), lambda: (d(3, 3),)),
    ("svdvals", rawdev.linalg.svdvals, lambda: (d(4, 3),)),
    ("grid_sample", lambda x, g: F.grid_sample(x, g, align_corners=False), lambda: (d(1, 2, 4, 4), d(1, 3, 3, 2))),
    ("conv3d", lambda x, w: F.conv3d(x, w, padding=1), lambda: (d(1, 2, 3, 3, 3), d(2, 2, 2, 2, 2))),
    ("local_response_norm", lambda x: F.local_response_norm(x, 3), lambda: (d(1, 4, 2, 2),)),
    ("multilabel_margin", lambda x: F.multilabel_margin_loss(x, rawdev.tensor([[2, 0, -1, 1]])),
     lambda: (d(1, 4),)),
])
def test_gradcheck_over_composed_ops(name, fn, args):
    assert gradcheck(fn, args(), atol=1e-6, rtol=1e-4)
