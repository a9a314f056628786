"""Symmetric eigendecomposition and the SVD, and what is built on them (eigvalsh, svdvals, pinv, matrix_rank,
the 2- and nuclear matrix norms, torch.svd, pca_lowrank-free PCA programs).

Where they run: a cpu tensor goes to numpy.linalg (LAPACK's syevd and gesdd, as PyTorch's cpu). A cuda tensor
is decomposed on the device by one-sided Jacobi (Hestenes): column pairs are orthogonalised by plane rotations,
n/2 disjoint pairs at a time in round-robin order, whole batch at once, until every pair is orthogonal to
working precision (one host read per sweep). Its singular values are accurate to the last bits relative to each
other, which is why it is used instead of eig(AᵀA). eigh runs the same iteration on A + c·I (c ≥ ‖A‖, so the
matrix is positive definite and its singular vectors are its eigenvectors), then subtracts c; eigenvalues carry
an absolute error of a few ulp of ‖A‖, as LAPACK's. Eigenvectors and singular vectors are unique only up to sign;
the device and LAPACK may choose differently.

Gradients (real, distinct eigen/singular values; they diverge as values coincide, as PyTorch's):
eigh: V (diag(g_L) + F ∘ (X − Xᵀ)/2) Vᵀ with X = Vᵀ g_V, F_ij = 1/(λ_j − λ_i);
svd (Townsend): U[(F∘(UᵀgU − gUᵀU))S + diag(gS) + S(F∘(VᵀgV − gVᵀV))]Vᵀ + (I − UUᵀ)gU S⁻¹Vᵀ + US⁻¹gVᵀ(I − VVᵀ),
F_ij = 1/(s_j² − s_i²).
"""

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor import factory
from .registry import declare
from .rtypes import return_type as _rt
from .select.functions import where as _where

return_eigh = _rt("linalg_eigh", ["eigenvalues", "eigenvectors"])
return_svd = _rt("linalg_svd", ["U", "S", "Vh"])
return_torch_svd = _rt("svd", ["U", "S", "V"])

_MAX_SWEEPS = 40


def _mT(x):
    return x.transpose(-2, -1)


