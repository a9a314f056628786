"""rawdev.linalg: torch.linalg's norms and products (vector_norm, matrix_norm, norm, vecdot, matmul, cross) and
its LU, Cholesky and QR families (cholesky, solve_triangular, lu_factor, lu, lu_solve, qr: rawdev.ops.decomp; inv,
solve, det, slogdet, lstsq, matrix_power: rawdev.ops.solve_inv_det) and its symmetric-eigen and singular-value
families (eigh, eigvalsh, svd, svdvals, pinv, matrix_rank: rawdev.ops.spectral), all with autograd on both devices;
a cuda matrix is factorized on the device, never on the host. Also cond, and multi_dot, matrix_exp, solve_ex,
tensorinv and tensorsolve (rawdev.ops.products), and LinAlgError (what a singular or indefinite matrix raises).
General (non-symmetric) eig is not provided: its results are complex, and rawdev has no complex dtype."""
import math

from .errors import LinAlgError
from .ops import reduce_composed as _reduce_composed
from .ops.decomp import (
    cholesky,
    cholesky_ex,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    qr,
    solve_triangular,
)
from .ops.linalg import matmul
from .ops.products import matrix_exp, multi_dot, solve_ex, tensorinv, tensorsolve
from .ops.solve_inv_det import det, inv, inv_ex, lstsq, matrix_power, slogdet, solve
from .ops.spectral import eigh, eigvalsh, matrix_rank, pinv, svd, svdvals
from .ops.structure import cross as _cross
from .ops.structure import vander as _vander

__all__ = ["vector_norm", "matrix_norm", "norm", "vecdot", "matmul", "cross", "diagonal", "vander", "inv", "inv_ex",
           "solve", "det", "slogdet", "cholesky", "cholesky_ex", "solve_triangular", "lu_factor", "lu_factor_ex",
           "lu", "lu_solve", "qr", "lstsq", "matrix_power", "eigh", "eigvalsh", "svd", "svdvals", "pinv",
           "matrix_rank", "multi_dot", "matrix_exp", "cond", "solve_ex", "tensorinv", "tensorsolve",
           "LinAlgError"]


def cross(input, other, *, dim=-1):  # noqa: A002
    """The 3-vector cross product along dim (default the last), the operands broadcast.

    Example:
        >>> torch.linalg.cross(torch.tensor([1., 0., 0.]), torch.tensor([0., 1., 0.]))
        tensor([0., 0., 1.])
    """
    return _cross(input, other, dim=dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    """The diagonals of the matrices in A (a view), as Tensor.diagonal with the last two dims by default."""
    return A.diagonal(offset, dim1, dim2)


def vander(x, *, N=None):  # noqa: N803
    """torch.linalg.vander: the increasing powers x^0 … x^(N−1) of the last dimension of x.

    Example:
        >>> torch.linalg.vander(torch.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [1, 2, 4],
                [1, 3, 9]])
    """
    if x.ndim == 1:
        return _vander(x, N, increasing=True)
    n = x.shape[-1] if N is None else N
    from .ops.creation import arange
    powers = arange(n, device=x.device).to(dtype=x.dtype)
    return x.unsqueeze(-1) ** powers


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The ord-norm of x over dim (None: every element, flattened): ord any number, inf, -inf, 0.

    Example:
        >>> torch.linalg.vector_norm(torch.tensor([3., 4.]))
        tensor(5.)
    """
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return _reduce_composed.norm(x, float(ord), dim, keepdim, dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: N803
    """The ord-norm of the matrices in A over the two dims: 'fro', 1, -1 (max/min column sum), inf, -inf
    (max/min row sum). 'nuc' and 2 need singular values, which rawdev does not compute.

    Example:
        >>> torch.linalg.matrix_norm(torch.eye(3))
        tensor(1.7321)
    """
    if dtype is not None:
        A = A.to(dtype=dtype)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        return _reduce_composed.norm(A, 2.0, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        moved = A.movedim((d0, d1), (-2, -1))
        s = svdvals(moved)
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            r = r.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1))
        return r
    if ord in (1, -1, math.inf, -math.inf):
        summed, other = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(summed, keepdim=True)
        r = s.amax(other, keepdim=True) if ord > 0 else s.amin(other, keepdim=True)
        return r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: N803
    """torch.linalg.norm: a vector norm for 1-D input or an int dim, a matrix norm for 2-D input or a pair of
    dims; ord=None is the 2-norm of the flattened input (Frobenius for matrices)."""
    if dim is not None and not isinstance(dim, int) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None and A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def vecdot(x, y, *, dim=-1):
    """Σ x·y over dim (real tensors), broadcasting the rest."""
    return (x * y).sum(dim)


def cond(A, p=None):  # noqa: N803
    """The condition number of each matrix in A: σ_max/σ_min for p = None or 2 (σ_min/σ_max for −2), else
    ‖A‖_p · ‖A⁻¹‖_p for p in 'fro', 'nuc', inf, −inf, 1, −1 (square matrices)."""
    if p is None or p == 2 or p == -2:
        S = svdvals(A)
        hi, lo = S[..., 0], S[..., -1]
        return hi / lo if p != -2 else lo / hi
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def _autocast_boundary():
    """rawdev.linalg's public functions behind the autocast hook, under their aten names (linalg_vector_norm, ...)
    as autocast's lists spell them; the module's own calls to each other keep the plain functions."""
    from .ops.autocast_mode import hook
    g = globals()
    for name in ("vector_norm", "matrix_norm", "vecdot", "multi_dot", "inv", "inv_ex", "solve", "cholesky",
                 "cholesky_ex", "qr", "lstsq", "eigh", "eigvalsh", "svd", "svdvals", "matrix_rank", "cond",
                 "tensorinv", "tensorsolve"):
        if callable(g.get(name)):
            g[name] = hook("linalg_" + name, g[name])


_autocast_boundary()
