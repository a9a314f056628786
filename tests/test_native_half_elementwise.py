"""Elementwise ops on float16/bfloat16 cuda tensors run the `<kernel>_f16` / `<kernel>_bf16` kernels on the 16-bit
storage (float32 math inside, one rounding at the store): no cast launch, no float32 temporary. The kernels
compute what the float32 kernel computes on the widened operands, so each native result equals, bit for bit, the
widened one (cast to float32, the float32 op, one rounding back), on inputs with inf, NaN, zeros of both signs and
the dtype's denormals, contiguous, transposed and broadcast."""
import math

import numpy as np
import pytest
import rawdev
from rawdev.ops.unary import OPS

RNG = np.random.default_rng()
DTYPES = ["bfloat16", "float16"]
# the parametrized activations' float parameters (PyTorch's defaults, and one that is not)
PARAMS = {"leaky_relu": (0.01,), "elu": (1.0,), "celu": (0.7,), "softplus": (1.0, 20.0), "hardtanh": (-1.0, 1.0)}
# inputs inside each op's domain, so the float64 comparison sees numbers (the bitwise one takes everything)
SPECIAL = {"float16": [0.0, -0.0, math.inf, -math.inf, math.nan, 6e-8, -3e-6, 6.1e-5, 65504.0, 1.0, -1.0, 0.5],
           "bfloat16": [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-39, -5e-40, 1.2e-38, 3e38, 1.0, -1.0, 0.5]}


def _x(dtype, shape, scale=3.0):
    """Random values of the dtype (rounded on the device) with every special value among them."""
    vals = (RNG.standard_normal(int(np.prod(shape))) * scale).astype(np.float32)
    sp = np.array(SPECIAL[dtype], np.float32)
    pos = RNG.choice(vals.size, size=min(vals.size, sp.size), replace=False)
    vals[pos] = sp[:pos.size]
    return rawdev.tensor(vals.reshape(shape), device="cuda").to(getattr(rawdev, dtype))


def _bits(t):
    """The float32 bit patterns of t's values (the widening to float32 is exact, NaN payloads kept)."""
    return t.detach().float().cpu().numpy().view(np.uint32)


def _same(native, widened, what):
    """Equal bits, except that a NaN equals any NaN: a GPU's float32 arithmetic returns its one canonical NaN,
    while the simulator's numpy arithmetic keeps the host's NaN sign, which follows the compiler's operand order."""
    assert native.dtype is widened.dtype, what
    assert tuple(native.shape) == tuple(widened.shape), what
    got, want = _bits(native).ravel(), _bits(widened).ravel()
    nan = (got & 0x7FFFFFFF) > 0x7F800000
    bad = np.flatnonzero((got != want) & ~(nan & ((want & 0x7FFFFFFF) > 0x7F800000)))
    assert bad.size == 0, (f"{what}: {bad.size} of {got.size} differ, first at {bad[0]}: "
                           f"{got[bad[0]]:#x} != {want[bad[0]]:#x}")


def _no_widening(fn):
    """fn() run under a trace: its result, with a check that no cast kernel ran (no widening copy)."""
    with rawdev.trace() as t:
        out = fn()
        rawdev.cuda.synchronize()
    text = str(t)
    assert "cast_" not in text, text
    assert "_f16" in text or "_bf16" in text, text
    return out


def _low(dtype):
    return getattr(rawdev, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if op.kernels))
def test_unary_forward_and_backward_equal_widened_bit_for_bit(driver, dtype, name):
    op, p = OPS[name], PARAMS.get(name, ())
    x = _x(dtype, (6, 173))
    y = _no_widening(lambda: op.run(x, p))
    _same(y, op.run(x.float(), p).to(_low(dtype)), f"{name} forward")
    g = _x(dtype, (6, 173), 1.0)
    dx = _no_widening(lambda: op.grad(g, x, y, p))
    _same(dx, op.grad(g.float(), x.float(), y.float(), p).to(_low(dtype)), f"{name} backward")
    xt = x.t()   # a transposed operand: made contiguous by the 2-byte strided copy, then the 16-bit kernel
    _same(_no_widening(lambda: op.run(xt, p)), op.run(xt.float(), p).to(_low(dtype)), f"{name} transposed")


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "add_alpha": lambda a, b: rawdev.add(a, b, alpha=0.3),
}
SCALAR = {
    "add_scalar": lambda a: a + 0.1, "mul_scalar": lambda a: a * 3.7, "neg": lambda a: -a,
    "div_scalar": lambda a: a / 3,
    "pow": lambda a: a ** 2.5, "reciprocal": lambda a: 1 / a, "exp": lambda a: a.exp(), "log": lambda a: a.log(),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((5, 37), (5, 37)), ((4, 1, 37), (3, 37)), ((37,), (2, 37)), ((2, 3, 1), (1,))],
                         ids=["same", "both-broadcast", "left-broadcast", "column"])
