"""float16/bfloat16 and the integer dtypes on cuda: every op in the tables against a numpy reference.

16-bit floats compute in float32 and round once (rawdev.ops.opmath), as PyTorch's "opmath" does, so the
reference is float64 math on the 16-bit inputs rounded to the dtype: a result within one or two units in
the last place of it. Integer ops must be exact, with PyTorch's wrap-around (numpy computes in the
dtype and wraps the same way). Inputs are random and non-contiguous (transposed views), outputs are
poisoned before the kernels run, and the cpu gives the same answer.
"""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng()
LOW = {"float16": (rawdev.float16, np.float16, 2.0 ** -10), "bfloat16": (rawdev.bfloat16, None, 2.0 ** -7)}
SUBNORMAL_STEP = {"float16": 2.0 ** -24, "bfloat16": 2.0 ** -133}   # the absolute resolution near zero


@pytest.fixture
def poisoned(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def _round(a, name):
    """float64 values rounded to the 16-bit dtype (and back to float64)."""
    if name == "float16":
        return a.astype(np.float16).astype(np.float64)
    bits = rawdev.dtypes.f32_to_bf16_bits(a.astype(np.float32))
    return rawdev.dtypes.bf16_bits_to_f32(bits).astype(np.float64)


def _host(t):
    return t.detach().cpu().float().numpy().astype(np.float64)


def _low_inputs(name, shapes, lo=-2.0, hi=2.0):
    """Random inputs on cuda as transposed (non-contiguous) views, and their exact float64 values."""
    dt = LOW[name][0]
    out, ref = [], []
    for s in shapes:
        a = _round(RNG.uniform(lo, hi, s[::-1]), name)
        t = rawdev.tensor(a.astype(np.float32)).to(dt).cuda()
        out.append(t.permute(*reversed(range(len(s)))))
        ref.append(a.transpose())
    return out, ref


def _softmax(a, d):
    e = np.exp(a - a.max(d, keepdims=True))
    return e / e.sum(d, keepdims=True)


# name: (rawdev fn, float64 reference, input shapes, ulps allowed, input range: r for [-r, r] or (lo, hi))
FLOAT_OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, [(37, 5), (37, 5)], 1, 2),
    "sub_broadcast": (lambda a, b: a - b, lambda a, b: a - b, [(37, 5), (1, 5)], 1, 2),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, [(37, 5), (37, 5)], 1, 2),
    "div": (lambda a, b: a / b, lambda a, b: a / b, [(37, 5), (37, 5)], 2, (0.25, 2)),
    "exp": (lambda a: a.exp(), np.exp, [(300, 3)], 2, 2),
    "log": (lambda a: a.log(), np.log, [(300, 3)], 2, (0.05, 0.9)),
    "tanh": (lambda a: a.tanh(), np.tanh, [(300, 3)], 2, 2),
    "sigmoid": (lambda a: a.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), [(300, 3)], 2, 2),
    "relu": (lambda a: a.relu(), lambda a: np.maximum(a, 0), [(300, 3)], 0, 2),
    "abs": (lambda a: a.abs(), np.abs, [(300, 3)], 0, 2),
    "pow2": (lambda a: a ** 2, lambda a: a ** 2, [(300, 3)], 1, 2),
    "sqrt": (lambda a: a.sqrt(), np.sqrt, [(300, 3)], 1, (0, 3)),
    "maximum": (rawdev.maximum, np.maximum, [(37, 5), (37, 5)], 0, 2),
    "clamp": (lambda a: a.clamp(-0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7), [(300, 3)], 0, 2),
    "sum_dim": (lambda a: a.sum(1), lambda a: a.sum(1), [(9, 260)], 2, 1),
    "mean_all": (lambda a: a.mean(), lambda a: a.mean(), [(9, 260)], 2, 1),
    "amax": (lambda a: a.amax(0), lambda a: a.max(0), [(33, 7)], 0, 2),
    "softmax": (lambda a: a.softmax(-1), lambda a: _softmax(a, -1), [(6, 70)], 2, 4),
    "log_softmax": (lambda a: a.log_softmax(0), lambda a: np.log(_softmax(a, 0)), [(70, 6)], 2, 4),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [(33, 20), (20, 17)], 2, 1),
    "linear": (lambda a, w: F.linear(a, w), lambda a, w: a @ w.T, [(33, 20), (17, 20)], 2, 1),
    "layer_norm": (lambda a: F.layer_norm(a, (40,)),
                   lambda a: (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5),
                   [(5, 40)], 2, 2),
    "cumsum": (lambda a: a.cumsum(1), lambda a: a.cumsum(1), [(4, 30)], 2, 1),
    "var": (lambda a: a.var(0), lambda a: a.var(0, ddof=1), [(50, 6)], 2, 2),
}


