"""The unary family, walked from its declaration table: every op's value against an independent float64
reference, its gradient by finite differences (cpu, float64), the cuda path (simulator) against the cpu
one on non-contiguous inputs with poisoned outputs, and the generated function / method / in-place forms."""
import math

import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops
from rawdev.ops.unary import OPS

RNG = np.random.default_rng(7)
_ERF = np.vectorize(math.erf)

# independent float64 references (not the declarations' own numpy), and each op's input domain
REF = {
    "sin": (np.sin, "any"), "cos": (np.cos, "any"), "sqrt": (np.sqrt, "pos"), "rsqrt": (lambda x: x ** -0.5, "pos"),
    "tanh": (np.tanh, "any"), "sigmoid": (lambda x: 0.5 * (1 + np.tanh(x / 2)), "any"), "exp": (np.exp, "any"),
    "log": (np.log, "pos"), "relu": (lambda x: np.where(x > 0, x, 0.0), "any"), "abs": (np.abs, "any"),
    "leaky_relu": (lambda x: np.where(x > 0, x, 0.2 * x), "any"),
    "gelu": (lambda x: x * 0.5 * (1 + _ERF(x / math.sqrt(2))), "any"),
    "gelu_tanh": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), "any"),
    "tan": (lambda x: np.sin(x) / np.cos(x), "unit"), "sinh": (lambda x: (np.exp(x) - np.exp(-x)) / 2, "any"),
    "cosh": (lambda x: (np.exp(x) + np.exp(-x)) / 2, "any"), "asin": (np.arcsin, "unit"),
    "acos": (np.arccos, "unit"), "atan": (np.arctan, "any"), "exp2": (lambda x: 2.0 ** x, "any"),
    "asinh": (lambda x: np.sign(x) * np.log(np.abs(x) + np.sqrt(x * x + 1)), "any"),
    "acosh": (lambda x: np.log(x + np.sqrt(x * x - 1)), "gt1"),
    "atanh": (lambda x: 0.5 * np.log((1 + x) / (1 - x)), "unit"),
    "expm1": (lambda x: np.exp(x) - 1, "any"), "log2": (lambda x: np.log(x) / math.log(2), "pos"),
    "log10": (lambda x: np.log(x) / math.log(10), "pos"), "log1p": (lambda x: np.log(1 + x), "pos"),
    "reciprocal": (lambda x: 1.0 / x, "pos"), "erf": (_ERF, "any"), "frac": (lambda x: np.fmod(x, 1.0), "any"),
    "sign": (lambda x: (x > 0) * 1.0 - (x < 0) * 1.0, "any"), "floor": (np.floor, "any"), "ceil": (np.ceil, "any"),
    "round": (np.rint, "any"), "trunc": (lambda x: np.fix(x), "any"),
    "silu": (lambda x: x / (1 + np.exp(-x)), "any"),
    "mish": (lambda x: x * np.tanh(np.log(1 + np.exp(x))), "any"),
    "elu": (lambda x: np.where(x > 0, x, 0.7 * (np.exp(x) - 1)), "any"),
    "selu": (lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)), "any"),
    "celu": (lambda x: np.maximum(x, 0) + np.minimum(0, 1.5 * (np.exp(x / 1.5) - 1)), "any"),
    "softplus": (lambda x: np.where(2 * x > 3, x, np.log(1 + np.exp(2 * x)) / 2), "any"),
    "hardtanh": (lambda x: np.clip(x, -0.5, 1.5), "any"),
    "relu6": (lambda x: np.clip(x, 0, 6), "any"),
    "hardswish": (lambda x: x * np.clip(x + 3, 0, 6) / 6, "any"),
    "hardsigmoid": (lambda x: np.clip(x + 3, 0, 6) / 6, "any"),
    "logsigmoid": (lambda x: np.log(0.5 * (1 + np.tanh(x / 2))), "any"),
    "softsign": (lambda x: x / (1 + np.abs(x)), "any"),
    "tanhshrink": (lambda x: x - np.tanh(x), "any"),
}
PARAMS = {"leaky_relu": (0.2,), "elu": (0.7,), "celu": (1.5,), "softplus": (2.0, 3.0), "hardtanh": (-0.5, 1.5)}
# kinks that finite differences must not straddle
KINKS = {"softplus": (1.5,), "hardtanh": (-0.5, 1.5), "relu6": (6.0,), "hardswish": (-3.0, 3.0),
         "hardsigmoid": (-3.0, 3.0)}
STEPS = {"round", "floor", "ceil", "trunc", "frac", "sign"}


def test_every_declared_unary_op_has_a_reference():
    assert set(OPS) == set(REF)


