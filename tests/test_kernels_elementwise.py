"""elementwise.ptx: activations forward/backward, arithmetic, copy, casts, comparisons, sin/cos/sqrt/rsqrt."""
import math

import numpy as np
import pytest

from test_kernels_util import Gpu, cdiv, elem_relerr, relerr

rng = np.random.default_rng(7)
SIZES = [1, 1000, 4099]
erf = np.vectorize(math.erf)
S2PI = math.sqrt(2 / math.pi)


def launch_cfg(n):
    return min(cdiv(n, 256), 7), 256   # few blocks: the grid-stride loop runs several times


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(S2PI * (x + 0.044715 * x ** 3)))


def gelu_tanh_grad(x):
    t = np.tanh(S2PI * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * S2PI * (1 + 3 * 0.044715 * x * x)


def gelu_erf(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_erf_grad(x):
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


SLOPE = 0.1
# name: (reference on float64 input, extra scalar args)
FWD = {
    "relu_fwd": (lambda x: np.maximum(x, 0), []),
    "leaky_relu_fwd": (lambda x: np.where(x > 0, x, SLOPE * x), [SLOPE]),
    "gelu_tanh_fwd": (gelu_tanh, []),
    "gelu_erf_fwd": (gelu_erf, []),
    "tanh_fwd": (np.tanh, []),
    "sigmoid_fwd": (sigmoid, []),
}
# name: (saved = f(x), dx reference from (dy, x), extra args)
BWD = {
    "relu_bwd": (lambda x: x, lambda dy, x: dy * (x > 0), []),
    "leaky_relu_bwd": (lambda x: x, lambda dy, x: dy * np.where(x > 0, 1, SLOPE), [SLOPE]),
    "gelu_tanh_bwd": (lambda x: x, lambda dy, x: dy * gelu_tanh_grad(x), []),
    "gelu_erf_bwd": (lambda x: x, lambda dy, x: dy * gelu_erf_grad(x), []),
    "tanh_bwd": (np.tanh, lambda dy, x: dy * (1 - np.tanh(x) ** 2), []),
    "sigmoid_bwd": (sigmoid, lambda dy, x: dy * sigmoid(x) * (1 - sigmoid(x)), []),
}


def inputs(n):
    x = rng.standard_normal(n) * 3
    x[: min(n, 4)] = [8.5, -9.0, 0.3, -0.02][: min(n, 4)]
    return x.astype(np.float32)


@pytest.mark.parametrize("name", sorted(FWD))
@pytest.mark.parametrize("n", SIZES)
def test_activation_fwd(dev, name, n):
    g = Gpu(dev)
    f, extra = FWD[name]
    x = inputs(n)
    y = g.poisoned(n)
    g.run(name, *launch_cfg(n), [y, g.put(x), *extra, n])
    assert elem_relerr(g.get(y, n), f(x.astype(np.float64))) < 1e-5


@pytest.mark.parametrize("name", sorted(BWD))
@pytest.mark.parametrize("n", SIZES)
def test_activation_bwd(dev, name, n):
    g = Gpu(dev)
    saved_fn, ref, extra = BWD[name]
    x = inputs(n)
    saved = saved_fn(x.astype(np.float64)).astype(np.float32)
    dy = rng.standard_normal(n).astype(np.float32)
    dx = g.poisoned(n)
    g.run(name, *launch_cfg(n), [dx, g.put(dy), g.put(saved), *extra, n])
    if name in ("tanh_bwd", "sigmoid_bwd"):   # the kernel sees the float32-rounded saved output
        s = saved.astype(np.float64)
        want = dy * (1 - s * s) if name == "tanh_bwd" else dy * s * (1 - s)
    else:
        want = ref(dy.astype(np.float64), x.astype(np.float64))
    got = g.get(dx, n)
    # gelu' crosses zero (x ~ -0.75), where float32 cancellation makes per-element relative error
    # meaningless: compare in norm, and per element against the size of the terms.
    assert relerr(got, want) < 1e-5
    assert np.abs(got - want).max() <= 1e-5 * np.abs(dy).max()


@pytest.mark.parametrize("n", SIZES)
def test_arithmetic(dev, n):
    g = Gpu(dev)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    bx, by = g.put(x), g.put(y)
    X, Y = x.astype(np.float64), y.astype(np.float64)
    cfg = launch_cfg(n)
    for name, args, ref in [("add", [bx, by], X + Y), ("mul", [bx, by], X * Y), ("scale", [bx, -1.5], -1.5 * X),
                            ("copy", [bx], X)]:
        z = g.poisoned(n)
        g.run(name, *cfg, [z, *args, n])
        assert elem_relerr(g.get(z, n), ref) < 1e-6, name
    z = g.put(y)
    g.run("axpy", *cfg, [z, bx, 0.25, n])
    assert elem_relerr(g.get(z, n), 0.25 * X + Y, floor=1e-4) < 1e-6
    g.run("add", *cfg, [bx, bx, by, n])          # in place (z aliases x)
    assert elem_relerr(g.get(bx, n), X + Y) < 1e-6


def bf16_rne(x):
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


@pytest.mark.parametrize("n", SIZES)
def test_casts(dev, n):
    g = Gpu(dev)
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e6, 65520.0, 3.0e38, 1e-8, 1 + 2 ** -8, 1 + 3 * 2 ** -8],
                       np.float32)
    x[: min(n, len(special))] = special[: min(n, len(special))]
    bx, cfg = g.put(x), launch_cfg(n)
    h = g.poisoned(n, np.uint16)
    g.run("cast_f32_f16", *cfg, [h, bx, n])
    hv = g.get(h, n, np.uint16)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    assert np.array_equal(hv.view(np.float16), want, equal_nan=True)
    back = g.poisoned(n)
    g.run("cast_f16_f32", *cfg, [back, h, n])
    assert np.array_equal(g.get(back, n), want.astype(np.float32), equal_nan=True)
    b = g.poisoned(n, np.uint16)
    g.run("cast_f32_bf16", *cfg, [b, bx, n])
    bv = g.get(b, n, np.uint16)
    assert np.array_equal(bv, bf16_rne(x))
    g.run("cast_bf16_f32", *cfg, [back, b, n])
    assert np.array_equal(g.get(back, n), (bv.astype(np.uint32) << 16).view(np.float32), equal_nan=True)


