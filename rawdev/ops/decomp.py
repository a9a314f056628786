"""Matrix decompositions: LU with partial pivoting, Cholesky and Householder QR, with the triangular solves they
are used with (solve_triangular, triangular_solve, lu_solve, cholesky_solve/inverse, lu_unpack). The solves,
inverses and determinants built on LU, and lstsq and matrix_power, are ops/solve_inv_det.py's; the triangular
solves stay here because the Cholesky and QR gradients are written with them.

Where they run: a cpu tensor goes to numpy.linalg (LAPACK underneath, so the factors and the QR signs are the
ones PyTorch's cpu gives). On cuda, the Cholesky factor and the triangular solves are one launch each
(linalg.ptx through ops/cuda_decomp.py: a block per matrix, a warp per right-hand column). LU and QR are the
textbook algorithms written as whole-batch steps of declared ops — one pivot search, row exchange and rank-1
update per column for LU, one Householder reflector per column for QR (LAPACK's sign convention) — so the values
never leave the device and every matrix of a batch advances together: O(n) launches per factorization, meant
for the small and medium matrices deep-learning programs factor. None of them is blocked or uses tensor cores.

Gradients are the standard matrix-calculus formulas written with differentiable ops (so double backward works):
cholesky: L⁻ᵀ Φ(Lᵀ G) L⁻¹ symmetrised; qr: (G_Q + Q copyltu(M)) R⁻ᵀ with M = R G_Rᵀ − G_Qᵀ Q; solve_triangular:
G_B = A⁻ᵀ G_X, G_A = −G_B Xᵀ restricted to the triangle.
"""

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..errors import LinAlgError
from ..tensor import factory
from .registry import declare
from .rtypes import return_type as _rt
from .select.functions import where as _where

return_qr = _rt("qr", ["Q", "R"])
return_lu_factor = _rt("linalg_lu_factor", ["LU", "pivots"])
return_lu_factor_ex = _rt("linalg_lu_factor_ex", ["LU", "pivots", "info"])
return_lu = _rt("linalg_lu", ["P", "L", "U"])
return_cholesky_ex = _rt("linalg_cholesky_ex", ["L", "info"])
return_triangular_solve = _rt("triangular_solve", ["solution", "cloned_coefficient"])


def _mT(x):
    return x.transpose(-2, -1)


def _square(name, A):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype._legacy[:-6]}")


def _batch(A):
    """A [..., m, n] as [B, m, n] (contiguous) and the leading shape."""
    lead = tuple(A.shape[:-2])
    return A.reshape(int(np.prod(lead, dtype=np.int64)), A.shape[-2], A.shape[-1]).contiguous(), lead


def _host(A):
    return A.detach().numpy()


def _from_host(a, like):
    from ..tensor.factory import tensor
    return tensor(np.ascontiguousarray(a), dtype=like.dtype, device=like.device)


# ------------------------------------------------------------------ device factorizations (whole-batch steps)
def _lu_device(A):
    """(LU [B, n, n], perm [B, n] int64 with PA = LU row order, pivots [B, n] int64 1-based, info [B])."""
    f = factory
    b, n, _ = A.shape
    a = A.clone()
    base = f.arange(n, device=A.device).unsqueeze(0).expand(b, n)
    perm = base.clone()
    pivots = f.zeros((b, n), dtype=_dt.int64, device=A.device)
    info = f.zeros((b,), dtype=_dt.int64, device=A.device)
    for k in range(n):
        p = a[:, k:, k].abs().argmax(1) + k                               # [B]
        idx = base.clone()
        idx[:, k] = p
        idx.scatter_(1, p.unsqueeze(1), f.full((b, 1), k, dtype=_dt.int64, device=A.device))
        a = a.gather(1, idx.unsqueeze(2).expand(b, n, n))
        perm = perm.gather(1, idx)
        pivots[:, k] = p + 1
        piv = a[:, k, k]
        zero = piv == 0
        info = _where(zero & (info == 0), k + 1, info)
        if k + 1 < n:
            a[:, k + 1:, k] /= _where(zero, 1.0, piv).unsqueeze(1)
            a[:, k + 1:, k + 1:] -= a[:, k + 1:, k:k + 1] * a[:, k:k + 1, k + 1:]
    return a, perm, pivots, info


