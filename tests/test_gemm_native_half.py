"""Which GEMM a 16-bit matrix product runs on cuda (rawdev/ops/cuda.py gemm, rawdev/ops/opmath.py): bfloat16 or
float16 operands of one dtype on a device of compute capability 8.0+ go to gemm_<layout>_{bf16,f16}_128x128
without float32 temporaries (no cast launches around it); mixed dtypes, or an older device, keep the float32
kernels with the operands widened and the result rounded back (except float16 on sm_75, which has its own
tensor-core kernel: tests/test_matmul_f16_kernel_choice.py). Values against float64 numpy of the 16-bit inputs."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.runtime import reset_for_tests, trace

RNG = np.random.default_rng()
KINDS = {"bf16": rawdev.bfloat16, "f16": rawdev.float16}
UNIT = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}   # relative rounding bound of one rounding to the dtype


def launched(fn):
    with trace() as t:
        out = fn()
        for o in (out if isinstance(out, tuple) else (out,)):
            o.cpu()
    return [str(c.owner) for c in t.calls if c.fn == "cuLaunchKernel"], out


def t16(shape, dt, requires_grad=False):
    return rawdev.tensor(RNG.standard_normal(shape), dtype=dt, device="cuda", requires_grad=requires_grad)


def f64(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def close(got, want, terms, kind, k):
    """One rounding to the 16-bit dtype plus float32 accumulation over k."""
    tol = UNIT[kind] * np.abs(want) + 1e-6 * (1 + k / 16) * terms
    bad = np.abs(f64(got) - want) > tol
    assert not bad.any(), (np.argwhere(bad)[:5], f64(got)[bad][:5], want[bad][:5])


@pytest.mark.cc(">=8.0")
@pytest.mark.parametrize("kind", KINDS)
def test_linear_forward_and_backward_run_natively(kind):
    dt = KINDS[kind]
    M, N, K = 70, 130, 40
    x, w, b = t16((M, K), dt, True), t16((N, K), dt, True), t16((N,), dt, True)
    names, y = launched(lambda: F.linear(x, w, b))
    assert names == [f"gemm_nt_{kind}_128x128"], names       # one launch: no casts, no float32 copies
    assert y.dtype is dt
    xv, wv, bv = f64(x), f64(w), f64(b)
    close(y, xv @ wv.T + bv, np.abs(xv) @ np.abs(wv).T + np.abs(bv), kind, K)
    g = t16((M, N), dt)
    names, _ = launched(lambda: (y.backward(g), x.grad)[1])
    assert f"gemm_nn_{kind}_128x128" in names and f"gemm_tn_{kind}_128x128" in names, names
    assert x.grad.dtype is dt and w.grad.dtype is dt
    gv = f64(g)
    close(x.grad, gv @ wv, np.abs(gv) @ np.abs(wv), kind, N)
    close(w.grad, gv.T @ xv, np.abs(gv.T) @ np.abs(xv), kind, M)


@pytest.mark.cc(">=8.0")
def test_autocast_matmul_runs_on_bfloat16_kernels():
    a = rawdev.tensor(RNG.standard_normal((33, 50)), dtype=rawdev.float32, device="cuda")
    b = rawdev.tensor(RNG.standard_normal((50, 20)), dtype=rawdev.float32, device="cuda")
    with rawdev.autocast("cuda", dtype=rawdev.bfloat16):
        names, y = launched(lambda: a @ b)
    assert y.dtype is rawdev.bfloat16
    assert "gemm_nn_bf16_128x128" in names and not any("f32_" in n and "gemm" in n for n in names), names
    av, bv = f64(a.to(rawdev.bfloat16)), f64(b.to(rawdev.bfloat16))
    close(y, av @ bv, np.abs(av) @ np.abs(bv), "bf16", 50)


@pytest.mark.cc(">=8.0")
def test_mixed_dtypes_keep_the_float32_path():
    """A float32 bias with bfloat16 operands is not the 16-bit kernel's case: widened to float32 as before."""
    from rawdev.ops.dispatch import cuda_backend
    a, b = t16((20, 30), rawdev.bfloat16), t16((10, 30), rawdev.bfloat16)
    bias = rawdev.tensor(RNG.standard_normal(10), dtype=rawdev.float32, device="cuda")
    names, y = launched(lambda: cuda_backend.gemm(a, b, False, True, bias=bias))
    assert not any("bf16_128x128" in n for n in names) and any(n.startswith("gemm_nt_f32") for n in names), names
    av, bv = f64(a), f64(b)
    close(y, av @ bv.T + f64(bias), np.abs(av) @ np.abs(bv).T + np.abs(f64(bias)), "bf16", 30)


def test_below_sm80_16bit_matmuls_widen_to_float32(monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_CC", "7.5")   # the simulated GPU stands in for an sm_75 part here
    reset_for_tests("sim")
    a, b = t16((20, 30), rawdev.bfloat16), t16((30, 10), rawdev.bfloat16)
    names, y = launched(lambda: a @ b)
    assert y.dtype is rawdev.bfloat16
    assert "cast_bf16_f32" in names and any(n.startswith("gemm_nn_f32") for n in names), names
    av, bv = f64(a), f64(b)
    # float32 kernel on the widened values, one rounding to bfloat16
    close(y, av @ bv, np.abs(av) @ np.abs(bv), "bf16", 30)


@pytest.mark.cc(">=8.0")
@pytest.mark.parametrize("kind", KINDS)
def test_batched_matmul_forward_and_backward_run_natively(kind):
    dt = KINDS[kind]
    a, b = t16((3, 20, 24), dt, True), t16((3, 24, 18), dt, True)
    names, y = launched(lambda: a @ b)
    assert names == [f"gemm_nn_{kind}_128x128_batched"], names
    assert y.dtype is dt
    av, bv = f64(a), f64(b)
    close(y, av @ bv, np.abs(av) @ np.abs(bv), kind, 24)
    g = t16((3, 20, 18), dt)
    names, _ = launched(lambda: (y.backward(g), a.grad)[1])
    assert {f"gemm_nt_{kind}_128x128_batched", f"gemm_tn_{kind}_128x128_batched"} <= set(names), names
    assert not any(n.startswith("cast_") for n in names), names
    gv = f64(g)
    close(a.grad, gv @ bv.transpose(0, 2, 1), np.abs(gv) @ np.abs(bv).transpose(0, 2, 1), kind, 18)
    close(b.grad, av.transpose(0, 2, 1) @ gv, np.abs(av).transpose(0, 2, 1) @ np.abs(gv), kind, 20)