# ---------------------------------------------------------------- div, abs, exp, log, pow
@pytest.mark.parametrize("n", SIZES)
def test_div_abs_exp_log(dev, n):
    g = Gpu(dev)
    x = inputs(n)
    y = (rng.standard_normal(n) * 2).astype(np.float32)
    y[np.abs(y) < 1e-3] = 0.5                                    # keep quotients finite
    pos = (np.abs(rng.standard_normal(n)) * 5 + 1e-3).astype(np.float32)
    X, Y, P = (a.astype(np.float64) for a in (x, y, pos))
    cfg = launch_cfg(n)
    for name, args, ref in [("div", [g.put(x), g.put(y)], X / Y), ("abs_fwd", [g.put(x)], np.abs(X)),
                            ("exp_fwd", [g.put(x)], np.exp(X)), ("log_fwd", [g.put(pos)], np.log(P))]:
        z = g.poisoned(n)
        g.run(name, *cfg, [z, *args, n])
        assert elem_relerr(g.get(z, n), ref) < 1e-5, name


def test_div_log_special_values(dev):
    g = Gpu(dev)
    x = np.array([1.0, -1.0, 0.0, np.inf, np.nan, 3.0], np.float32)
    y = np.array([0.0, 0.0, 0.0, 2.0, 1.0, -0.0], np.float32)
    z = g.poisoned(6)
    g.run("div", 1, 256, [z, g.put(x), g.put(y), 6])
    with np.errstate(divide="ignore", invalid="ignore"):
        assert np.array_equal(g.get(z, 6), x / y, equal_nan=True)
        lx = np.array([0.0, -1.0, np.inf, 1.0], np.float32)
        g.run("log_fwd", 1, 256, [z, g.put(lx), 4])
        assert np.array_equal(g.get(z, 4), np.log(lx), equal_nan=True)