def _trsm_device(T, B, upper, unit):
    """X with T X = B for triangular cuda T [Bt, n, n] and B [Bt, n, k]: one launch (ops/cuda_decomp.py)."""
    from .cuda_decomp import trsm
    return trsm(T, B, upper, unit)


def _cholesky_steps(A):
    """(L [B, n, n], info [B]): the lower Cholesky factor, info = the first order whose pivot is not positive,
    one column per step of declared ops (the cpu path's way to find that order where LAPACK refuses)."""
    f = factory
    b, n, _ = A.shape
    L = f.zeros((b, n, n), dtype=A.dtype, device=A.device)
    info = f.zeros((b,), dtype=_dt.int64, device=A.device)
    for j in range(n):
        d = A[:, j, j]
        if j:
            lj = L[:, j, :j]
            d = d - (lj * lj).sum(1)
        bad = ~(d > 0)
        info = _where(bad & (info == 0), j + 1, info)
        root = _where(bad, 1.0, d).sqrt()
        L[:, j, j] = root
        if j + 1 < n:
            col = A[:, j + 1:, j]
            if j:
                col = col - (L[:, j + 1:, :j] @ L[:, j, :j].unsqueeze(2)).squeeze(2)
            L[:, j + 1:, j] = col / root.unsqueeze(1)
    return L, info


def _qr_device(A, complete):
    """Householder QR of A [B, m, n] with LAPACK's conventions (dlarfg: beta = −sign(alpha)·‖x‖, H = I when the
    column below the diagonal is already zero) -> (Q [B, m, m or k], R [B, m or k, n])."""
    f = factory
    b, m, n = A.shape
    k = min(m, n)
    R = A.clone()
    vs, taus = [], []
    for j in range(k):
        x = R[:, j:, j]                                        # [B, m - j]
        alpha = x[:, 0]
        xnorm = (x[:, 1:] * x[:, 1:]).sum(1).sqrt() if m - j > 1 else alpha * 0
        plain = xnorm == 0
        norm = (alpha * alpha + xnorm * xnorm).sqrt()
        beta = _where(alpha >= 0, -norm, norm)
        beta = _where(plain, alpha, beta)
        safe_beta = _where(plain, 1.0, beta)
        tau = _where(plain, 0.0, (beta - alpha) / safe_beta)
        scale = _where(plain, 0.0, 1.0 / _where(plain, 1.0, alpha - beta))
        v = _cat_rows_1d([f.ones((b, 1), dtype=A.dtype, device=A.device), x[:, 1:] * scale.unsqueeze(1)])
        sub = R[:, j:, j:]
        w = (v.unsqueeze(1) @ sub).squeeze(1)                  # vᵀ R[j:, j:]  [B, n - j]
        R[:, j:, j:] = sub - (tau.unsqueeze(1) * v).unsqueeze(2) * w.unsqueeze(1)
        R[:, j + 1:, j] = 0.0
        R[:, j, j] = beta
        vs.append(v)
        taus.append(tau)
    cols = m if complete else k
    Q = f.eye(m, cols, dtype=A.dtype, device=A.device).unsqueeze(0).expand(b, m, cols).contiguous()
    for j in range(k - 1, -1, -1):                             # Q = H_0 … H_{k−1} applied to I's columns
        v, tau = vs[j], taus[j]
        sub = Q[:, j:, :]
        w = (v.unsqueeze(1) @ sub).squeeze(1)
        Q[:, j:, :] = sub - (tau.unsqueeze(1) * v).unsqueeze(2) * w.unsqueeze(1)
    return Q, (R if complete or m <= n else R[:, :k, :].contiguous())


def _cat_rows_1d(parts):
    from .join import cat
    return cat(parts, 1)


