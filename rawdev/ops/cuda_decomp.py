"""The cuda path of the small dense factorizations (linalg.ptx): the Cholesky factor of a batch and triangular
solves, one launch each. float32 kernels; float16/bfloat16 operands are widened to float32 for the launch and the
result rounded once (the float32 kernel's math). A triangular operand is read through its strides, so the
transposed factors the solves and their gradients use are not copied."""
from .. import dtypes as _dt
from .cuda_cast import cast
from .cuda_launch import _f32, _kernel, _rdev, dense, empty, full

__all__ = ["cholesky_factor", "trsm"]

_LOW = (_dt.float16, _dt.bfloat16)


def _widened(op, *ts):
    """ts as float32 (16-bit floats cast, float32 as they are; anything else is the float32 check's error) and the
    dtype to round the result back to."""
    dt = ts[0].dtype
    if dt in _LOW and all(t.dtype is dt for t in ts):
        return tuple(cast(t, _dt.float32) for t in ts), dt
    _f32(op, *ts)
    return ts, None


def cholesky_factor(A):
    """(L, info) of A [B, n, n] (contiguous): L lower (zeros above the diagonal), info int64 [B] = the first order
    whose pivot is not positive, 0 where none (that pivot taken as 1 and the factorization continued)."""
    b, n, _ = A.shape
    (a,), low = _widened("linalg.cholesky", dense(A))
    L = empty((b, n, n), _dt.float32, A.device, "cholesky factor")
    info = full((b,), 0, _dt.int64, A.device, "cholesky info")
    if b and n:
        _kernel(_rdev(A), "cholesky_f32", "linalg.cholesky").launch(b, 256, [L.data_ptr(), info.data_ptr(),
                                                                             a.data_ptr(), n])
    return (L if low is None else cast(L, low)), info


def trsm(T, B, upper, unit):
    """X with T X = B for triangular T [Bt, n, n] (any strides; only the named triangle is read, a unit diagonal
    assumed when unit) and B [Bt, n, k]."""
    bt, n, k = B.shape
    (t, b), low = _widened("linalg.solve_triangular", T, dense(B))
    X = empty((bt, n, k), _dt.float32, B.device, "triangular solve output")
    warps = bt * k
    if warps and n:
        ts = t.stride()
        _kernel(_rdev(B), "trsm_f32", "linalg.solve_triangular").launch(
            (warps + 7) // 8, 256, [X.data_ptr(), t.data_ptr(), b.data_ptr(), bt, n, k, ts[0], ts[1], ts[2],
                                    int(bool(upper)), int(bool(unit))])
    return X if low is None else cast(X, low)
