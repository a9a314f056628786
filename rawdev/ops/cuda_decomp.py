"""The cuda path of the small dense factorizations (linalg.ptx): the Cholesky factor of a batch and triangular
solves, one launch each. float32 kernels; float16/bfloat16 operands are widened to float32 and the result rounded
once by rawdev.ops.opmath's policy, as for every cuda backend function. A triangular operand is read through its
strides, so the transposed factors the solves and their gradients use are not copied (which is why these are
called here, not through the dispatcher's densifying backend)."""
from .. import dtypes as _dt
from .cuda_cast import cast
from .cuda_launch import _f32, _kernel, _rdev, copy_into, dense, empty, full
from .opmath import adapt

__all__ = ["cholesky_factor", "trsm"]


def _cholesky_factor(A):
    """(L, info) of A [B, n, n] (contiguous): L lower (zeros above the diagonal), info int64 [B] = the first order
    whose pivot is not positive, 0 where none (that pivot taken as 1 and the factorization continued)."""
    _f32("linalg.cholesky", A)
    b, n, _ = A.shape
    a = dense(A)
    L = empty((b, n, n), _dt.float32, A.device, "cholesky factor")
    info = full((b,), 0, _dt.int64, A.device, "cholesky info")
    if b and n:
        _kernel(_rdev(A), "cholesky_f32", "linalg.cholesky").launch(b, 256, [L.data_ptr(), info.data_ptr(),
                                                                             a.data_ptr(), n])
    return L, info


def _trsm(T, B, upper, unit):
    """X with T X = B for triangular T [Bt, n, n] (any strides; only the named triangle is read, a unit diagonal
    assumed when unit) and B [Bt, n, k]."""
    _f32("linalg.solve_triangular", T, B)
    bt, n, k = B.shape
    b = dense(B)
    X = empty((bt, n, k), _dt.float32, B.device, "triangular solve output")
    warps = bt * k
    if warps and n:
        ts = T.stride()
        _kernel(_rdev(B), "trsm_f32", "linalg.solve_triangular").launch(
            (warps + 7) // 8, 256, [X.data_ptr(), T.data_ptr(), b.data_ptr(), bt, n, k, ts[0], ts[1], ts[2],
                                    int(bool(upper)), int(bool(unit))])
    return X


cholesky_factor = adapt("cholesky_factor", _cholesky_factor, cast, copy_into)
trsm = adapt("trsm", _trsm, cast, copy_into)
