"""Linear solves, inverses and determinants, built on the LU factorization of ops/decomp.py: solve, inv, inv_ex,
det, slogdet, logdet; and lstsq (by QR: X = R⁻¹ Qᵀ B) and matrix_power (repeated squaring, of the inverse for
n < 0). Where they run is decomp's rule: numpy.linalg (LAPACK) for a cpu tensor, the whole-batch device LU and
triangular solves for a cuda one.

Gradients are the standard matrix-calculus formulas written with differentiable ops (so double backward works):
inv: −A⁻ᵀ G A⁻ᵀ; solve: G_B = A⁻ᵀ G_X, G_A = −G_B Xᵀ; det: G·det·A⁻ᵀ (slogdet's log|det| through inv).
"""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor import factory
from .decomp import (
    _batch,
    _check_invertible,
    _from_host,
    _host,
    _lu_factor,
    _mT,
    _square,
    _trsm_device,
    qr,
    solve_triangular,
)
from .registry import declare
from .rtypes import return_type as _rt
from .select.functions import where as _where

return_slogdet = _rt("slogdet", ["sign", "logabsdet"])
return_inv_ex = _rt("linalg_inv_ex", ["inverse", "info"])
return_lstsq = _rt("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _solve_values(A, B):
    """X = A⁻¹ B for [Bt, n, n] and [Bt, n, k] (no gradient)."""
    if not A.is_cuda:
        with np.errstate(all="ignore"):
            return _from_host(np.linalg.solve(_host(A), _host(B)), A)
    lu, _, perm, _ = _lu_factor(A)
    pb = B.gather(1, perm.unsqueeze(2).expand(B.shape))
    y = _trsm_device(lu, pb, upper=False, unit=True)
    return _trsm_device(lu, y, upper=True, unit=False)


# ------------------------------------------------------------------ inverse and solve
class _Inv(Function):
    node_name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx, A):
        a, lead = _batch(A)
        with no_grad():
            _check_invertible("linalg.inv", a)
            eye = factory.eye(a.shape[-1], dtype=a.dtype, device=a.device).expand(a.shape).contiguous()
            out = _solve_values(a, eye).reshape(*lead, a.shape[-1], a.shape[-1])
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        inv_a, = ctx.saved_tensors
        return -(_mT(inv_a) @ g @ _mT(inv_a))

    backward_graph = backward