# ------------------------------------------------------------------ forward helpers on either device
def _lu_factor(A):
    """(LU, pivots int32 1-based, perm, info) of a [B, n, n] batch."""
    if A.is_cuda:
        lu, perm, piv, info = _lu_device(A)
        return lu, piv.to(dtype=_dt.int32), perm, info
    a = _host(A)
    b, n, _ = a.shape
    lu = a.copy()
    piv = np.zeros((b, n), np.int32)
    perm = np.tile(np.arange(n), (b, 1))
    info = np.zeros(b, np.int64)
    for i in range(b):       # Doolittle with partial pivoting in numpy (vectorised per column)
        m = lu[i]
        for k in range(n):
            p = k + int(np.argmax(np.abs(m[k:, k])))
            piv[i, k] = p + 1
            if p != k:
                m[[k, p]] = m[[p, k]]
                perm[i, [k, p]] = perm[i, [p, k]]
            if m[k, k] == 0:
                if info[i] == 0:
                    info[i] = k + 1
                continue
            m[k + 1:, k] /= m[k, k]
            m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
    from ..tensor.factory import tensor
    return (_from_host(lu, A), tensor(piv, dtype=_dt.int32), tensor(perm, dtype=_dt.int64),
            tensor(info, dtype=_dt.int64))


def _check_invertible(name, A):
    """PyTorch's error for a singular matrix (it also reads the info back to raise)."""
    _, _, _, info = _lu_factor(A)
    bad = info.cpu().numpy()
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        where = f"(Batch element {i}): " if A.shape[0] > 1 else ""
        raise LinAlgError(f"{name}: {where}The diagonal element {int(bad[i])} is zero, the inversion could not be "
                           "completed because the input matrix is singular.")


# ------------------------------------------------------------------ Cholesky
def _cholesky_values(a):
    if a.is_cuda:
        from .cuda_decomp import cholesky_factor
        return cholesky_factor(a)
    h = _host(a)
    out = np.zeros_like(h)
    info = np.zeros(h.shape[0], np.int64)
    for i in range(h.shape[0]):
        try:
            out[i] = np.linalg.cholesky(h[i])
        except np.linalg.LinAlgError:
            d = _cholesky_steps(_from_host(h[i:i + 1], a))[1]   # the same loop on the cpu, for the failing order
            info[i] = int(d.item())
    from ..tensor.factory import tensor
    return _from_host(out, a), tensor(info, dtype=_dt.int64)


class _Cholesky(Function):
    node_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, A):
        a, lead = _batch(A)
        with no_grad():
            L, info = _cholesky_values(a)
            bad = info.cpu().numpy()
            if bad.any():
                i = int(np.nonzero(bad)[0][0])
                where = f"(Batch element {i}): " if a.shape[0] > 1 else ""
                raise LinAlgError(f"linalg.cholesky: {where}The factorization could not be completed because the "
                                   f"input is not positive-definite (the leading minor of order {int(bad[i])} is "
                                   "not positive-definite).")
            L = L.reshape(A.shape)
        ctx.save_for_backward(L)
        return L

    @staticmethod
    def backward(ctx, g):
        L, = ctx.saved_tensors
        # PyTorch's formula: Φ = tril(Lᵀ G) made symmetric with its diagonal halved, then L⁻ᵀ Φ L⁻¹
        phi = (_mT(L) @ g).tril()
        phi = 0.5 * (phi + _mT(phi.tril(-1)))
        x = solve_triangular(_mT(L), phi, upper=True)
        return solve_triangular(L, x, upper=False, left=False)

    backward_graph = backward


def cholesky(A, *, upper=False, out=None):  # noqa: N803
    """The Cholesky factor L (lower, L Lᵀ = A) of symmetric positive-definite matrices; upper=True gives Lᵀ.

    Example:
        >>> torch.linalg.cholesky(torch.tensor([[4., 2.], [2., 2.]]))
        tensor([[2., 0.],
                [1., 1.]])
    """
    if out is not None:
        raise TypeError("linalg.cholesky(out=...) is not supported by rawdev")
    _square("linalg.cholesky", A)
    L = _Cholesky.apply(A)
    return _mT(L) if upper else L