@pytest.mark.parametrize("name", list(LOW))
@pytest.mark.parametrize("op", list(FLOAT_OPS))
def test_16_bit_float_ops_on_cuda(op, name, poisoned):
    fn, ref_fn, shapes, ulps, rng = FLOAT_OPS[op]
    dt, _, eps = LOW[name]
    lo, hi = rng if isinstance(rng, tuple) else (-rng, rng)
    ts, refs = _low_inputs(name, shapes, lo, hi)
    got = fn(*ts)
    assert got.dtype is dt and got.is_cuda
    want = ref_fn(*refs)
    scale = np.maximum(np.abs(want), np.abs(want).max() * eps if op in ("matmul", "linear", "sum_dim", "cumsum",
                                                                           "var", "mean_all", "layer_norm")
                       else 0)
    # one rounding of the exact value (half an ulp) plus the float32 kernel's own error, in ulps of the dtype
    tiny = SUBNORMAL_STEP[name]
    err = np.abs(_host(got) - want)
    assert (err <= (ulps + 0.5) * eps * scale + tiny).all(), (op, name, float((err / (scale * eps + tiny)).max()))
    # the cpu agrees within a looser bound (numpy computes some float16 steps in float16 itself)
    cpu = fn(*[t.cpu() for t in ts])
    assert cpu.dtype is dt
    assert (np.abs(_host(cpu) - want) <= (ulps + 4) * eps * scale + tiny).all()


@pytest.mark.parametrize("name", list(LOW))
def test_16_bit_gradients_match_cpu_and_float64(name, driver):
    """A small network in float16/bfloat16 end to end: forward and every gradient agree with the float64
    math on the same (rounded) values within the dtype's resolution, and the grads keep the dtype."""
    dt, _, eps = LOW[name]
    x = _round(RNG.standard_normal((16, 12)), name)
    w1 = _round(RNG.standard_normal((24, 12)) / 4, name)
    w2 = _round(RNG.standard_normal((5, 24)) / 4, name)
    y = RNG.integers(0, 5, 16)
    grads = {}
    for dev in ("cpu", "cuda"):
        tw1, tw2 = (rawdev.tensor(w.astype(np.float32)).to(dt).to(dev).requires_grad_() for w in (w1, w2))
        tx = rawdev.tensor(x.astype(np.float32)).to(dt).to(dev)
        h = F.gelu(F.layer_norm(F.linear(tx, tw1), (24,)))
        loss = F.cross_entropy(F.linear(h, tw2), rawdev.tensor(y, device=dev))
        loss.backward()
        assert loss.dtype is dt and tw1.grad.dtype is dt and tw2.grad.dtype is dt
        grads[dev] = [float(loss), _host(tw1.grad), _host(tw2.grad)]
    # float64 reference of the same network
    a = x @ w1.T
    mu, var = a.mean(1, keepdims=True), a.var(1, keepdims=True)
    n = (a - mu) / np.sqrt(var + 1e-5)
    from math import erf
    h = n * 0.5 * (1 + np.vectorize(erf)(n / np.sqrt(2)))
    z = h @ w2.T
    p = _softmax(z, 1)
    want_loss = -np.log(p[np.arange(16), y]).mean()
    gz = p.copy()
    gz[np.arange(16), y] -= 1
    gz /= 16
    want_gw2 = gz.T @ h
    for dev in ("cpu", "cuda"):
        got_loss, _, gw2 = grads[dev]
        assert abs(got_loss - want_loss) <= 8 * eps * abs(want_loss)
        assert np.abs(gw2 - want_gw2).max() <= 16 * eps * np.abs(want_gw2).max()
    np.testing.assert_allclose(grads["cuda"][1], grads["cpu"][1], atol=16 * eps * np.abs(grads["cpu"][1]).max())


