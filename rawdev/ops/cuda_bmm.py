"""Batched matmul on cuda: one launch of the grid-z batched GEMM (gemm_<layout>_f32_<tile>_batched,
blockIdx.z = the batch index, a batch stride per operand) over contiguous [batch, M, K] / [batch, K, N]
operands, transposes read through the GEMM's layouts. Batches beyond the grid's z limit (65,535) take one
launch per 65,535 matrices. bfloat16 (or float16) operands of one dtype on sm_80+ run
gemm_<layout>_{bf16,f16}_128x128_batched on their own storage (tensor cores, float32 accumulation, the result
in their dtype), float16 on sm_75 gemm_<layout>_f16_sm75_batched (the same on mma m16n8k8); other 16-bit cases
are widened to float32 by rawdev.ops.opmath."""
from .. import dtypes as _dt
from .cuda_launch import _f32, _kernel, _rdev, _tile, empty, gemm16_kernel

_Z_MAX = 65535

__all__ = ["bmm"]


_NATIVE_KINDS = {_dt.bfloat16: "bf16", _dt.float16: "f16"}


def _bmm_native(a, b, ta=False, tb=False):
    """"bf16"/"f16" when both operands have that dtype and the device runs a batched 16-bit kernel of that kind
    (sm_80+, or sm_75 for float16: gemm16_kernel), else None."""
    kind = _NATIVE_KINDS.get(a.dtype)
    if kind is None or b.dtype is not a.dtype:
        return None
    return kind if gemm16_kernel(_rdev(a), "nn", kind, batched=True) is not None else None


def bmm(a, b, ta=False, tb=False):
    """[batch, M, K] x [batch, K, N] (or their transposes by ta/tb) -> [batch, M, N], contiguous inputs; float32,
    or bfloat16/float16 of one dtype on sm_80+, float16 on sm_75 (_bmm_native)."""
    kind = _bmm_native(a, b, ta, tb)
    if kind is None:
        _f32("matmul", a, b)
    a, b = a.contiguous(), b.contiguous()
    batch = a.shape[0]
    M, K = (a.shape[2], a.shape[1]) if ta else (a.shape[1], a.shape[2])
    N = b.shape[1] if tb else b.shape[2]
    y = empty((batch, M, N), a.dtype if kind else _dt.float32, a.device, "bmm output")
    if K == 0:
        from ..runtime import memory
        memory.memset_d8(y.data_ptr(), 0, y.nbytes, _rdev(a).compute_stream)
        return y
    layout = ("t" if ta else "n") + ("t" if tb else "n")
    if layout == "tt":   # no tt kernel: transpose b for real
        b = b.transpose(1, 2).contiguous()
        layout, tb = "tn", False
    rdev = _rdev(a)
    sa, sb, sy = a.shape[1] * a.shape[2], b.shape[1] * b.shape[2], M * N      # batch strides, in elements
    lda, ldb = a.shape[2], b.shape[2]
    if M == 0 or N == 0 or batch == 0:
        return y
    if kind:
        tile, threads, esz = 128, 256, 2
        k = _kernel(rdev, gemm16_kernel(rdev, layout, kind, batched=True) or f"gemm_{layout}_{kind}_128x128_batched",
                    "bmm")
    else:
        tile, threads = _tile(M, N, rdev.multiprocessors)
        esz = 4
        k = _kernel(rdev, f"gemm_{layout}_f32_{tile}x{tile}_batched", "bmm")
    for z0 in range(0, batch, _Z_MAX):
        nz = min(_Z_MAX, batch - z0)
        k.launch(((N + tile - 1) // tile, (M + tile - 1) // tile, nz), threads,
                 [y.data_ptr() + esz * z0 * sy, a.data_ptr() + esz * z0 * sa, b.data_ptr() + esz * z0 * sb, M, N,
                  K, lda, ldb, N, sa, sb, sy, 1.0])
    return y


# opmath runs bmm on its operands' own 16-bit dtype (no float32 temporaries) when this says it can
bmm.native_low = _bmm_native  # type: ignore[attr-defined]
