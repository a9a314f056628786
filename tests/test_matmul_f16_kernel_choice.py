"""Which GEMM a float16 matrix product runs on an sm_75 device (rawdev/ops/cuda.py gemm, rawdev/ops/cuda_bmm.py,
rawdev/ops/cuda_launch.py gemm16_kernel): float16 operands of one dtype go to gemm_<layout>_f16_sm75[_batched]
(mma.sync m16n8k8, float32 accumulation) on their own storage, with no widening casts around it; bfloat16 has no
sm_75 mma form and keeps the widened float32 path. The simulated GPU stands in for an sm_75 part (cc marker).
Values against float64 numpy of the float16 inputs: one rounding to float16 plus float32 accumulation."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.runtime import trace

from _refs import rng

F16 = rawdev.float16
UNIT = 2.0 ** -11   # relative bound of one rounding to float16

pytestmark = pytest.mark.cc("<8.0")


def launched(fn):
    with trace() as t:
        out = fn()
        for o in (out if isinstance(out, tuple) else (out,)):
            o.cpu()
    return [str(c.owner) for c in t.calls if c.fn == "cuLaunchKernel"], out


def t16(shape, requires_grad=False, dt=F16):
    return rawdev.tensor(rng().standard_normal(shape), dtype=dt, device="cuda", requires_grad=requires_grad)


def f64(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def close(got, want, terms, k):
    """One rounding to float16 (relative 2**-11, absolute 2**-25 among the subnormals) plus float32
    accumulation over k."""
    tol = UNIT * np.abs(want) + 2.0 ** -25 + 1e-6 * (1 + k / 16) * terms
    bad = np.abs(f64(got) - want) > tol
    assert not bad.any(), (np.argwhere(bad)[:5], f64(got)[bad][:5], want[bad][:5])


def no_casts(names):
    """No widening of a float16 operand to float32 (the bias gradient's float32 column sum is rounded back to
    float16 by a cast_f32_f16, as on sm_80)."""
    assert "cast_f16_f32" not in names, names
    assert not any(n.startswith("gemm_") and "_f32_" in n for n in names), names


def sm75_gemms(names):
    return [n for n in names if n.startswith("gemm_") and n.endswith("_f16_sm75")]


@pytest.mark.parametrize("M,N,K", [(70, 130, 40), (1, 77, 24), (129, 1, 56), (33, 200, 13), (5, 3, 1)])
def test_linear_forward_and_backward_run_on_the_sm75_kernels(M, N, K):
    """Edge tiles (M, N, K not multiples of 128 / 32), a 1xN output, K an odd multiple of 8. (A vector operand
    may be read through another layout: the layout is not what this checks.)"""
    x, w, b = t16((M, K), True), t16((N, K), True), t16((N,), True)
    names, y = launched(lambda: F.linear(x, w, b))
    assert len(names) == 1 and sm75_gemms(names), names       # one launch: no casts, no float32 copies
    if min(M, N, K) > 1:
        assert names == ["gemm_nt_f16_sm75"], names
    assert y.dtype is F16
    xv, wv, bv = f64(x), f64(w), f64(b)
    close(y, xv @ wv.T + bv, np.abs(xv) @ np.abs(wv).T + np.abs(bv), K)
    g = t16((M, N))
    names, _ = launched(lambda: (y.backward(g), x.grad)[1])
    assert len(sm75_gemms(names)) == 2, names
    if min(M, N, K) > 1:
        assert {"gemm_nn_f16_sm75", "gemm_tn_f16_sm75"} <= set(names), names
    no_casts(names)
    assert x.grad.dtype is F16 and w.grad.dtype is F16 and b.grad.dtype is F16
    gv = f64(g)
    close(x.grad, gv @ wv, np.abs(gv) @ np.abs(wv), N)
    close(w.grad, gv.T @ xv, np.abs(gv.T) @ np.abs(xv), M)


def test_mm_reads_transposed_and_strided_operands():
    """A transposed view runs through the tn layout without a copy; a column-sliced operand (row stride > width)
    through its leading dimension; a doubly strided one is copied once (a strided copy, not a cast)."""
    at = t16((40, 70)).t()                       # [70, 40], stride (1, 70)
    b = t16((40, 130))[:, 5:105]                 # [40, 100], stride (130, 1)
    names, y = launched(lambda: at @ b)
    assert names == ["gemm_tn_f16_sm75"], names
    av, bv = f64(at), f64(b)
    close(y, av @ bv, np.abs(av) @ np.abs(bv), 40)
    c = t16((80, 60))[::2, ::3]                  # [40, 20], strides (120, 3)
    names, y = launched(lambda: rawdev.mm(at, c))
    assert sm75_gemms(names), names
    no_casts(names)
    cv = f64(c)
    close(y, av @ cv, np.abs(av) @ np.abs(cv), 40)


def test_matmul_of_a_batch_by_a_matrix():
    """[B, M, K] @ [K, N] is one GEMM over the flattened rows, on the float16 kernel."""
    a, b = t16((3, 17, 24), True), t16((24, 9), True)
    names, y = launched(lambda: rawdev.matmul(a, b))
    assert sm75_gemms(names), names
    no_casts(names)
    av, bv = f64(a), f64(b)
    close(y, av @ bv, np.abs(av) @ np.abs(bv), 24)
    g = t16((3, 17, 9))
    names, _ = launched(lambda: (y.backward(g), b.grad)[1])
    assert len(sm75_gemms(names)) == 2, names
    no_casts(names)
    gv = f64(g)
    close(a.grad, gv @ bv.T, np.abs(gv) @ np.abs(bv).T, 9)
    close(b.grad, np.einsum("zmk,zmn->kn", av, gv), np.einsum("zmk,zmn->kn", np.abs(av), np.abs(gv)), 51)


def test_bmm_forward_and_backward_run_on_the_batched_sm75_kernels():
    a, b = t16((3, 20, 24), True), t16((3, 24, 18), True)
    names, y = launched(lambda: rawdev.bmm(a, b))
    assert names == ["gemm_nn_f16_sm75_batched"], names
    assert y.dtype is F16
    av, bv = f64(a), f64(b)
    close(y, av @ bv, np.abs(av) @ np.abs(bv), 24)
    g = t16((3, 20, 18))
    names, _ = launched(lambda: (y.backward(g), a.grad)[1])
    assert {"gemm_nt_f16_sm75_batched", "gemm_tn_f16_sm75_batched"} <= set(names), names
    no_casts(names)
    gv = f64(g)
    close(a.grad, gv @ bv.transpose(0, 2, 1), np.abs(gv) @ np.abs(bv).transpose(0, 2, 1), 18)
    close(b.grad, av.transpose(0, 2, 1) @ gv, np.abs(av).transpose(0, 2, 1) @ np.abs(gv), 20)


def test_bfloat16_keeps_the_widened_float32_path():
    a, b = t16((20, 30), dt=rawdev.bfloat16), t16((30, 10), dt=rawdev.bfloat16)
    names, y = launched(lambda: a @ b)
    assert y.dtype is rawdev.bfloat16
    assert "cast_bf16_f32" in names and any(n.startswith("gemm_nn_f32") for n in names), names
    assert not any("sm75" in n for n in names), names


def test_autocast_float16_matmul_runs_on_the_sm75_kernel():
    a = rawdev.tensor(rng().standard_normal((33, 50)), dtype=rawdev.float32, device="cuda")
    b = rawdev.tensor(rng().standard_normal((50, 20)), dtype=rawdev.float32, device="cuda")
    with rawdev.autocast("cuda", dtype=F16):
        names, y = launched(lambda: a @ b)
    assert y.dtype is F16
    assert "gemm_nn_f16_sm75" in names and not any(n.startswith("gemm_nn_f32") for n in names), names
    av, bv = f64(a.to(F16)), f64(b.to(F16))
    close(y, av @ bv, np.abs(av) @ np.abs(bv), 50)


@pytest.mark.parametrize("transposed", [False, True])
def test_the_sm75_kernel_is_clean_under_the_sanitizer(sanitize, transposed):
    """Four BK tiles through the two shared buffers, edge chunks and a transposed operand: no out-of-bounds
    access, no read of never-written global memory, no race among the loads and stores. (The sanitizer does not
    see ldmatrix's shared reads yet, and the simulator's warp order hides a missing barrier, so the one barrier
    per tile between the stores of tile t+1 and the ldmatrix reads of tile t is not checked here.)"""
    x = t16((70, 100))
    w = t16((100, 50)).t() if transposed else t16((50, 100))
    names, y = launched(lambda: F.linear(x, w))
    assert names == ["gemm_nt_f16_sm75"] if not transposed else sm75_gemms(names), names
    assert not sanitize.findings
    xv, wv = f64(x), f64(w)
    close(y, xv @ wv.T, np.abs(xv) @ np.abs(wv).T, 100)