def inv(A):  # noqa: N803
    """The inverse of each square matrix in A [..., n, n] (RuntimeError naming the zero pivot if singular).

    Example:
        >>> torch.linalg.inv(torch.tensor([[2., 0.], [0., 4.]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    _square("linalg.inv", A)
    return _Inv.apply(A)


def inv_ex(A, *, check_errors=False):  # noqa: N803
    """(inverse, info): info[b] > 0 names the first zero pivot of a singular matrix instead of raising."""
    _square("linalg.inv_ex", A)
    a, lead = _batch(A)
    with no_grad():
        _, _, _, info = _lu_factor(a)
    if check_errors and bool((info > 0).any().item()):
        _check_invertible("linalg.inv_ex", a)
    if bool((info > 0).any().item()):
        with no_grad():
            eye = factory.eye(a.shape[-1], dtype=a.dtype, device=a.device).expand(a.shape).contiguous()
            out = _solve_values(a, eye).reshape(A.shape)
        return return_inv_ex(out, info.reshape(lead).to(dtype=_dt.int32))
    return return_inv_ex(_Inv.apply(A), info.reshape(lead).to(dtype=_dt.int32))


def _broadcast_solve(A, B, name):
    """(A [..., n, n], B [..., n, k], whether B was a vector) broadcast to one batch shape."""
    _square(name, A)
    vector = B.ndim == A.ndim - 1 or B.ndim == 1
    b = B.unsqueeze(-1) if vector else B
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2] if B.ndim > 1 else B.shape[-1]}x"
                           f"{b.shape[-1]})")
    lead = tuple(np.broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-2])))
    return A.expand(*lead, *A.shape[-2:]), b.expand(*lead, *b.shape[-2:]), vector


class _Solve(Function):
    node_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx, A, B):
        a, lead = _batch(A)
        bb, _ = _batch(B)
        with no_grad():
            _check_invertible("linalg.solve", a)
            x = _solve_values(a, bb).reshape(B.shape)
        ctx.save_for_backward(A, x)
        return x

    @staticmethod
    def backward(ctx, g):
        A, x = ctx.saved_tensors
        gb = solve(_mT(A), g)
        ga = -(gb @ _mT(x)) if ctx.needs_input_grad[0] else None
        return ga, gb

    backward_graph = backward


def solve(A, B, *, left=True, out=None):  # noqa: N803
    """X with A X = B (left=False: X A = B) for square A [..., n, n] and B [..., n, k] or [..., n], broadcast.

    Example:
        >>> torch.linalg.solve(torch.tensor([[3., 1.], [1., 2.]]), torch.tensor([9., 8.]))
        tensor([2., 3.])
    """
    if out is not None:
        raise TypeError("linalg.solve(out=...) is not supported by rawdev")
    if not left:
        return _mT(solve(_mT(A), _mT(B)))
    a, b, vector = _broadcast_solve(A, B, "linalg.solve")
    x = _Solve.apply(a, b)
    return x.squeeze(-1) if vector else x


class _Slogdet(Function):
    node_name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx, A):
        a, lead = _batch(A)
        with no_grad():
            if a.is_cuda:
                lu, piv, _, _ = _lu_factor(a)
                d = lu.diagonal(0, -2, -1)
                swaps = (piv.to(dtype=_dt.int64) != factory.arange(1, a.shape[-1] + 1, device=a.device)).sum(-1)
                sign = (1 - 2 * (swaps % 2)).to(dtype=a.dtype) * d.sign().prod(-1)
                logabs = d.abs().log().sum(-1)
            else:
                s, l_ = np.linalg.slogdet(_host(a))
                sign, logabs = _from_host(s, a), _from_host(l_, a)
        ctx.save_for_backward(A)
        return sign.reshape(lead), logabs.reshape(lead)

    @staticmethod
    def backward(ctx, g_sign, g_logabs):
        A, = ctx.saved_tensors
        if g_logabs is None:
            return None
        return g_logabs.unsqueeze(-1).unsqueeze(-1) * _mT(inv(A))

    backward_graph = backward


def slogdet(A):  # noqa: N803
    """(sign, log|det|) of each square matrix: the log-determinant without overflow.

    Example:
        >>> torch.linalg.slogdet(torch.tensor([[2., 0.], [0., -3.]]))
        torch.return_types.slogdet(sign=tensor(-1.), logabsdet=tensor(1.7918))
    """
    _square("linalg.slogdet", A)
    sign, logabs = _Slogdet.apply(A)
    return return_slogdet(sign.detach(), logabs)


def det(A):  # noqa: N803
    """The determinant of each square matrix in A [..., n, n].

    Example:
        >>> torch.linalg.det(torch.tensor([[1., 2.], [3., 4.]]))
        tensor(-2.)
    """
    _square("linalg.det", A)
    sign, logabs = slogdet(A)
    return sign * logabs.exp()


def logdet(A):  # noqa: N803
    """log det A: nan for a negative determinant, −inf for zero (as PyTorch).

    Example:
        >>> torch.logdet(torch.tensor([[2., 0.], [0., 3.]]))
        tensor(1.7918)
    """
    sign, logabs = slogdet(A)
    return _where(sign < 0, float("nan"), _where(sign == 0, float("-inf"), logabs))


# ------------------------------------------------------------------ least squares (by QR) and matrix powers
def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """The least-squares solution of A X ≈ B for full-rank tall A [..., m, n] (m ≥ n), by QR: X = R⁻¹ Qᵀ B.
    residuals, rank and singular_values are empty (PyTorch's 'gels' driver, the one it has on cuda).

    Example:
        >>> torch.linalg.lstsq(torch.tensor([[1., 0.], [0., 1.], [1., 1.]]), torch.tensor([[1.], [2.], [3.]])).solution
        tensor([[1.0000],
                [2.0000]])
    """
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError("linalg.lstsq: only tall or square full-rank A (m >= n) is supported by rawdev")
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    q, r = qr(A)
    x = solve_triangular(r, _mT(q) @ b, upper=True)
    x = x.squeeze(-1) if vector else x
    empty = A.new_empty((0,))
    return return_lstsq(x, empty, factory.zeros((0,), dtype=_dt.int64, device=A.device), empty)


def matrix_power(A, n):  # noqa: N803
    """A^n by repeated squaring (n < 0: the inverse's power; n = 0: the identity).

    Example:
        >>> torch.linalg.matrix_power(torch.tensor([[1., 1.], [0., 1.]]), 3)
        tensor([[1., 3.],
                [0., 1.]])
    """
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1]} matrices")
    if n == 0:
        return factory.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape).clone()
    base = inv(A) if n < 0 else A
    n = abs(n)
    out = None
    while n:
        if n & 1:
            out = base if out is None else out @ base
        n >>= 1
        if n:
            base = base @ base
    return out


for _name, _fn in (("inverse", inv), ("det", det), ("logdet", logdet), ("slogdet", slogdet),
                   ("matrix_power", matrix_power)):
    declare(_name, _fn, family="solve_inv_det")

__all__ = ["inv", "inv_ex", "solve", "det", "slogdet", "logdet", "lstsq", "matrix_power"]