def _rounds(n):
    """Round-robin pairings of n (even) columns: n − 1 rounds of n/2 disjoint pairs (i, j), i < j."""
    players = list(range(n))
    out = []
    for _ in range(n - 1):
        pairs = [(players[k], players[n - 1 - k]) for k in range(n // 2)]
        out.append(([min(p) for p in pairs], [max(p) for p in pairs]))
        players = [players[0], players[-1]] + players[1:-1]
    return out


def _jacobi(U, V):
    """One-sided Jacobi on the columns of U [B, m, n] (n even), accumulating the rotations in V [B, n, n].
    Returns (U with orthogonal columns, V)."""
    from ..tensor.factory import tensor
    dev = U.device
    # A pair is orthogonal once |uᵢ·uⱼ| ≤ tol·‖uᵢ‖‖uⱼ‖ with LAPACK xGESVJ's tol = √m·u (u the unit roundoff). The
    # rounding of the m-term dot product alone leaves `off` around that size, so a fixed 1e-7 (float32) was below
    # what some matrices can reach and they ran all 40 sweeps; a sweep that no longer lowers the worst pair while it
    # is within a few roundoffs of m·u has reached that floor too.
    m = U.shape[-2]
    unit = 2.0 ** -53 if U.dtype is _dt.float64 else 2.0 ** -24
    eps, floor = max(m, 1) ** 0.5 * unit, 8 * max(m, 1) * unit
    prev = float("inf")
    rounds = [(tensor(i, device=dev), tensor(j, device=dev)) for i, j in _rounds(U.shape[-1])]
    for _ in range(_MAX_SWEEPS):
        worst = None
        for ci, cj in rounds:
            ui, uj = U.index_select(2, ci), U.index_select(2, cj)
            alpha = (ui * ui).sum(1)
            beta = (uj * uj).sum(1)
            gamma = (ui * uj).sum(1)
            off = gamma.abs() / (alpha * beta).sqrt().clamp_min(1e-300 if U.dtype is _dt.float64 else 1e-38)
            worst = off.amax() if worst is None else worst.maximum(off.amax())
            rotate = off > eps
            g = _where(rotate, gamma, 1.0)
            zeta = (beta - alpha) / (2.0 * g)
            t = _where(zeta >= 0, 1.0, -1.0) / (zeta.abs() + (1.0 + zeta * zeta).sqrt())
            t = _where(rotate, t, 0.0)
            c = 1.0 / (1.0 + t * t).sqrt()
            s = c * t
            c, s = c.unsqueeze(1), s.unsqueeze(1)
            U = U.index_copy(2, ci, c * ui - s * uj).index_copy(2, cj, s * ui + c * uj)
            vi, vj = V.index_select(2, ci), V.index_select(2, cj)
            V = V.index_copy(2, ci, c * vi - s * vj).index_copy(2, cj, s * vi + c * vj)
        w = float(worst.item())
        if w <= eps or (w <= floor and w >= prev):
            break
        prev = w
    return U, V


def _svd_device(A):
    """(U [B, m, k], S [B, k] descending, V [B, n, k]) of A [B, m, n] (reduced), by one-sided Jacobi."""
    b, m, n = A.shape
    if m < n:
        V, S, U = _svd_device(_mT(A).contiguous())
        return U, S, V
    f = factory
    work = A
    pad = n % 2
    if pad:                                          # an even column count for the pairing; the zero column stays 0
        work = f.zeros((b, m, n + 1), dtype=A.dtype, device=A.device)
        work[:, :, :n] = A
    cols = n + pad
    V = f.eye(cols, dtype=A.dtype, device=A.device).unsqueeze(0).expand(b, cols, cols).contiguous()
    U, V = _jacobi(work.contiguous(), V)
    S = (U * U).sum(1).sqrt()                        # [B, cols]
    order = S.argsort(-1, descending=True)[:, :n]
    S = S.gather(1, order)
    U = U.gather(2, order.unsqueeze(1).expand(b, m, n))
    V = V.gather(2, order.unsqueeze(1).expand(b, cols, n))[:, :n, :]
    U = U / _where(S > 0, S, 1.0).unsqueeze(1)
    if pad or bool((S == 0).any().item()):
        U = _complete_columns(U, S)
    return U, S, V


def _complete_columns(U, S):
    """Columns of U whose singular value is 0 are not determined by A: fill them with unit vectors orthogonal to
    the rest (Gram–Schmidt against the identity's columns), so U keeps orthonormal columns as LAPACK's."""
    b, m, k = U.shape
    host_s = S.detach().cpu().numpy()
    f = factory
    for bi in range(b):
        zero = [j for j in range(k) if host_s[bi, j] == 0]
        for j in zero:
            for e in range(m):
                v = f.zeros((m,), dtype=U.dtype, device=U.device)
                v[e] = 1.0
                others = U[bi]
                v = v - others @ (_mT(others) @ v)
                nv = float(v.norm().item())
                if nv > 0.5:
                    U[bi, :, j] = v / nv
                    break
    return U


class _Eigh(Function):
    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, A, lower):
        lead = tuple(A.shape[:-2])
        n = A.shape[-1]
        a = A.reshape(-1, n, n)
        with no_grad():
            sym = a.tril() + _mT(a.tril(-1)) if lower else a.triu() + _mT(a.triu(1))
            if a.is_cuda:
                c = sym.abs().sum(-1).amax(-1).clamp_min(1e-30)            # ‖A‖∞ ≥ |λ|: A + cI is positive semidefinite
                eye = factory.eye(n, dtype=a.dtype, device=a.device)
                shifted = sym + c.reshape(-1, 1, 1) * eye
                _, S, V = _svd_device(shifted.contiguous())
                w = S - c.unsqueeze(1)
                order = w.argsort(-1)                                      # ascending, as LAPACK
                w = w.gather(1, order)
                V = V.gather(2, order.unsqueeze(1).expand(V.shape))
            else:
                hw, hv = np.linalg.eigh(sym.detach().numpy())
                from ..tensor.factory import tensor
                w, V = tensor(hw, dtype=a.dtype), tensor(hv, dtype=a.dtype)
        w, V = w.reshape(*lead, n), V.reshape(*lead, n, n)
        ctx.save_for_backward(w, V)
        return w, V

    @staticmethod
    def backward(ctx, gw, gv):
        w, V = ctx.saved_tensors
        inner = factory.zeros_like(V) if gw is None else gw.diag_embed()
        if gv is not None:
            X = _mT(V) @ gv
            diff = w.unsqueeze(-2) - w.unsqueeze(-1)                      # λ_j − λ_i
            eye = factory.eye(w.shape[-1], dtype=w.dtype, device=w.device)
            F = _where(eye.bool(), 0.0, 1.0 / _where(eye.bool(), 1.0, diff))
            inner = inner + F * (X - _mT(X)) * 0.5
        return V @ inner @ _mT(V), None

    backward_graph = backward


def _square(name, A):
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1]} matrices")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype._legacy[:-6]}")


