"""pow with tensor exponents and number bases, atan2, fmod, remainder, floor division, copysign, hypot, lerp,
addcmul/addcdiv, logical and bitwise ops, isnan/isinf/..., nan_to_num, isclose (rawdev/ops/binary_math.py), einsum
and the small linear-algebra forms (rawdev/ops/products.py): numpy references (float64), broadcasting, non-contiguous
inputs, poisoned outputs, finite-difference gradients on the cpu and the simulated GPU against the cpu."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(11)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def _fd(f, xs, i, gout, eps=1e-6):
    x = xs[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp = [a.copy() for a in xs]
        xm = [a.copy() for a in xs]
        xp[i][idx] += eps
        xm[i][idx] -= eps
        g[idx] = ((f(*xp) - f(*xm)) * gout).sum() / (2 * eps)
    return g


def _floor_div(a, b):
    return np.floor_divide(a, b)


BINARY = {  # name: (rawdev fn, numpy reference, differentiable, input domain)
    "pow": (rawdev.pow, np.power, True, "pos"),
    "atan2": (rawdev.atan2, np.arctan2, True, "any"),
    "fmod": (rawdev.fmod, np.fmod, True, "nonzero"),
    "remainder": (rawdev.remainder, np.remainder, True, "nonzero"),
    "floor_divide": (rawdev.floor_divide, _floor_div, False, "nonzero"),
    "copysign": (rawdev.copysign, np.copysign, False, "any"),
    "hypot": (rawdev.hypot, np.hypot, True, "any"),
}


def _inputs(domain, sa, sb):
    a = RNG.standard_normal(sa) * 3
    b = RNG.standard_normal(sb) * 2
    if domain == "pos":
        a = np.abs(a) + 0.5
    if domain == "nonzero":
        b = np.where(np.abs(b) < 0.3, 0.7, b)
        # keep a/b away from integers, where the floor/trunc steps make finite differences meaningless
        q = a / b
        a = np.where(np.abs(q - np.round(q)) < 0.05, a + 0.2 * b, a)
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("sa,sb", [((5, 7), (5, 7)), ((4, 1, 3), (2, 3)), ((300,), (1,)), ((0, 3), (3,))])
def test_binary_math_values_devices_and_gradients(name, sa, sb, driver, poison):
    fn, ref, diff, domain = BINARY[name]
    a, b = _inputs(domain, sa, sb)
    want = ref(a, b)
    np.testing.assert_allclose(fn(rawdev.tensor(a), rawdev.tensor(b)).numpy(), want, rtol=1e-12, atol=1e-12)
    # float32 on both devices, the first operand a non-contiguous view
    a32 = rawdev.tensor(np.ascontiguousarray(a.T).astype(np.float32)).t() if a.ndim == 2 else \
        rawdev.tensor(a.astype(np.float32))
    got = {}
    gout = None
    for dev in ("cpu", "cuda"):
        ta = a32.to(dev).detach().requires_grad_(diff)
        tb = rawdev.tensor(b.astype(np.float32), device=dev, requires_grad=diff)
        y = fn(ta, tb)
        got[dev] = [y.detach().cpu().numpy()]
        if diff and y.numel():
            if gout is None:
                gout = RNG.standard_normal(tuple(y.shape)).astype(np.float32)
            (y * rawdev.tensor(gout, device=dev)).sum().backward()
            got[dev] += [ta.grad.cpu().numpy(), tb.grad.cpu().numpy()]
    np.testing.assert_allclose(got["cpu"][0], want, rtol=2e-5, atol=2e-5)
    for c, g in zip(got["cpu"], got["cuda"]):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-4)
    if diff and np.prod(sa) and np.prod(sa) < 100:
        gout = RNG.standard_normal(want.shape)
        ta, tb = rawdev.tensor(a, requires_grad=True), rawdev.tensor(b, requires_grad=True)
        (fn(ta, tb) * rawdev.tensor(gout)).sum().backward()
        np.testing.assert_allclose(ta.grad.numpy(), _fd(ref, [a, b], 0, gout), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(tb.grad.numpy(), _fd(ref, [a, b], 1, gout), rtol=1e-5, atol=1e-6)


def test_pow_forms_and_conventions(driver):
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor([0.0, 1.0, 2.0], device=dev, requires_grad=True)
        np.testing.assert_allclose((10 ** t).detach().cpu().numpy(), [1, 10, 100], rtol=1e-6)
        np.testing.assert_allclose(rawdev.pow(2, t).detach().cpu().numpy(), [1, 2, 4], rtol=1e-6)
        (2.0 ** t).sum().backward()
        np.testing.assert_allclose(t.grad.cpu().numpy(), np.log(2) * np.array([1, 2, 4]), rtol=1e-5)
        # PyTorch's conventions at 0: d/dx x^0 = 0, d/dy 0^y = 0 for y >= 0
        x = rawdev.tensor([0.0, 0.0], device=dev, requires_grad=True)
        y = rawdev.tensor([0.0, 2.0], device=dev, requires_grad=True)
        (x ** y).sum().backward()
        np.testing.assert_array_equal(x.grad.cpu().numpy(), [0, 0])
        np.testing.assert_array_equal(y.grad.cpu().numpy(), [0, 0])
    assert (rawdev.tensor([2, 3]) ** rawdev.tensor([3, 2])).tolist() == [8, 9]
    assert rawdev.float_power(rawdev.tensor([2]), 2).dtype == rawdev.float64


def test_python_operators_and_rounding_modes(driver):
    a = np.array([-7.5, -3.0, 2.0, 7.25])
    b = np.array([2.0, -2.0, 3.0, -0.5])
    for dev in ("cpu", "cuda"):
        ta, tb = rawdev.tensor(a.astype(np.float32), device=dev), rawdev.tensor(b.astype(np.float32), device=dev)
        np.testing.assert_allclose((ta % tb).cpu().numpy(), a % b)
        np.testing.assert_allclose((ta // tb).cpu().numpy(), a // b)
        np.testing.assert_allclose((ta % 2).cpu().numpy(), a % 2)
        np.testing.assert_allclose((5 % tb).cpu().numpy(), 5 % b)
        np.testing.assert_allclose(rawdev.div(ta, tb, rounding_mode="trunc").cpu().numpy(), np.trunc(a / b))
        np.testing.assert_allclose(rawdev.div(ta, tb, rounding_mode="floor").cpu().numpy(), np.floor(a / b))
    ia, ib = rawdev.tensor([-7, 7, -8]), rawdev.tensor([2, -2, 3])
    assert (ia // ib).tolist() == [-4, -4, -3] and (ia % ib).tolist() == [1, -1, 1]
    assert rawdev.div(ia, ib, rounding_mode="trunc").tolist() == [-3, -3, -2]
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or 'floor'"):
        rawdev.div(ia, ib, rounding_mode="round")


def test_lerp_addcmul_addcdiv(driver):
    a, b, w = (RNG.standard_normal((3, 4)) for _ in range(3))
    for dev in ("cpu", "cuda"):
        ta, tb, tw = (rawdev.tensor(x.astype(np.float32), device=dev) for x in (a, b, w))
        np.testing.assert_allclose(rawdev.lerp(ta, tb, 0.3).cpu().numpy(), a + 0.3 * (b - a), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rawdev.lerp(ta, tb, tw).cpu().numpy(), a + w * (b - a), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(rawdev.addcmul(ta, tb, tw, value=0.5).cpu().numpy(), a + 0.5 * b * w, rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(rawdev.addcdiv(ta, tb, tw + 5, value=2).cpu().numpy(), a + 2 * b / (w + 5),
                                   rtol=1e-5, atol=1e-6)
        t = ta.clone()
        t.lerp_(tb, 0.5)
        np.testing.assert_allclose(t.cpu().numpy(), (a + b) / 2, rtol=1e-5, atol=1e-6)


def test_logical_and_bitwise(driver):
    x = RNG.standard_normal(10) > 0
    y = RNG.standard_normal(10) > 0
    f = np.where(x, 0.0, RNG.standard_normal(10))
    for dev in ("cpu", "cuda"):
        tx, ty, tf = (rawdev.tensor(v, device=dev) for v in (x, y, f.astype(np.float32)))
        for name, ref in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                          ("logical_xor", np.logical_xor)):
            out = getattr(rawdev, name)(tx, ty)
            assert out.dtype == rawdev.bool
            np.testing.assert_array_equal(out.cpu().numpy(), ref(x, y))
            np.testing.assert_array_equal(getattr(rawdev, name)(tf, ty).cpu().numpy(), ref(f != 0, y))
        np.testing.assert_array_equal(rawdev.logical_not(tf).cpu().numpy(), f == 0)
        np.testing.assert_array_equal((tx & ty).cpu().numpy(), x & y)
        np.testing.assert_array_equal((tx | ty).cpu().numpy(), x | y)
        np.testing.assert_array_equal((tx ^ ty).cpu().numpy(), x ^ y)
        np.testing.assert_array_equal((~tx).cpu().numpy(), ~x)
        u = rawdev.tensor(np.array([1, 2, 255], np.uint8), device=dev)
        np.testing.assert_array_equal((~u).cpu().numpy(), np.array([254, 253, 0], np.uint8))
    i = rawdev.tensor([6, 3, -1])
    assert (i & 3).tolist() == [2, 3, 3] and (i | 8).tolist() == [14, 11, -1] and (~i).tolist() == [-7, -4, 0]


def test_classify_and_nan_to_num(driver, poison):
    v = np.array([0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, -2.0], np.float32)
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(v, device=dev)
        for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                          ("isposinf", np.isposinf), ("isneginf", np.isneginf), ("signbit", np.signbit)):
            out = getattr(rawdev, name)(t)
            assert out.dtype == rawdev.bool
            np.testing.assert_array_equal(out.cpu().numpy(), ref(v), err_msg=f"{name} on {dev}")
        np.testing.assert_array_equal(rawdev.nan_to_num(t).cpu().numpy(), np.nan_to_num(v))
        np.testing.assert_array_equal(rawdev.nan_to_num(t, nan=1.0, posinf=2.0, neginf=-3.0).cpu().numpy(),
                                      np.nan_to_num(v, nan=1.0, posinf=2.0, neginf=-3.0))
        g = rawdev.tensor(v, device=dev, requires_grad=True)
        rawdev.nan_to_num(g).sum().backward()
        np.testing.assert_array_equal(g.grad.cpu().numpy(), np.isfinite(v).astype(np.float32))
    assert rawdev.isnan(rawdev.tensor([1, 2])).tolist() == [False, False]
    assert rawdev.isfinite(rawdev.tensor([1, 2])).tolist() == [True, True]


def test_isclose_allclose_equal(driver):
    a = np.array([1.0, 2.0, np.inf, np.nan, 1e-9])
    b = np.array([1.0 + 1e-6, 2.1, np.inf, np.nan, 0.0])
    for dev in ("cpu", "cuda"):
        ta, tb = rawdev.tensor(a, device=dev), rawdev.tensor(b, device=dev)
        if dev == "cuda":
            ta, tb = ta.float(), tb.float()
        for en in (False, True):
            np.testing.assert_array_equal(rawdev.isclose(ta, tb, equal_nan=en).cpu().numpy(),
                                          np.isclose(a, b, equal_nan=en))
        assert rawdev.allclose(ta[:1], tb[:1]) and not rawdev.allclose(ta, tb)
        assert rawdev.equal(ta[:3:2], ta[:3:2]) and not rawdev.equal(ta, ta[:2])


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]), ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij->", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 2, 3, 4), (2, 2, 4, 2)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("ij,kj", [(3, 4), (5, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum_matches_numpy_with_gradients(eq, shapes, driver):
    arrays = [RNG.standard_normal(s) for s in shapes]
    want = np.einsum(eq, *arrays)
    got = rawdev.einsum(eq, *[rawdev.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    grads = {}
    for dev in ("cpu", "cuda"):
        ts = [rawdev.tensor(a.astype(np.float32), device=dev, requires_grad=True) for a in arrays]
        out = rawdev.einsum(eq, ts)          # the list form too
        np.testing.assert_allclose(out.detach().cpu().numpy(), want, rtol=1e-4, atol=1e-4)
        (out * out).sum().backward()
        grads[dev] = [t.grad.cpu().numpy() for t in ts]
    for c, g in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-4)
    if len(arrays) <= 2 and max(np.prod(s) for s in shapes) <= 30:
        gout = 2 * want
        ts = [rawdev.tensor(a, requires_grad=True) for a in arrays]
        (rawdev.einsum(eq, *ts) ** 2).sum().backward()
        for i in range(len(arrays)):
            fd = _fd(lambda *xs: np.einsum(eq, *xs), arrays, i, gout)
            np.testing.assert_allclose(ts[i].grad.numpy(), fd, rtol=1e-5, atol=1e-6)


def test_small_linear_algebra(driver):
    a, b = RNG.standard_normal(4), RNG.standard_normal(5)
    m1, m2 = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    b1, b2 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5))
    c, cb = RNG.standard_normal((3, 5)), RNG.standard_normal((2, 3, 5))
    for dev in ("cpu", "cuda"):
        T = lambda x, d=dev: rawdev.tensor(x.astype(np.float32), device=d)  # noqa: E731
        np.testing.assert_allclose(rawdev.outer(T(a), T(b)).cpu().numpy(), np.outer(a, b), rtol=1e-5)
        np.testing.assert_allclose(float(rawdev.dot(T(a), T(a))), a @ a, rtol=1e-5)
        np.testing.assert_allclose(rawdev.mv(T(m1), T(a)).cpu().numpy(), m1 @ a, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(rawdev.bmm(T(b1), T(b2)).cpu().numpy(), b1 @ b2, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(rawdev.addmm(T(c), T(m1), T(m2), beta=0.5, alpha=2).cpu().numpy(),
                                   0.5 * c + 2 * m1 @ m2, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(rawdev.baddbmm(T(cb), T(b1), T(b2)).cpu().numpy(), cb + b1 @ b2, rtol=1e-4,
                                   atol=1e-5)
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        rawdev.dot(rawdev.ones(2, 2), rawdev.ones(2))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        rawdev.bmm(rawdev.ones(2, 2), rawdev.ones(2, 2, 2))


def test_int64_arithmetic_on_both_devices(driver, poison):
    a = RNG.integers(-50, 50, 200)
    b = RNG.integers(-9, 9, 200)
    b[b == 0] = 3
    for dev in ("cpu", "cuda"):
        ta, tb = rawdev.tensor(a, device=dev), rawdev.tensor(b, device=dev)
        for got, want in (((ta + tb), a + b), ((ta - 2 * tb), a - 2 * b), ((ta * tb), a * b), ((ta // tb), a // b),
                          ((ta % tb), a % b), (rawdev.fmod(ta, tb), np.fmod(a, b)), ((ta + 7), a + 7),
                          ((3 - ta), 3 - a), ((ta * -4), a * -4), (ta[:, None] + tb[:5], a[:, None] + b[:5])):
            assert got.dtype == rawdev.int64
            np.testing.assert_array_equal(got.cpu().numpy(), want)
        n = rawdev.tensor(0, device=dev)
        for _ in range(3):
            n.add_(1)
        assert int(n.item()) == 3