# ------------------------------------------------------------------ integers
INT_DTYPES = {"int8": (rawdev.int8, np.int8), "int16": (rawdev.int16, np.int16), "int32": (rawdev.int32, np.int32),
              "int64": (rawdev.int64, np.int64), "uint8": (rawdev.uint8, np.uint8)}


def _int_inputs(name, shapes, full_range=True):
    dt, npdt = INT_DTYPES[name]
    info = np.iinfo(npdt)
    lo, hi = (max(info.min, -2 ** 40), min(info.max, 2 ** 40)) if full_range else (max(info.min, -20), 20)
    arrs = [RNG.integers(lo, hi, s[::-1], dtype=np.int64, endpoint=True).astype(npdt).T for s in shapes]
    return [rawdev.tensor(np.ascontiguousarray(a.T)).cuda().t() for a in arrs], arrs


def _wrap(x, npdt):
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(npdt)


INT_OPS = {   # name: (rawdev fn, numpy reference (wraps in the dtype), shapes, full range?)
    "add": (lambda a, b: a + b, lambda a, b: a + b, [(37, 5), (37, 5)], True),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, [(37, 5), (37, 5)], True),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, [(37, 5), (37, 5)], True),
    "add_alpha": (lambda a, b: rawdev.add(a, b, alpha=3), lambda a, b: a + b * 3, [(37, 5), (37, 5)], True),
    "add_scalar": (lambda a: a + 7, lambda a: a + 7, [(300, 3)], True),
    "neg": (lambda a: -a, lambda a: -a, [(300, 3)], True),
    "floor_divide": (lambda a, b: a // (b.abs() + 1), lambda a, b: a // (np.abs(b) + 1), [(37, 5), (37, 5)], False),
    "remainder": (lambda a, b: a % (b.abs() + 1), lambda a, b: a % (np.abs(b) + 1), [(37, 5), (37, 5)], False),
    "abs": (lambda a: a.abs(), np.abs, [(300, 3)], True),
    "relu": (lambda a: a.relu(), lambda a: np.maximum(a, 0), [(300, 3)], True),
    "clamp": (lambda a: a.clamp(3, 11), lambda a: np.clip(a, 3, 11), [(300, 3)], False),
    "clamp_min": (lambda a: a.clamp(min=-9 if a.dtype.is_signed else 2),
                  lambda a: np.maximum(a, -9 if a.dtype.kind == "i" else 2), [(300, 3)], True),
    "maximum": (rawdev.maximum, np.maximum, [(37, 5), (37, 5)], True),
    "minimum": (rawdev.minimum, np.minimum, [(37, 5), (37, 5)], True),
    "and": (lambda a, b: a & b, lambda a, b: a & b, [(37, 5), (37, 5)], True),
    "or": (lambda a, b: a | b, lambda a, b: a | b, [(37, 5), (37, 5)], True),
    "xor": (lambda a, b: a ^ b, lambda a, b: a ^ b, [(37, 5), (37, 5)], True),
    "not": (lambda a: ~a, lambda a: ~a, [(300, 3)], True),
    "lt": (lambda a, b: a < b, lambda a, b: a < b, [(37, 5), (37, 5)], True),
    "eq_scalar": (lambda a: a == 3, lambda a: a == 3, [(300, 3)], False),
    "max_all": (lambda a: a.max(), lambda a: a.max(), [(33, 70)], True),
    "min_dim": (lambda a: a.min(0).values, lambda a: a.min(0), [(300, 7)], True),
    "argmax_dim": (lambda a: a.argmax(1), lambda a: a.argmax(1), [(7, 300)], False),
    "argmin_all": (lambda a: a.argmin(), lambda a: a.argmin(), [(40, 9)], False),
    "sum_all": (lambda a: a.sum(), lambda a: a.astype(np.int64).sum(), [(33, 70)], True),
    "sum_dim": (lambda a: a.sum(0), lambda a: a.astype(np.int64).sum(0), [(300, 7)], True),
    "cumsum": (lambda a: a.cumsum(1), lambda a: a.astype(np.int64).cumsum(1), [(5, 40)], False),
    "sign": (lambda a: a.sign(), np.sign, [(300, 3)], True),
}