def eigh(A, UPLO="L"):  # noqa: N803
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices; only the UPLO
    triangle is read.

    Example:
        >>> torch.linalg.eigh(torch.tensor([[2., 1.], [1., 2.]])).eigenvalues
        tensor([1., 3.])
    """
    _square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    w, V = _Eigh.apply(A, UPLO == "L")
    return return_eigh(w, V)


def eigvalsh(A, UPLO="L"):  # noqa: N803
    """The eigenvalues (ascending) of symmetric matrices.

    Example:
        >>> torch.linalg.eigvalsh(torch.tensor([[2., 0.], [0., -1.]]))
        tensor([-1.,  2.])
    """
    return eigh(A, UPLO).eigenvalues


class _SVD(Function):
    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, A):
        lead = tuple(A.shape[:-2])
        m, n = A.shape[-2:]
        a = A.reshape(-1, m, n)
        with no_grad():
            if a.is_cuda:
                U, S, V = _svd_device(a.contiguous())
            else:
                hu, hs, hvh = np.linalg.svd(a.detach().numpy(), full_matrices=False)
                from ..tensor.factory import tensor
                U, S, V = (tensor(hu, dtype=a.dtype), tensor(hs, dtype=a.dtype),
                           tensor(np.swapaxes(hvh, -1, -2).copy(), dtype=a.dtype))
        k = min(m, n)
        U, S, V = U.reshape(*lead, m, k), S.reshape(*lead, k), V.reshape(*lead, n, k)
        ctx.save_for_backward(U, S, V)
        return U, S, _mT(V)

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        U, S, V = ctx.saved_tensors
        f = factory
        k = S.shape[-1]
        eye = f.eye(k, dtype=S.dtype, device=S.device).bool()
        s2 = S * S
        F = _where(eye, 0.0, 1.0 / _where(eye, 1.0, s2.unsqueeze(-2) - s2.unsqueeze(-1)))
        Sd = S.diag_embed()
        inner = f.zeros(tuple(U.shape[:-2]) + (k, k), dtype=S.dtype, device=S.device)
        if gs is not None:
            inner = inner + gs.diag_embed()
        extra = None
        sinv = (1.0 / S).diag_embed()
        if gu is not None:
            J = F * (_mT(U) @ gu - _mT(gu) @ U)
            inner = inner + J @ Sd
            extra = (gu - U @ (_mT(U) @ gu)) @ sinv @ _mT(V)
        if gvh is not None:
            gv = _mT(gvh)
            K = F * (_mT(V) @ gv - _mT(gv) @ V)
            inner = inner + Sd @ K
            term = U @ sinv @ _mT(gv - V @ (_mT(V) @ gv))
            extra = term if extra is None else extra + term
        ga = U @ inner @ _mT(V)
        return ga if extra is None else ga + extra

    backward_graph = backward


def svd(A, full_matrices=True, *, driver=None):  # noqa: N803
    """A = U diag(S) Vh with S descending. full_matrices=True is accepted for square A and for reduced use;
    rawdev returns the reduced factors (U [m, k], Vh [k, n], k = min(m, n)) and raises for a full request on a
    non-square A.

    Example:
        >>> torch.linalg.svd(torch.tensor([[3., 0.], [0., -2.]])).S
        tensor([3., 2.])
    """
    if A.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    if full_matrices and A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.svd: rawdev computes the reduced SVD; call it with full_matrices=False")
    U, S, Vh = _SVD.apply(A)
    return return_svd(U, S, Vh)


def svdvals(A):  # noqa: N803
    """The singular values, descending.

    Example:
        >>> torch.linalg.svdvals(torch.tensor([[0., 2.], [1., 0.]]))
        tensor([2., 1.])
    """
    return svd(A, full_matrices=False).S


def torch_svd(input, some=True, compute_uv=True):  # noqa: A002
    """torch.svd (deprecated): (U, S, V) with V, not Vh; some=True is the reduced form."""
    U, S, Vh = svd(input, full_matrices=not some and input.shape[-1] == input.shape[-2])
    return return_torch_svd(U, S, _mT(Vh))


def pinv(A, *, atol=None, rtol=None, hermitian=False):  # noqa: N803
    """The Moore–Penrose pseudo-inverse: V diag(1/s) Uᵀ over the singular values above max(atol, rtol·s_max)
    (rtol defaults to eps·max(m, n) when neither is given).

    Example:
        >>> torch.linalg.pinv(torch.tensor([[1., 0.], [0., 0.]]))
        tensor([[1., 0.],
                [0., 0.]])
    """
    U, S, Vh = svd(A, full_matrices=False)
    cut = _cutoff(A, S, atol, rtol)
    keep = S > cut.unsqueeze(-1)
    sinv = _where(keep, 1.0 / _where(keep, S, 1.0), 0.0)
    return _mT(Vh) @ (sinv.unsqueeze(-1) * _mT(U))


def _cutoff(A, S, atol, rtol):
    eps = 2.220446049250313e-16 if A.dtype is _dt.float64 else 1.1920928955078125e-07
    smax = S.amax(-1) if S.shape[-1] else S.sum(-1)
    if rtol is None:
        rtol = eps * max(A.shape[-2], A.shape[-1]) if atol is None or atol == 0 else 0.0
    cut = smax * rtol
    if atol is not None:
        cut = cut.clamp_min(float(atol))
    return cut


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):  # noqa: N803
    """The number of singular values above max(atol, rtol·s_max).

    Example:
        >>> torch.linalg.matrix_rank(torch.tensor([[1., 2.], [2., 4.]]))
        tensor(1)
    """
    if tol is not None:
        atol, rtol = tol, 0.0
    S = svdvals(A.detach())
    return (S > _cutoff(A, S, atol, rtol).unsqueeze(-1)).sum(-1)


def svd_lowrank(A, q=6, niter=2, M=None):  # noqa: N803
    """An approximate rank-q SVD (U [.., m, q], S [.., q], V [.., n, q]) by Halko et al.'s randomized range finder:
    Q = orth((A Aᵀ)^niter A G) for a Gaussian G, then the exact SVD of Qᵀ A. M (broadcast) is subtracted from A.

    Example:
        >>> U, S, V = torch.svd_lowrank(torch.randn(50, 20), q=5)
    """
    from .decomp import qr
    a = A if M is None else A - M
    m, n = a.shape[-2:]
    q = min(q, m, n)
    g = a.new_empty(tuple(a.shape[:-2]) + (n, q)).normal_()
    y = qr(a @ g).Q
    for _ in range(niter):
        y = qr(_mT(a) @ y).Q
        y = qr(a @ y).Q
    b = _mT(y) @ a
    u_b, s, vh = svd(b, full_matrices=False)
    return y @ u_b, s, _mT(vh)


def pca_lowrank(A, q=None, center=True, niter=2):  # noqa: N803
    """PCA of the rows of A [.., m, n]: (U, S, V) of the (centered) data by svd_lowrank, q = min(6, m, n) by
    default; the principal directions are V's columns.

    Example:
        >>> U, S, V = torch.pca_lowrank(torch.randn(100, 8), q=3)
        >>> V.shape
        torch.Size([8, 3])
    """
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    mean = A.mean(-2, keepdim=True) if center else None
    return svd_lowrank(A, q, niter, mean)


declare("svd", torch_svd, family="spectral")
declare("svd_lowrank", svd_lowrank, family="spectral", method=False)
declare("pca_lowrank", pca_lowrank, family="spectral", method=False)

__all__ = ["eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank", "svd_lowrank", "pca_lowrank"]
