"""Sums, means and the softmax family on float16/bfloat16 cuda tensors read the 16-bit storage directly (the
`_f16` / `_bf16` kernels of reduce.ptx and loss.ptx: float32 accumulation and math inside): no float32 copy of the
input. Each result equals, bit for bit, the widened one (cast to float32, the float32 kernel, one rounding back)."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops
from rawdev.ops.dispatch import cuda_backend

from test_native_half_elementwise import DTYPES, _same, _x

RNG = np.random.default_rng()


def _traced(fn):
    """fn()'s result and the names of the kernels it launched."""
    with rawdev.trace() as t:
        out = fn()
        rawdev.cuda.synchronize()
    return out, str(t)


def _no_input_widening(text):
    assert "cast_bf16_f32" not in text and "cast_f16_f32" not in text, text


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dims", [None, (1,), (0,), (0, 2), (2,)], ids=["all", "mid", "lead", "outer", "last"])
def test_sum_and_mean_equal_widened_bit_for_bit(driver, dtype, dims):
    x = _x(dtype, (5, 37, 9), 1.0)
    low = getattr(rawdev, dtype)
    for name, f in [("sum", lambda t: t.sum() if dims is None else t.sum(dims)),
                    ("mean", lambda t: t.mean() if dims is None else t.mean(dims)),
                    ("sum keepdim", lambda t: t.sum(dims or (0, 1, 2), keepdim=True))]:
        out, text = _traced(lambda f=f: f(x))
        _no_input_widening(text)
        assert out.dtype is low
        _same(out, f(x.float()).to(low), f"{name} over {dims}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_with_float32_dtype_is_the_float32_accumulator(driver, dtype):
    x = _x(dtype, (7, 300), 1.0)
    out, text = _traced(lambda: x.sum(1, dtype=rawdev.float32))
    _no_input_widening(text)
    assert out.dtype is rawdev.float32 and "cast_" not in text
    _same(out, x.float().sum(1), "sum(dtype=float32)")


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_matches_float64_reference(driver, dtype):
    vals = RNG.uniform(0.5, 2.0, (13, 1000)).astype(np.float32)
    x = rawdev.tensor(vals, device="cuda").to(getattr(rawdev, dtype))
    xv = x.float().cpu().numpy().astype(np.float64)
    got = x.sum(1).float().cpu().numpy().astype(np.float64)
    ref = xv.sum(1)
    # the one rounding of the result; the float32 sums' own error is far finer
    tol = 2.0 ** -8 if dtype == "bfloat16" else 2.0 ** -10
    np.testing.assert_allclose(got, ref, rtol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [1, 0])   # the backend takes a non-negative dim
def test_softmax_forward_and_backward_equal_widened_bit_for_bit(driver, dtype, log, dim):
    low = getattr(rawdev, dtype)
    x = _x(dtype, (9, 45), 4.0)
    x[3] = float("-inf")                  # a row of -inf: NaN as in the float32 kernel
    g = _x(dtype, (9, 45), 1.0)
    y, text = _traced(lambda: cuda_backend.softmax(x, dim, log))
    assert "cast_" not in text and "softmax_fwd_" in text, text
    _same(y, cuda_ops.softmax(x.float(), dim, log).to(low), "forward")
    dx, text = _traced(lambda: cuda_backend.softmax_bwd(g, y, dim, log))
    assert "cast_" not in text and "softmax_bwd_" in text, text
    _same(dx, cuda_ops.softmax_bwd(g.float(), y.float(), dim, log).to(low), "backward")
    # the public function and its autograd take the same kernels
    xr = x.detach().requires_grad_()
    f = rawdev.nn.functional.log_softmax if log else rawdev.nn.functional.softmax
    out = f(xr, dim=dim)
    _same(out, y, "functional forward")
    (gx,) = rawdev.autograd.grad(out, xr, g)
    _same(gx, dx, "functional backward")