@pytest.mark.parametrize("name", list(INT_DTYPES))
@pytest.mark.parametrize("op", list(INT_OPS))
def test_integer_ops_on_cuda_are_exact(op, name, poisoned):
    fn, ref_fn, shapes, full_range = INT_OPS[op]
    dt, npdt = INT_DTYPES[name]
    ts, arrs = _int_inputs(name, shapes, full_range)
    got = fn(*ts)
    with np.errstate(over="ignore", divide="ignore"):
        want = np.asarray(ref_fn(*arrs))
    if want.dtype != np.bool_ and op not in ("argmax_dim", "argmin_all", "sum_all", "sum_dim", "cumsum"):
        want = _wrap(want, npdt)
    host = got.cpu().numpy()
    assert host.dtype == want.dtype, (op, name, host.dtype, want.dtype)
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(fn(*[t.cpu() for t in ts]).numpy(), want)


def test_integer_wraparound_and_casts(driver):
    u = rawdev.tensor([250, 3], dtype=rawdev.uint8).cuda()
    assert (u + 10).cpu().tolist() == [4, 13]
    assert (u - rawdev.tensor([251, 4], dtype=rawdev.uint8).cuda()).cpu().tolist() == [255, 255]
    i = rawdev.tensor([2 ** 31 - 1, -2 ** 31], dtype=rawdev.int32).cuda()
    assert (i + 1).cpu().tolist() == [-2 ** 31, -2 ** 31 + 1]
    big = rawdev.tensor([2 ** 40 + 3, -(2 ** 33) - 1]).cuda()
    # integer casts keep the low bits, exactly (not through float32, which would round 2**40 + 3)
    assert big.to(rawdev.int32).cpu().tolist() == [3, -1]
    assert big.to(rawdev.int16).cpu().tolist() == [3, -1]
    assert big.to(rawdev.bool).cpu().tolist() == [True, True]
    assert rawdev.tensor([-1, 300], dtype=rawdev.int16).cuda().to(rawdev.uint8).cpu().tolist() == [255, 44]
    assert rawdev.tensor([1.5, -2.5], dtype=rawdev.bfloat16).cuda().to(rawdev.float16).cpu().tolist() == [1.5, -2.5]
    assert rawdev.tensor([7, -3], dtype=rawdev.int8).cuda().to(rawdev.bfloat16).cpu().tolist() == [7.0, -3.0]
    # a bool sum counts exactly past 2**24 (the int64 kernel, not a float32 sum)
    n = 2 ** 24 + 3
    ones = rawdev.ones(n, dtype=rawdev.bool, device="cuda")
    assert int(ones.sum()) == n


def test_integer_matmul_on_cuda_is_pytorch_s_error(driver):
    a = rawdev.ones(2, 2, dtype=rawdev.int64, device="cuda")
    with pytest.raises(RuntimeError, match="\"addmm_cuda\" not implemented for 'Long'"):
        a @ a
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors is not supported"):
        rawdev.ones(2, dtype=rawdev.bool) - rawdev.ones(2, dtype=rawdev.bool)