def inputs(name, shape, dtype=np.float64):
    a = RNG.standard_normal(shape) * 2
    if REF[name][1] == "pos":
        a = np.abs(a) + 0.1
    elif REF[name][1] == "unit":
        a = np.tanh(a) * 0.95
    elif REF[name][1] == "gt1":
        a = np.abs(a) + 1.05
    else:   # keep clear of the kinks (relu, abs, leaky_relu) for finite differences
        a = np.where(np.abs(a) < 1e-3, 0.5, a)
        for k in KINKS.get(name, ()):
            a = np.where(np.abs(a - k) < 1e-3, k + 0.25, a)
        if name in STEPS:   # their jumps sit on every integer (floor, ceil, trunc, frac) or half-integer (round)
            a = np.where(np.abs(a * 2 - np.round(a * 2)) < 1e-3, a + 0.2, a)
    return a.astype(dtype)


def run(name, x):
    from rawdev.ops.unary import apply
    return apply(OPS[name], x, PARAMS.get(name, ()))


@pytest.mark.parametrize("name", sorted(REF))
def test_value_against_float64(name):
    a = inputs(name, (37, 5))
    got = np.asarray(run(name, rawdev.from_numpy(a)))
    ref = REF[name][0](a)
    # rawdev's numpy erf (no scipy) is good to ~1e-10 absolute; the rest is libm in float64
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < (1e-9 if name in ("gelu", "erf") else 1e-12)
    a32 = a.astype(np.float32)
    got32 = np.asarray(run(name, rawdev.from_numpy(a32)))
    assert got32.dtype == np.float32
    assert np.linalg.norm(got32 - ref) / np.linalg.norm(ref) < 1e-6


@pytest.mark.parametrize("name", sorted(REF))
def test_gradient_cpu_float64(name):
    from test_autograd import gradcheck
    x = rawdev.from_numpy(inputs(name, (4, 3))).requires_grad_()
    gradcheck(lambda t: run(name, t), x)
    assert run(name, x).grad_fn.name() == OPS[name].node


@pytest.mark.parametrize("name", sorted(REF))
def test_cuda_matches_cpu_on_strided_inputs(driver, name):
    a = inputs(name, (33, 7), np.float32)       # a transposed view: the op reads a strided input
    cuda_ops.set_poison(True)
    try:
        outs, grads = [], []
        for dev in ("cpu", "cuda"):
            x = rawdev.tensor(a, device=dev, requires_grad=True)
            y = run(name, x.t())
            w = rawdev.tensor(np.linspace(-1, 1, y.numel(), dtype=np.float32).reshape(tuple(y.shape)), device=dev)
            (y * w).sum().backward()
            outs.append(np.asarray(y.detach().cpu()))
            grads.append(np.asarray(x.grad.cpu()))
    finally:
        cuda_ops.set_poison(False)
    ref = REF[name][0](a.T.astype(np.float64))
    assert np.linalg.norm(outs[1] - ref) / np.linalg.norm(ref) < 1e-5
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)
    assert np.linalg.norm(grads[1] - grads[0]) / max(np.linalg.norm(grads[0]), 1e-30) < 1e-5


@pytest.mark.parametrize("name", ["sin", "cos", "sqrt", "rsqrt"])
def test_generated_function_method_and_inplace_forms(device_name, name):
    a = inputs(name, (5, 6), np.float32)
    x = rawdev.tensor(a, device=device_name)
    ref = REF[name][0](a.astype(np.float64))
    for out in (getattr(rawdev, name)(x), getattr(x, name)()):
        np.testing.assert_allclose(np.asarray(out.cpu()), ref, rtol=1e-6, atol=1e-7)
    v = x.t()
    same = getattr(v, name + "_")()            # in place through a view: the base changes
    assert same is v
    np.testing.assert_allclose(np.asarray(x.cpu()), ref, rtol=1e-6, atol=1e-7)
    getattr(rawdev, name + "_")(x)
    np.testing.assert_allclose(np.asarray(x.cpu()), REF[name][0](ref) if REF[name][1] == "any" or (ref > 0).all()
                               else np.asarray(x.cpu()), rtol=1e-5, atol=1e-6)


@pytest.fixture(params=["cpu", "sim"])
def device_name(request):
    if request.param == "cpu":
        return "cpu"
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    return "cuda"


def test_integer_inputs_promote_like_pytorch():
    i = rawdev.tensor([1, 4, 9])
    assert rawdev.sqrt(i).dtype is rawdev.float32 and rawdev.sqrt(i).tolist() == [1.0, 2.0, 3.0]
    assert rawdev.abs(rawdev.tensor([-2, 3])).dtype is rawdev.int64
    assert rawdev.relu(rawdev.tensor([-2, 3])).tolist() == [0, 3]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.sin_()
