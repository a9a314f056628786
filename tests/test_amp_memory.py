"""Device memory of 16-bit math on cuda: the bytes at the peak of ops that widen bfloat16 operands to float32
(rawdev.ops.opmath), from the allocator's statistics. Exact byte counts: every block here is a tensor of known
size, so a temporary kept alive longer than its use shows as a larger peak."""
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops
from rawdev.ops import opmath


def _peak_above(fn):
    """(result, peak bytes allocated while fn ran, above what was allocated before it)."""
    rawdev.cuda.synchronize()
    base = rawdev.cuda.memory_allocated()
    rawdev.cuda.reset_peak_memory_stats()
    out = fn()
    rawdev.cuda.synchronize()
    return out, rawdev.cuda.max_memory_allocated() - base


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_binary_op_peak_is_widened_operands_and_float32_result(driver, dtype):
    # a + b of n 16-bit elements: the two float32 copies (4n each) and the float32 sum (4n) during the kernel;
    # the copies are gone before the sum is rounded (4n + its 2n copy), so the peak is 12n, not 14n
    n = 4096
    a = rawdev.randn(n, device="cuda").to(getattr(rawdev, dtype))
    b = rawdev.randn(n, device="cuda").to(getattr(rawdev, dtype))
    out, peak = _peak_above(lambda: a + b)
    assert out.dtype is getattr(rawdev, dtype)
    assert peak == 12 * n, f"peak {peak} B for {n} elements: expected {12 * n}"


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