def test_16_bit_full_and_gradient_seed_on_cuda(driver):
    """bfloat16 is stored as uint16 bits: a constant fill rounds the value to bits, not to the integer."""
    for dt in (rawdev.bfloat16, rawdev.float16):
        t = rawdev.full((3,), 1.5, dtype=dt, device="cuda")
        assert t.cpu().tolist() == [1.5, 1.5, 1.5]
        x = rawdev.ones(3, dtype=dt, device="cuda", requires_grad=True)
        (x * 2).sum().backward()
        assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("name", list(LOW))
def test_16_bit_in_place_ops_and_gradient_accumulation(name, driver):
    """In-place updates of 16-bit tensors combine in float32 and round once (bfloat16 is stored as bits: an
    update must not do arithmetic on the bits), on the cpu and on cuda alike."""
    dt, _, eps = LOW[name]
    a = _round(RNG.uniform(-4, 4, 12), name)
    b = _round(RNG.uniform(-4, 4, 12), name)
    for dev in ("cpu", "cuda"):
        x = rawdev.tensor(a.astype(np.float32)).to(dt).to(dev)
        y = rawdev.tensor(b.astype(np.float32)).to(dt).to(dev)
        cases = [(lambda t, y=y: t.add_(y), a + b), (lambda t, y=y: t.add_(y, alpha=-0.5), a - 0.5 * b),
                 (lambda t: t.mul_(3), a * 3)]
        for f, want in cases:
            t = x.clone()
            f(t)
            assert t.dtype is dt
            np.testing.assert_allclose(_host(t), _round(want, name), rtol=0, atol=1e-30)
        t = x.clone()
        t[::2] += 1                                       # through a strided view
        want = a.copy()
        want[::2] = _round(want[::2] + 1, name)
        np.testing.assert_allclose(_host(t), want, rtol=0, atol=1e-30)
        t = x.clone()
        t.index_add_(0, rawdev.tensor([0, 0, 11], device=dev), y[:3])
        want = a.copy()
        want[0] = _round(np.array([a[0] + b[0] + b[1]]), name)[0]
        want[11] = _round(np.array([a[11] + b[2]]), name)[0]
        assert np.abs(_host(t) - want).max() <= eps * np.abs(want).max()
        w = rawdev.tensor(a.astype(np.float32)).to(dt).to(dev).requires_grad_()
        (w * 2).sum().backward()
        (w * 3).sum().backward()                          # the second backward accumulates into .grad
        assert w.grad.dtype is dt and _host(w.grad).tolist() == [5.0] * 12


MIXED = [(rawdev.int32, rawdev.int64), (rawdev.int8, rawdev.int16), (rawdev.uint8, rawdev.int8),
         (rawdev.int64, rawdev.float32), (rawdev.int32, rawdev.float16), (rawdev.float16, rawdev.float32),
         (rawdev.bfloat16, rawdev.float16), (rawdev.bool, rawdev.int32), (rawdev.uint8, rawdev.bfloat16)]


@pytest.mark.parametrize("a_dt,b_dt", MIXED, ids=lambda d: str(d).split(".")[-1])
def test_mixed_dtype_operands_promote_as_on_the_cpu(a_dt, b_dt, poisoned):
    """Operands of two dtypes: PyTorch's promotion picks the result dtype; cuda gives the cpu's dtype and values."""
    a = rawdev.tensor(RNG.integers(0, 100, 40)).to(a_dt)
    b = rawdev.tensor(RNG.integers(1, 100, 40)).to(b_dt)
    for f in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x / y, rawdev.maximum, lambda x, y: x < y,
              lambda x, y: rawdev.where(x > 50, x, y)):
        want = f(a, b)
        got = f(a.cuda()[::2], b.cuda()[::2])            # strided views
        assert got.dtype is want.dtype
        np.testing.assert_allclose(_host(got), _host(want)[::2], rtol=1e-3 if want.dtype.itemsize == 2 else 1e-6)