def cholesky_ex(A, *, upper=False, check_errors=False):  # noqa: N803
    """(L, info): info[b] > 0 is the order of the first non-positive leading minor instead of an error."""
    _square("linalg.cholesky_ex", A)
    a, lead = _batch(A)
    with no_grad():
        _, info = _cholesky_values(a)
    if bool((info > 0).any().item()):
        if check_errors:
            cholesky(A)
        with no_grad():
            L = _cholesky_values(a)[0].reshape(A.shape)
    else:
        L = cholesky(A)
    return return_cholesky_ex(_mT(L) if upper else L, info.reshape(lead).to(dtype=_dt.int32))


def torch_cholesky(A, upper=False):  # noqa: N803
    """torch.cholesky (deprecated spelling of linalg.cholesky)."""
    return cholesky(A, upper=upper)


def cholesky_solve(B, L, upper=False):  # noqa: N803
    """X with A X = B given A's Cholesky factor L (or U = Lᵀ with upper=True).

    Example:
        >>> L = torch.tensor([[2., 0.], [1., 1.]])
        >>> torch.cholesky_solve(torch.tensor([[8.], [5.]]), L)
        tensor([[1.5000],
                [1.0000]])
    """
    low = _mT(L) if upper else L
    y = solve_triangular(low, B, upper=False)
    return solve_triangular(_mT(low), y, upper=True)


def cholesky_inverse(L, upper=False):  # noqa: N803
    """A⁻¹ from A's Cholesky factor."""
    eye = factory.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(L.shape)
    return cholesky_solve(eye, L, upper)


