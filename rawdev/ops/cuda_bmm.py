"""Batched matmul on cuda: one GEMM launch per batch matrix over contiguous [batch, M, K] / [batch, K, N]
operands (transposes read through the GEMM's layouts). A single grid-z batched kernel would launch once; this
loop is what runs until it exists (the launch count is batch, the bytes moved the same)."""
from .. import dtypes as _dt
from .cuda import _f32, _gemm_raw, _rdev, empty

__all__ = ["bmm"]


def bmm(a, b, ta=False, tb=False):
    """[batch, M, K] x [batch, K, N] (or their transposes by ta/tb) -> [batch, M, N], float32, contiguous inputs."""
    _f32("matmul", a, b)
    a, b = a.contiguous(), b.contiguous()
    batch = a.shape[0]
    M, K = (a.shape[2], a.shape[1]) if ta else (a.shape[1], a.shape[2])
    N = b.shape[1] if tb else b.shape[2]
    y = empty((batch, M, N), _dt.float32, a.device, "bmm output")
    if K == 0:
        from .cuda import memory
        memory.memset_d8(y.data_ptr(), 0, y.nbytes, _rdev(a).compute_stream)
        return y
    layout = ("t" if ta else "n") + ("t" if tb else "n")
    if layout == "tt":   # no tt kernel: transpose b for real
        b = b.transpose(1, 2).contiguous()
        layout, tb = "tn", False
    rdev, sa, sb, sy = _rdev(a), a.shape[1] * a.shape[2] * 4, b.shape[1] * b.shape[2] * 4, M * N * 4
    lda, ldb = a.shape[2], b.shape[2]
    for i in range(batch):
        _gemm_raw(rdev, layout, y.data_ptr() + i * sy, a.data_ptr() + i * sa, b.data_ptr() + i * sb, M, N, K,
                  lda, ldb, N)
    return y