@pytest.mark.parametrize("n", SIZES)
def test_abs_bwd(dev, n):
    g = Gpu(dev)
    x = inputs(n)
    x[n // 2] = 0.0                                              # sign(0) = 0: no gradient at the kink
    if n > 2:
        x[1] = np.nan
    dy = rng.standard_normal(n).astype(np.float32)
    dx = g.poisoned(n)
    g.run("abs_bwd", *launch_cfg(n), [dx, g.put(dy), g.put(x), n])
    want = dy.astype(np.float64) * np.sign(x.astype(np.float64))
    got = g.get(dx, n)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert elem_relerr(got[ok], want[ok]) < 1e-6
    assert got[n // 2] == 0.0


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("e", [3.0, 0.5, -1.5, 2.7])
def test_pow_scalar(dev, n, e):
    g = Gpu(dev)
    x = (np.abs(rng.standard_normal(n)) * 3 + 0.05).astype(np.float32)
    if e == 3.0:
        x = (rng.standard_normal(n) * 3).astype(np.float32)      # integer exponent: negative bases too
    y = g.poisoned(n)
    g.run("pow_scalar", *launch_cfg(n), [y, g.put(x), e, n])
    assert elem_relerr(g.get(y, n), np.power(x.astype(np.float64), e)) < 1e-5


# ---------------------------------------------------------------- comparisons
CMP_OPS = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal,
           6: lambda a, b: (a == b) | (np.isnan(a) & np.isnan(b))}


def cmp_pair(n, dtype):
    """x, y with about a third of the elements equal on purpose (and NaNs in both, some paired, for floats)."""
    if dtype == np.int64:   # large values differing only in the low bits: a 32-bit compare would be wrong
        x = rng.integers(-5, 5, n) * 2 ** 40 + rng.integers(-3, 3, n)
        step = rng.integers(-2, 3, n) * np.where(rng.random(n) < .5, 1, 2 ** 33)
        return x, np.where(rng.random(n) < 0.33, x, x + step)
    x = rng.standard_normal(n).astype(np.float32)
    y = np.where(rng.random(n) < 0.33, x, rng.standard_normal(n).astype(np.float32))
    if n > 3:
        x[0] = y[0] = np.nan                                     # both NaN
        x[1] = np.nan                                            # one NaN
        y[2] = np.nan
    return x, y.astype(np.float32)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", sorted(CMP_OPS))
def test_compare_f32(dev, n, op):
    g = Gpu(dev)
    x, y = cmp_pair(n, np.float32)
    bx, by, cfg = g.put(x), g.put(y), launch_cfg(n)
    z = g.poisoned(n, np.uint8)
    g.run("compare_f32", *cfg, [z, bx, by, op, n])
    assert np.array_equal(g.get(z, n, np.uint8), CMP_OPS[op](x, y).astype(np.uint8))
    s = float(x[n // 2]) if not np.isnan(x[n // 2]) else 0.25  # a scalar equal to some elements
    g.run("compare_scalar_f32", *cfg, [z, bx, s, op, n])
    assert np.array_equal(g.get(z, n, np.uint8), CMP_OPS[op](x, np.float32(s)).astype(np.uint8))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", range(6))
def test_compare_i64(dev, n, op):
    g = Gpu(dev)
    x, y = cmp_pair(n, np.int64)
    assert (x == y).any() or n == 1
    bx, cfg = g.put(x), launch_cfg(n)
    z = g.poisoned(n, np.uint8)
    g.run("compare_i64", *cfg, [z, bx, g.put(y), op, n])
    assert np.array_equal(g.get(z, n, np.uint8), CMP_OPS[op](x, y).astype(np.uint8))
    s = int(x[n // 2])
    g.run("compare_scalar_i64", *cfg, [z, bx, s, op, n])
    assert np.array_equal(g.get(z, n, np.uint8), CMP_OPS[op](x, s).astype(np.uint8))


# ---------------------------------------------------------------- bool / integer <-> float32 casts
@pytest.mark.parametrize("n", SIZES)
def test_casts_to_f32(dev, n):
    g = Gpu(dev)
    cfg = launch_cfg(n)
    srcs = {"cast_bool_f32": rng.random(n) < 0.5,
            "cast_u8_f32": rng.integers(0, 256, n).astype(np.uint8),
            "cast_i32_f32": rng.integers(-2 ** 31, 2 ** 31, n).astype(np.int32),
            "cast_i64_f32": rng.integers(-2 ** 62, 2 ** 62, n).astype(np.int64)}
    srcs["cast_i64_f32"][: min(n, 3)] = [2 ** 24 + 1, -(2 ** 53) - 1, 7][: min(n, 3)]   # rounding cases
    for name, x in srcs.items():
        y = g.poisoned(n)
        g.run(name, *cfg, [y, g.put(x.view(np.uint8) if x.dtype == bool else x), n])
        assert np.array_equal(g.get(y, n), x.astype(np.float32)), name


@pytest.mark.parametrize("n", SIZES)
def test_casts_from_f32(dev, n):
    g = Gpu(dev)
    cfg = launch_cfg(n)
    x = (rng.standard_normal(n) * 60).astype(np.float32)
    x[: min(n, 4)] = [0.0, -0.0, 2.9999, -2.9999][: min(n, 4)]      # zeros, truncation toward zero
    bx = g.put(x)
    small = np.abs(x) % 250                                       # in range for u8 (positive)
    for name, src, dt, ref in [("cast_f32_bool", x, np.uint8, (x != 0).astype(np.uint8)),
                               ("cast_f32_u8", small, np.uint8, small.astype(np.uint8)),
                               ("cast_f32_i32", x, np.int32, x.astype(np.int32)),
                               ("cast_f32_i64", x, np.int64, x.astype(np.int64))]:
        y = g.poisoned(n, dt)
        g.run(name, *cfg, [y, bx if src is x else g.put(src), n])
        assert np.array_equal(g.get(y, n, dt), ref), name


# ---------------------------------------------------------------- sin, cos, sqrt, rsqrt (UNARY_OP kernels)
def trig_inputs(n):
    """Mostly moderate angles, plus a tail of large ones (the slow Payne-Hanek argument reduction of
    sinf/cosf runs for |x| > 105615) and values right at multiples of pi/2."""
    x = rng.uniform(-10, 10, n)
    big = rng.random(n) < 0.15
    x[big] = rng.uniform(-1e6, 1e6, big.sum()) * np.where(rng.random(big.sum()) < 0.3, 1e20, 1.0)
    edge = [0.0, -0.0, math.pi / 2, -math.pi, 1e-30, 3.0e38, 105615.0, 105616.0, 1e5 * math.pi]
    x[: min(n, len(edge))] = edge[: min(n, len(edge))]
    return x.astype(np.float32)


def positive_inputs(n, edges=True):
    """Positive floats over 17 decades; with edges, also 1, 4, the smallest normal/denormal and near-max."""
    x = np.exp(rng.uniform(-20, 20, n))
    edge = [1.0, 4.0, 1e-38, 3.0e38, 2.0, 1e-45] if edges else [1.0, 4.0, 2.0]
    x[: min(n, len(edge))] = edge[: min(n, len(edge))]
    return x.astype(np.float32)


def bwd_positive_inputs(n):
    """rsqrt's gradient -y^3/2 leaves float32's range for x below ~1e-25 or above ~1e25 (as in PyTorch):
    the backward tests stay inside it."""
    return positive_inputs(n, edges=False)


# name: (input generator, float64 reference of y from x)
UNARY_FWD = {"sin_fwd": (trig_inputs, np.sin), "cos_fwd": (trig_inputs, np.cos),
             "sqrt_fwd": (positive_inputs, np.sqrt), "rsqrt_fwd": (positive_inputs, lambda x: 1 / np.sqrt(x))}
# name: (input generator, saved tensor: "x" input or "y" output (of the *_fwd reference), dx from (dy, saved))
UNARY_BWD = {"sin_bwd": (trig_inputs, "x", lambda dy, x: dy * np.cos(x)),
             "cos_bwd": (trig_inputs, "x", lambda dy, x: -dy * np.sin(x)),
             "sqrt_bwd": (positive_inputs, "y", lambda dy, y: dy / (2 * y)),
             "rsqrt_bwd": (bwd_positive_inputs, "y", lambda dy, y: -0.5 * dy * y ** 3)}
UNARY_SIZES = [1, 255, 257, 4099]   # odd sizes: the last block and the grid-stride loop's tail


@pytest.mark.parametrize("n", UNARY_SIZES)
@pytest.mark.parametrize("name", sorted(UNARY_FWD))
def test_unary_fwd(dev, name, n):
    g = Gpu(dev)
    gen, ref = UNARY_FWD[name]
    x = gen(n)
    y = g.poisoned(n)
    g.run(name, *launch_cfg(n), [y, g.put(x), n])
    got, want = g.get(y, n), ref(x.astype(np.float64))
    assert not np.isnan(got).any()
    ok = np.abs(want) > 1e-30                 # sin(0) = 0 exactly; compare those separately
    assert elem_relerr(got[ok], want[ok], floor=0) < 1e-5
    assert np.array_equal(got[~ok], want[~ok].astype(np.float32))


@pytest.mark.parametrize("n", UNARY_SIZES)
@pytest.mark.parametrize("name", sorted(UNARY_BWD))
def test_unary_bwd(dev, name, n):
    g = Gpu(dev)
    gen, which, ref = UNARY_BWD[name]
    x = gen(n)
    saved = x if which == "x" else UNARY_FWD[name.replace("_bwd", "_fwd")][1](x.astype(np.float64)).astype(np.float32)
    dy = rng.standard_normal(n).astype(np.float32)
    dx = g.poisoned(n)
    g.run(name, *launch_cfg(n), [dx, g.put(dy), g.put(saved), n])
    got = g.get(dx, n)
    # the kernel sees the float32-rounded saved tensor: the reference starts from the same values
    want = ref(dy.astype(np.float64), saved.astype(np.float64))
    fin = np.isfinite(want)
    assert np.array_equal(np.isinf(got), np.isinf(want)) and not np.isnan(got).any()
    assert elem_relerr(got[fin], want[fin], floor=1e-30) < 1e-5


@pytest.mark.parametrize("name, x, want", [
    ("sin_fwd", [0.0, -0.0, np.inf, -np.inf, np.nan], [0.0, -0.0, np.nan, np.nan, np.nan]),
    ("cos_fwd", [0.0, -0.0, np.inf, -np.inf, np.nan], [1.0, 1.0, np.nan, np.nan, np.nan]),
    ("sqrt_fwd", [0.0, -0.0, np.inf, -1.0, np.nan, 4.0, 0.25], [0.0, -0.0, np.inf, np.nan, np.nan, 2.0, 0.5]),
    ("rsqrt_fwd", [0.0, -0.0, np.inf, -1.0, np.nan, 4.0, 0.25], [np.inf, -np.inf, 0.0, np.nan, np.nan, 0.5, 2.0]),
    ("sqrt_bwd", [0.0, np.inf, 0.5], [np.inf, 0.0, 1.0]),           # dy = 1: 1 / (2 y)
    ("rsqrt_bwd", [0.0, np.inf, 2.0], [-0.0, -np.inf, -4.0]),       # dy = 1: -y^3 / 2
])
def test_unary_exact_points(dev, name, x, want):
    """Values with an exact answer (signed zeros, infinities, NaN, exact roots) come out exactly."""
    g = Gpu(dev)
    x, want = np.array(x, np.float32), np.array(want, np.float32)
    n, y = len(x), g.poisoned(len(x))
    args = [g.put(np.ones(n, np.float32)), g.put(x)] if name.endswith("_bwd") else [g.put(x)]
    g.run(name, 1, 256, [y, *args, n])
    got = g.get(y, n)
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    assert np.array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)])), (got, want)