# ------------------------------------------------------------------ triangular solves
def _substitute(t, b, upper):
    """Row-by-row substitution for triangles t [B, n, n] and right sides b [B, n, k] (numpy): what LAPACK refuses
    for a zero pivot, giving inf/nan there as PyTorch's triangular solves do."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:], dtype=np.result_type(t, b))
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        rest = slice(i + 1, n) if upper else slice(0, i)
        acc = np.einsum("...j,...jk->...k", t[..., i, rest], x[..., rest, :])
        x[..., i, :] = (b[..., i, :] - acc) / t[..., i, i:i + 1]
    return x


class _Trsm(Function):
    node_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, A, B, upper, unit):
        a, _ = _batch(A)
        b, _ = _batch(B)
        with no_grad():
            if a.is_cuda:
                x = _trsm_device(a, b, upper, unit)
            else:
                ha, hb = _host(a), _host(b)
                ha = np.triu(ha) if upper else np.tril(ha)
                if unit:
                    ha = ha.copy()
                    idx = np.arange(ha.shape[-1])
                    ha[:, idx, idx] = 1
                with np.errstate(all="ignore"):
                    try:
                        x = _from_host(np.linalg.solve(ha, hb), a)     # LAPACK on the triangle
                    except np.linalg.LinAlgError:                      # a zero on the diagonal: inf/nan, as torch
                        x = _from_host(_substitute(ha, hb, upper), a)
            x = x.reshape(B.shape)
        ctx.upper, ctx.unit = upper, unit
        ctx.save_for_backward(A, x)
        return x

    @staticmethod
    def backward(ctx, g):
        A, x = ctx.saved_tensors
        gb = solve_triangular(_mT(A), g, upper=not ctx.upper, unitriangular=ctx.unit)
        ga = None
        if ctx.needs_input_grad[0]:
            ga = -(gb @ _mT(x))
            ga = ga.triu(1 if ctx.unit else 0) if ctx.upper else ga.tril(-1 if ctx.unit else 0)
        return ga, gb, None, None

    backward_graph = backward


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):  # noqa: N803
    """X with A X = B for triangular A (only its upper or lower triangle is read; unitriangular: a diagonal of
    ones is assumed). left=False solves X A = B.

    Example:
        >>> torch.linalg.solve_triangular(torch.tensor([[2., 0.], [1., 1.]]), torch.tensor([[2.], [3.]]),
        ...                               upper=False)
        tensor([[1.],
                [2.]])
    """
    if out is not None:
        raise TypeError("linalg.solve_triangular(out=...) is not supported by rawdev")
    if not left:
        return _mT(solve_triangular(_mT(A), _mT(B), upper=not upper, unitriangular=unitriangular))
    lead = tuple(np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    a, b = A.expand(*lead, *A.shape[-2:]), B.expand(*lead, *B.shape[-2:])
    return _Trsm.apply(a, b, bool(upper), bool(unitriangular))


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):  # noqa: N803
    """torch.triangular_solve (deprecated): (X with op(A) X = b, a copy of A)."""
    a = _mT(A) if transpose else A
    x = solve_triangular(a, b, upper=upper != transpose, unitriangular=unitriangular)
    return return_triangular_solve(x, A.clone())


# ------------------------------------------------------------------ LU
def lu_factor(A, *, pivot=True):  # noqa: N803
    """(LU, pivots): L (unit lower, below the diagonal) and U packed in one matrix, with LAPACK's 1-based int32
    row-exchange pivots. No gradient (use solve/inv/det for differentiable results).

    Example:
        >>> torch.linalg.lu_factor(torch.tensor([[1., 2.], [3., 4.]])).pivots
        tensor([2, 2], dtype=torch.int32)
    """
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    if A.ndim < 2:
        raise RuntimeError("linalg.lu_factor: The input tensor A must have at least 2 dimensions.")
    _square("linalg.lu_factor", A)
    a, lead = _batch(A)
    with no_grad():
        lu, piv, _, _ = _lu_factor(a.detach())
    n = A.shape[-1]
    return return_lu_factor(lu.reshape(A.shape), piv.to(device=A.device).reshape(*lead, n))


def lu_factor_ex(A, *, pivot=True, check_errors=False):  # noqa: N803
    """(LU, pivots, info): info[b] > 0 names the first zero pivot (U is singular)."""
    a, lead = _batch(A)
    with no_grad():
        lu, piv, _, info = _lu_factor(a.detach())
    if check_errors and bool((info > 0).any().item()):
        _check_invertible("linalg.lu_factor_ex", a)
    n = A.shape[-1]
    return return_lu_factor_ex(lu.reshape(A.shape), piv.to(device=A.device).reshape(*lead, n),
                               info.to(device=A.device, dtype=_dt.int32).reshape(lead))


def _perm_from_pivots(pivots, n):
    """The row order (PA = LU) that applying LAPACK pivots 1..n in turn produces, as an int64 [B, n] tensor."""
    piv = pivots.reshape(-1, n).to(dtype=_dt.int64).cpu().numpy() - 1
    perm = np.tile(np.arange(n), (piv.shape[0], 1))
    for k in range(n):
        p = piv[:, k]
        rows = np.arange(piv.shape[0])
        a, b = perm[rows, k].copy(), perm[rows, p].copy()
        perm[rows, k], perm[rows, p] = b, a
    from ..tensor.factory import tensor
    return tensor(perm, device=pivots.device)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):  # noqa: N803
    """(P, L, U) with A = P L U from lu_factor's packed result.

    Example:
        >>> P, L, U = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor([[1., 2.], [3., 4.]])))
        >>> (P @ L @ U).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    n = LU_data.shape[-1]
    L = LU_data.tril(-1) + factory.eye(n, dtype=LU_data.dtype, device=LU_data.device)
    U = LU_data.triu()
    perm = _perm_from_pivots(LU_pivots, n).reshape(*LU_data.shape[:-2], n)
    eye = factory.eye(n, dtype=LU_data.dtype, device=LU_data.device)
    P = _mT(eye.index_select(0, perm.reshape(-1)).reshape(*perm.shape, n))      # P[perm[i], i] = 1
    return return_lu(P, L, U)


