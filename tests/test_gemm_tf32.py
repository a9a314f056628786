"""The sm_80 TF32 tensor-core GEMM (gemm_<layout>_tf32_128x128, ptx/src/gemm_tf32_sm80.cu): picked only on a
device of compute capability 8.0+ and only when rawdev.backends.cuda.matmul.allow_tf32 is True (PyTorch's
rule); on the simulated GPU configured as an sm_80 part (RAWDEV_SIM_CC=8.0) it runs through the simulator's
mma.sync / cp.async / cvt.rna.tf32 and matches a float64 product of the TF32-rounded operands."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.ops import cuda as cuda_ops
from rawdev.runtime import reset_for_tests, trace

RNG = np.random.default_rng()


def tf32_round(a):
    """float32 values rounded to TF32 as cvt.rna.tf32.f32 does: to nearest, ties away from zero, 10 mantissa
    bits (the low 13 bits of the float32 pattern cleared)."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    finite = (u & 0x7F800000) != 0x7F800000
    r = np.where(finite, (u + 0x1000) & 0xFFFFE000, u)
    return r.astype(np.uint32).view(np.float32)


@pytest.fixture
def sm80(monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_CC", "8.0")
    reset_for_tests("sim")
    monkeypatch.setattr(rawdev.backends.cuda.matmul, "allow_tf32", True)
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)
    monkeypatch.delenv("RAWDEV_SIM_CC")
    reset_for_tests("sim")


def _kernels_launched(fn):
    with trace() as t:
        out = fn()
        out.cpu()
    return _launched(t), out


def _launched(t):
    return [str(c.owner) for c in t.calls if c.fn == "cuLaunchKernel"]


@pytest.mark.parametrize("M,N,K", [(130, 70, 37), (128, 128, 16), (7, 200, 64), (257, 33, 5)])
def test_linear_forward_and_backward_on_tensor_cores(M, N, K, sm80):
    x, w, b = RNG.standard_normal((M, K)), RNG.standard_normal((N, K)), RNG.standard_normal(N)
    tx = rawdev.tensor(x, dtype=rawdev.float32, device="cuda", requires_grad=True)
    tw = rawdev.tensor(w, dtype=rawdev.float32, device="cuda", requires_grad=True)
    tb = rawdev.tensor(b, dtype=rawdev.float32, device="cuda", requires_grad=True)
    names, y = _kernels_launched(lambda: F.linear(tx, tw, tb))
    assert "gemm_nt_tf32_128x128" in names, names
    xr, wr = tf32_round(x).astype(np.float64), tf32_round(w).astype(np.float64)
    want = xr @ wr.T + b
    # products of TF32 values are exact in float32's range; the error is float32 accumulation over K
    tol = 1e-5 * (np.abs(xr) @ np.abs(wr).T + np.abs(b))
    assert (np.abs(y.detach().cpu().numpy() - want) <= tol).all()
    g = RNG.standard_normal((M, N))
    with trace() as t:
        y.backward(rawdev.tensor(g, dtype=rawdev.float32, device="cuda"))
        tx.grad.cpu()
    launched = _launched(t)
    gr = tf32_round(g).astype(np.float64)
    if "gemm_nn_tf32_128x128" in launched:   # dX = dY . W
        np.testing.assert_allclose(tx.grad.cpu().numpy(), gr @ wr, rtol=0,
                                   atol=1e-5 * (np.abs(gr) @ np.abs(wr)).max())
    if "gemm_tn_tf32_128x128" in launched:   # dW = dY^T . X
        np.testing.assert_allclose(tw.grad.cpu().numpy(), gr.T @ xr, rtol=0,
                                   atol=1e-5 * (np.abs(gr.T) @ np.abs(xr)).max())
    assert {"gemm_nn_tf32_128x128", "gemm_tn_tf32_128x128"} & set(launched) or M * N < 1024


def test_tf32_rounding_is_visible_and_the_switch_is_pytorch_s(sm80, monkeypatch):
    """1 + 2**-12 is not a TF32 value: with TF32 allowed the product rounds it, with it off (PyTorch's default)
    the float32 kernel keeps it."""
    a = np.full((130, 64), 1.0 + 2.0 ** -12, np.float32)
    b = np.ones((64, 140), np.float32)
    ta, tb = (rawdev.tensor(v, device="cuda") for v in (a, b))
    names, y = _kernels_launched(lambda: ta @ tb)
    assert any("tf32" in n for n in names)
    np.testing.assert_array_equal(y.cpu().numpy(), np.full((130, 140), 64.0, np.float32))
    monkeypatch.setattr(rawdev.backends.cuda.matmul, "allow_tf32", False)
    names, y = _kernels_launched(lambda: ta @ tb)
    assert not any("tf32" in n for n in names)
    np.testing.assert_allclose(y.cpu().numpy(), 64 * (1.0 + 2.0 ** -12), rtol=1e-7)


def test_tf32_kernel_is_never_picked_below_sm80(driver, monkeypatch):
    if driver != "sim":
        pytest.skip("the simulated GPU stands in for an sm_75 part here")
    monkeypatch.setattr(rawdev.backends.cuda.matmul, "allow_tf32", True)
    ta = rawdev.ones(200, 64, device="cuda")
    names, _ = _kernels_launched(lambda: ta @ ta.t())
    assert names and not any("tf32" in n for n in names)
    from rawdev.runtime import get_device, kernels
    with pytest.raises(RuntimeError, match="built for sm_80"):
        kernels.get_kernel(get_device(0), "gemm_nt_tf32_128x128")
