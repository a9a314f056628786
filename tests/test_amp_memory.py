"""Device memory of 16-bit math on cuda: the bytes at the peak of ops that widen bfloat16 operands to float32
(rawdev.ops.opmath) and of ops that run their 16-bit kernels on the operands' own storage, from the allocator's
statistics. Exact byte counts: every block here is a tensor of known size, so a temporary kept alive longer than
its use shows as a larger peak."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops
from rawdev.ops import opmath
from rawdev.runtime import get_device

RNG = np.random.default_rng()


def _host(t):
    return t.detach().cpu().float().numpy().astype(np.float64)


def _peak_above(fn):
    """(result, peak bytes allocated while fn ran, above what was allocated before it)."""
    rawdev.cuda.synchronize()
    base = rawdev.cuda.memory_allocated()
    rawdev.cuda.reset_peak_memory_stats()
    out = fn()
    rawdev.cuda.synchronize()
    return out, rawdev.cuda.max_memory_allocated() - base


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_widened_binary_op_peak_is_widened_operands_and_float32_result(driver, dtype):
    # a + b of n 16-bit elements through a function with no 16-bit kernel: the two float32 copies (4n each) and the
    # float32 sum (4n) during the kernel; the copies are gone before the sum is rounded (4n + its 2n copy), so the
    # peak is 12n, not 14n
    n = 4096
    a = rawdev.randn(n, device="cuda").to(getattr(rawdev, dtype))
    b = rawdev.randn(n, device="cuda").to(getattr(rawdev, dtype))
    freed = []
    al = get_device(0).allocator
    al.listeners.append(lambda kind, block: freed.append(block.owner) if kind == "free" else None)

    def add(x, y):   # cuda.add without its native_low: the widened path
        return cuda_ops.add(x, y)
    fn = opmath.adapt("add", add, cuda_ops.cast, cuda_ops.copy_into)
    try:
        out, peak = _peak_above(lambda: fn(a, b))
    finally:
        al.listeners.pop()
    assert out.dtype is getattr(rawdev, dtype)
    assert peak == 12 * n, f"peak {peak} B for {n} elements: expected {12 * n}"
    # the memory tool names the temporaries: the widened operands, the float32 result; the output keeps its name
    assert sorted(o for o in freed if o.startswith("add")) == [
        "add float32 operand", "add float32 operand", "add output (float32, before rounding)"]
    assert al.live[out.data_ptr()].owner == "add output"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_binary_op_peak_is_its_16bit_result(driver, dtype):
    # a + b of n 16-bit elements runs add_bf16/add_f16 on the 16-bit storage: the 2n result is all it allocates
    n = 4096
    a = rawdev.randn(n, device="cuda").to(getattr(rawdev, dtype))
    b = rawdev.randn(n, device="cuda").to(getattr(rawdev, dtype))
    freed = []
    al = get_device(0).allocator
    al.listeners.append(lambda kind, block: freed.append(block.owner) if kind == "free" else None)
    try:
        out, peak = _peak_above(lambda: a + b)
    finally:
        al.listeners.pop()
    assert out.dtype is getattr(rawdev, dtype)
    assert peak == 2 * n, f"peak {peak} B for {n} elements: expected {2 * n}"
    assert [o for o in freed if o.startswith("add")] == [] and al.live[out.data_ptr()].owner == "add output"


def test_tuple_results_rounded_one_at_a_time(driver):
    # three float32 results of a function on a bfloat16 operand: each float32 result is dropped once its
    # bfloat16 copy exists, so the rounding adds 2n at a time to the 3 * 4n results, not 3 * 2n
    n = 2048
    x = rawdev.randn(n, device="cuda").to(rawdev.bfloat16)

    def three(w):
        assert w.dtype is rawdev.float32
        return cuda_ops.scale(w, 2.0), cuda_ops.scale(w, 3.0), cuda_ops.scale(w, 4.0)

    fn = opmath.adapt("three", three, cuda_ops.cast, cuda_ops.copy_into)
    out, peak = _peak_above(lambda: fn(x))
    assert [t.dtype for t in out] == [rawdev.bfloat16] * 3
    assert [float(t[0].float()) for t in out] == [float((x[0].float() * k).to(rawdev.bfloat16).float())
                                                 for k in (2, 3, 4)]
    # widened x (4n) + three float32 results (12n) while the function runs: 16n; afterwards at most 12n + 2n
    assert peak == 16 * n, f"peak {peak} B for {n} elements: expected {16 * n}"


def test_relu_backward_bfloat16_peak_is_its_result(driver):
    # relu's gradient of a 16-bit tensor: relu_bwd_bf16 reads g and the saved input in their 2-byte storage and
    # writes the 2n result: 2n at the peak, not the 12n of widening g and x and a float32 result
    n = 4096
    seed = int(RNG.integers(2 ** 31))
    gen = np.random.default_rng(seed)
    xv = gen.standard_normal(n).astype(np.float32)
    xv[:8] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -1e-40, 3.0]
    gv = gen.standard_normal(n).astype(np.float32)
    gv[8:12] = [np.inf, -np.inf, np.nan, 0.0]
    x = rawdev.tensor(xv, device="cuda").to(rawdev.bfloat16).requires_grad_()
    g = rawdev.tensor(gv, device="cuda").to(rawdev.bfloat16)
    y = rawdev.relu(x)
    (dx,), peak = _peak_above(lambda: rawdev.autograd.grad(y, x, g))
    assert dx.dtype is rawdev.bfloat16
    yh, gh = _host(y), _host(g)
    np.testing.assert_array_equal(_host(dx), np.where(yh > 0, gh, 0.0), err_msg=f"seed {seed}")
    assert peak == 2 * n, f"peak {peak} B for {n} elements: expected {2 * n} (seed {seed})"


def test_self_attention_backward_joins_qkv_gradients_once(driver):
    # the packed in-projection's q, k, v pieces take their gradients back in one [L, B, 3E] tensor (one cat),
    # never one zero-filled [L, B, 3E] gradient per piece summed in pairs
    from rawdev import nn
    L, B, E, H = 12, 3, 32, 2            # no other tensor of the step has the packed gradient's size
    m = nn.MultiheadAttention(E, H).cuda()
    x = rawdev.randn(L, B, E, device="cuda", requires_grad=True)
    with rawdev.autocast("cuda", dtype=rawdev.bfloat16):
        out, _ = m(x, x, x, need_weights=False)
    packed = L * B * 3 * E * 2            # bytes of one bfloat16 [L, B, 3E] tensor
    al = get_device(0).allocator
    live, most = set(), [0]

    def watch(kind, block):
        if block.nbytes == packed:
            (live.add if kind == "alloc" else live.discard)(block.ptr)
            most[0] = max(most[0], len(live))
    al.listeners.append(watch)
    try:
        out.float().sum().backward()
        rawdev.cuda.synchronize()
    finally:
        al.listeners.remove(watch)
    assert most[0] == 1, f"{most[0]} bfloat16 [L, B, 3E] gradients alive at once"
    assert x.grad.dtype is rawdev.float32 and bool(rawdev.isfinite(x.grad).all())


def test_attention_backward_bfloat16_peak(driver):
    # SDPA's backward on bfloat16 q, k, v (n elements each, L == S) runs the bf16 kernels on the 2-byte storage: the
    # query-row half makes dq (2n) and the float32 rowsum(dO*O) (4 bytes a row), the key-row half dk and dv (4n):
    # 6n + 4 * rows at the peak, no float32 copy of an operand (widened around the float32 kernels it was 26n).
    import rawdev.nn.functional as F
    B, H, L, E = 2, 2, 24, 16
    n, rows = B * H * L * E, B * H * L
    seed = int(RNG.integers(2 ** 31))
    gen = np.random.default_rng(seed)
    q, k, v = (rawdev.tensor(gen.standard_normal((B, H, L, E)).astype(np.float32), device="cuda")
               .to(rawdev.bfloat16).requires_grad_() for _ in range(3))
    g = rawdev.tensor(gen.standard_normal((B, H, L, E)).astype(np.float32), device="cuda").to(rawdev.bfloat16)
    out = F.scaled_dot_product_attention(q, k, v)
    grads, peak = _peak_above(lambda: rawdev.autograd.grad(out, (q, k, v), g))
    assert [t.dtype for t in grads] == [rawdev.bfloat16] * 3
    assert all(bool(rawdev.isfinite(t).all()) for t in grads), f"seed {seed}"
    assert peak == 6 * n + 4 * rows, f"peak {peak} B: expected {6 * n + 4 * rows} (seed {seed})"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_relu_forward_16bit_peak_is_its_result(driver, dtype):
    # relu of a 16-bit tensor: relu_fwd_bf16/relu_fwd_f16 on the 2-byte storage, so the 2n output is the peak, not a
    # float32 copy and a float32 result; the float32 kernel's values (NaN gives 0, as fmaxf(x, 0) does)
    n = 4096
    seed = int(RNG.integers(2 ** 31))
    xv = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    xv[:8] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-3, -1e-3, 3.0]
    x = rawdev.tensor(xv, device="cuda").to(getattr(rawdev, dtype))
    y, peak = _peak_above(lambda: rawdev.relu(x))
    assert y.dtype is getattr(rawdev, dtype)
    xh, yh = _host(x), _host(y)
    np.testing.assert_array_equal(yh, np.where(xh >= 0, xh, 0.0), err_msg=f"seed {seed}")
    # the sign of relu(-0.0) is the float32 kernel's (fmaxf), as every 16-bit result is
    np.testing.assert_array_equal(np.signbit(yh), np.signbit(_host(rawdev.relu(x.float()))), err_msg=f"seed {seed}")
    assert peak == 2 * n, f"peak {peak} B for {n} elements: expected {2 * n} (seed {seed})"
    assert get_device(0).allocator.live[y.data_ptr()].owner == "relu output"