def lu(A, *, pivot=True):  # noqa: N803
    """(P, L, U) with A = P L U (L unit lower triangular, U upper).

    Example:
        >>> P, L, U = torch.linalg.lu(torch.tensor([[1., 2.], [3., 4.]]))
        >>> U
        tensor([[3.0000, 4.0000],
                [0.0000, 0.6667]])
    """
    LU, piv = lu_factor(A, pivot=pivot)
    return lu_unpack(LU, piv)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):  # noqa: N803
    """X with A X = B from A's lu_factor (adjoint: Aᵀ X = B; left=False: X A = B)."""
    if not left:
        return _mT(lu_solve(LU, pivots, _mT(B), adjoint=not adjoint))
    n = LU.shape[-1]
    perm = _perm_from_pivots(pivots, n).reshape(*LU.shape[:-2], n)
    L = LU.tril(-1) + factory.eye(n, dtype=LU.dtype, device=LU.device)
    U = LU.triu()
    if not adjoint:
        pb = B.gather(-2, perm.unsqueeze(-1).expand(*perm.shape, B.shape[-1]))
        return solve_triangular(U, solve_triangular(L, pb, upper=False, unitriangular=True), upper=True)
    y = solve_triangular(_mT(U), B, upper=False)
    z = solve_triangular(_mT(L), y, upper=True, unitriangular=True)
    inv_perm = perm.argsort(-1)
    return z.gather(-2, inv_perm.unsqueeze(-1).expand(*inv_perm.shape, B.shape[-1]))


# ------------------------------------------------------------------ QR
class _QR(Function):
    node_name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, A, mode):
        a, lead = _batch(A)
        with no_grad():
            if a.is_cuda:
                q, r = _qr_device(a, mode == "complete")
            else:
                h = _host(a)
                qs, rs = zip(*[np.linalg.qr(h[i], mode=mode) for i in range(h.shape[0])]) if h.shape[0] else ((), ())
                m, n = a.shape[-2:]
                k = m if mode == "complete" else min(m, n)
                q = _from_host(np.stack(qs) if qs else np.zeros((0, m, k)), a)
                r = _from_host(np.stack(rs) if rs else np.zeros((0, k, n)), a)
            q = q.reshape(*lead, *q.shape[-2:])
            r = r.reshape(*lead, *r.shape[-2:])
        ctx.mode = mode
        ctx.save_for_backward(q, r)
        return q, r

    @staticmethod
    def backward(ctx, gq, gr):
        q, r = ctx.saved_tensors
        m, n = q.shape[-2], r.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m < n:
            raise RuntimeError("linalg.qr: rawdev differentiates QR of tall or square matrices (m >= n) only")
        gq = factory.zeros_like(q) if gq is None else gq
        gr = factory.zeros_like(r) if gr is None else gr
        M = r @ _mT(gr) - _mT(gq) @ q
        copyltu = M.tril(-1) + _mT(M.tril(-1)) + M.diagonal(0, -2, -1).diag_embed()
        rhs = gq + q @ copyltu
        # gA = rhs R⁻ᵀ, i.e. (R⁻¹ rhsᵀ)ᵀ
        return _mT(solve_triangular(r, _mT(rhs), upper=True)), None

    backward_graph = backward


def qr(A, mode="reduced"):  # noqa: N803
    """A = Q R with orthonormal Q and upper-triangular R (Householder; LAPACK's signs). mode: 'reduced'
    (Q [m, k], R [k, n], k = min(m, n)), 'complete' (Q [m, m]) or 'r' (R only, Q empty).

    Example:
        >>> Q, R = torch.linalg.qr(torch.tensor([[3., 1.], [4., 2.]]))
        >>> R
        tensor([[-5.0000, -2.2000],
                [ 0.0000,  0.4000]])
    """
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    if A.ndim < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    q, r = _QR.apply(A, "reduced" if mode == "r" else mode)
    if mode == "r":
        return return_qr(q.new_empty((0,)), r)
    return return_qr(q, r)


def torch_qr(input, some=True):  # noqa: A002
    """torch.qr (deprecated): some=True is mode 'reduced', False 'complete'."""
    return qr(input, "reduced" if some else "complete")


for _name, _fn, _kw in (
        ("cholesky", torch_cholesky, {}), ("cholesky_solve", cholesky_solve, {}),
        ("cholesky_inverse", cholesky_inverse, {}), ("triangular_solve", triangular_solve, {}),
        ("lu_unpack", lu_unpack, {"method": False}), ("qr", torch_qr, {})):
    declare(_name, _fn, family="decomp", **_kw)

__all__ = ["cholesky", "cholesky_ex", "cholesky_solve", "cholesky_inverse", "solve_triangular", "triangular_solve",
           "lu_factor", "lu_factor_ex", "lu", "lu_unpack", "lu_solve", "qr"]