def test_binary_equals_widened_bit_for_bit(driver, dtype, name, shapes):
    f = BINARY[name]
    a, b = _x(dtype, shapes[0]), _x(dtype, shapes[1])
    out = _no_widening(lambda: f(a, b))
    _same(out, f(a.float(), b.float()).to(_low(dtype)), name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_ops_equal_widened_bit_for_bit(driver, dtype, name):
    f = SCALAR[name]
    a = _x(dtype, (3, 301))
    _same(_no_widening(lambda: f(a)), f(a.float()).to(_low(dtype)), name)
    at = a.t()
    _same(_no_widening(lambda: f(at)), f(at.float()).to(_low(dtype)), name + " transposed")


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_add_and_mul_equal_widened_bit_for_bit(driver, dtype):
    a, b = _x(dtype, (7, 41)), _x(dtype, (41,))
    out = a.clone()
    _no_widening(lambda: out.add_(b, alpha=-1.5).mul_(0.3))
    # two ops, each rounded once to the 16-bit dtype: the widened reference rounds between them too
    ref = a.float()
    ref.add_(b.float(), alpha=-1.5)
    ref = ref.to(_low(dtype)).float()
    ref.mul_(0.3)
    _same(out, ref.to(_low(dtype)), "add_ then mul_")


# float64 references: the 16-bit result is the exact value rounded once, within the float32 math's own error
TOL = {"bfloat16": 2.0 ** -8, "float16": 2.0 ** -10}
F64 = {
    "exp": (lambda t: t.exp(), np.exp), "tanh": (lambda t: t.tanh(), np.tanh),
    "sigmoid": (lambda t: t.sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    "silu": (lambda t: rawdev.nn.functional.silu(t), lambda x: x / (1 + np.exp(-x))),
}


def _f64(t):
    return t.float().cpu().numpy().astype(np.float64)


def _close(got, ref, dtype, what):
    tiny = 2.0 ** -24 if dtype == "float16" else 2.0 ** -126
    err = np.abs(got - ref) - TOL[dtype] * np.abs(ref)
    assert (err <= tiny).all(), f"{what}: worst excess {err.max():.3g} at {np.argmax(err)}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(F64))
def test_unary_matches_float64_reference(driver, dtype, name):
    f, ref = F64[name]
    x = rawdev.tensor((RNG.standard_normal(2001) * 2).astype(np.float32), device="cuda").to(_low(dtype))
    _close(_f64(f(x)), ref(_f64(x)), dtype, name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["add", "mul", "div"])
def test_binary_matches_float64_reference(driver, dtype, name):
    a = rawdev.tensor((RNG.standard_normal((9, 77)) * 2).astype(np.float32), device="cuda").to(_low(dtype))
    b = rawdev.tensor((RNG.uniform(0.5, 2.0, 77) * RNG.choice([-1, 1], 77)).astype(np.float32),
                      device="cuda").to(_low(dtype))
    got = _f64(BINARY[name](a, b))
    _close(got, BINARY[name](_f64(a), _f64(b)), dtype, name)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_forward_and_backward_equal_widened_bit_for_bit(driver, dtype):
    from rawdev.ops.dispatch import cuda_backend
    low = _low(dtype)
    x, g = _x(dtype, (11, 97)), _x(dtype, (11, 97), 1.0)
    gen = rawdev.Generator("cpu")
    gen.manual_seed(5)
    y, mask = _no_widening(lambda: cuda_backend.dropout(x, 0.3, gen))
    gen.manual_seed(5)   # the same seed: the same mask
    y32, mask32 = cuda_backend.dropout(x.float(), 0.3, gen)
    np.testing.assert_array_equal(mask.cpu().numpy(), mask32.cpu().numpy())
    _same(y, y32.to(low), "dropout forward")
    dx = _no_widening(lambda: cuda_backend.dropout_bwd(g, mask, 0.3))
    _same(dx, cuda_backend.dropout_bwd(g.float(), mask, 0.3).to(low), "dropout backward")
