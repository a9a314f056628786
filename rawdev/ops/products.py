"""Products and matrix functions beyond matmul, composed from declared ops (both devices and autograd come with
them): outer, dot, mv, bmm, addmm, baddbmm, addmv, einsum, F.bilinear, trace, inner, vdot, addr, addbmm, chain_matmul /
linalg.multi_dot, linalg.matrix_exp (scaling and squaring of a degree-13 Padé approximant), linalg.solve_ex,
linalg.tensorinv and linalg.tensorsolve."""
import math
import string
import warnings

import numpy as np

from ..errors import LinAlgError
from ..tensor import factory
from . import decomp, solve_inv_det, spectral
from .registry import declare
from .rtypes import return_type as _rt
from .structure import tensordot

return_solve_ex = _rt("linalg_solve_ex", ["result", "info"])


def trace(input):  # noqa: A002
    """The sum of a matrix's main diagonal (integers sum to int64).

    Example:
        >>> torch.arange(6.).reshape(2, 3).trace()
        tensor(4.)
    """
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return input.diagonal().sum()


def inner(input, other):  # noqa: A002
    """Sums of products over the last dimension of both (a scalar operand multiplies instead).

    Example:
        >>> torch.inner(torch.ones(2, 3), torch.ones(4, 3)).shape
        torch.Size([2, 4])
    """
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([-1], [-1]))


def vdot(input, other):  # noqa: A002
    """The dot product of two 1-D tensors (the first conjugated: the same for real tensors)."""
    return input.dot(other)


def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    """beta · input + alpha · outer(vec1, vec2) (input ignored, NaN included, when beta is 0)."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D" if vec1.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return _scaled_sum(input, outer(vec1, vec2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """beta · input + alpha · Σ_b batch1[b] @ batch2[b]."""
    return _scaled_sum(input, bmm(batch1, batch2).sum(0), beta, alpha)


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices; the first may be a 1-D row vector and the last a 1-D column vector.

    Example:
        >>> torch.linalg.multi_dot([torch.ones(3), torch.ones(3, 4), torch.ones(4)])
        tensor(12.)
    """
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        edge = i == 0 or i == len(tensors) - 1
        if t.ndim != 2 and not (edge and t.ndim == 1):
            where = "first" if i == 0 else "last" if i == len(tensors) - 1 else f"tensor {i}"
            want = "1D or 2D" if edge else "2D"
            raise RuntimeError(f"multi_dot(): {where} tensor must be {want} but got {t.ndim}D" if edge else
                               f"multi_dot(): tensor {i} must be {want} but got {t.ndim}D")
    first, last = tensors[0], tensors[-1]
    mats = [first.unsqueeze(0) if first.ndim == 1 else first] + tensors[1:-1] + \
        [last.unsqueeze(1) if last.ndim == 1 else last]
    result = mats[0]
    for m in mats[1:]:
        result = result @ m
    if first.ndim == 1:
        result = result.squeeze(0)
    if last.ndim == 1:
        result = result.squeeze(-1)
    return result


def chain_matmul(*matrices, out=None):
    """The product of the given matrices (deprecated in PyTorch for linalg.multi_dot, which it calls)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


# Padé(13) coefficients and the 1-norm bound under which it is accurate to double precision (Higham 2005).
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def matrix_exp(A):  # noqa: N803
    """e^A of each square matrix in A [..., n, n]: A is scaled by 2^-s so that its 1-norm is under 5.37, the
    degree-13 Padé approximant (V − U)⁻¹(V + U) is formed, then squared s times (Higham's method; s from the
    largest norm in the batch). Differentiable (through the products and the solve).

    Example:
        >>> torch.linalg.matrix_exp(torch.tensor([[0., 1.], [-1., 0.]]))
        tensor([[ 0.5403,  0.8415],
                [-0.8415,  0.5403]])
    """
    decomp._square("linalg.matrix_exp", A)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    norm = float(A.detach().abs().sum(-2).amax().item())
    s = max(0, math.ceil(math.log2(norm / _THETA13))) if norm > _THETA13 else 0
    X = A / (2.0 ** s) if s else A
    eye = factory.eye(n, dtype=A.dtype, device=A.device)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    b = _PADE13
    U = X @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 + b[0] * eye
    R = solve_inv_det.solve(V - U, V + U)
    for _ in range(s):
        R = R @ R
    return R


def solve_ex(A, B, *, left=True, check_errors=False, out=None):  # noqa: N803
    """(result, info) of linalg.solve: info > 0 names the first zero pivot of a singular A instead of raising
    (unless check_errors); the result is then not meaningful."""
    lu, piv, info = decomp.lu_factor_ex(A)
    singular = bool((info > 0).any().item())
    if singular and check_errors:
        raise LinAlgError("linalg.solve_ex: The solver failed because the input matrix is singular.")
    if not singular:
        return return_solve_ex(solve_inv_det.solve(A, B, left=left), info)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    X = decomp.lu_solve(lu, piv, Bm if left else Bm.mT, left=True)
    X = X if left else X.mT
    return return_solve_ex(X.squeeze(-1) if vector else X, info)


def tensorinv(A, ind=2):  # noqa: N803
    """The inverse of A read as a matrix of shape prod(A.shape[:ind]) x prod(A.shape[ind:]); the result has
    shape A.shape[ind:] + A.shape[:ind] (tensordot(tensorinv(A), A, ind) is the identity)."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return solve_inv_det.inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A, B, dims=None):  # noqa: N803
    """X with tensordot(A, X, X.ndim) == B: A's dims given in `dims` are moved to the end first; X has shape
    A.shape[B.ndim:]."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        keep = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(*keep, *dims)
    rest = A.shape[B.ndim:]
    n = math.prod(rest)
    if math.prod(A.shape[:B.ndim]) != n:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {n} != {math.prod(A.shape[:B.ndim])}")
    return solve_inv_det.solve(A.reshape(n, n), B.reshape(n)).reshape(rest)


def pinverse(input, rcond=1e-15):  # noqa: A002
    """torch.pinverse: linalg.pinv with singular values under rcond · σ_max treated as zero."""
    return spectral.pinv(input, rtol=rcond)


# ------------------------------------------------------------------ small linear algebra
def outer(input, vec2):  # noqa: A002
    """The outer product of two 1-D tensors: [n] × [m] → [n, m]."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.ndim}-D" if input.ndim != 1 else
                           f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


def dot(input, tensor):  # noqa: A002
    """The inner product of two 1-D tensors of one length."""
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got {input.shape[0]} and "
                           f"{tensor.shape[0]} elements respectively")
    return (input * tensor).sum()


def mv(input, vec):  # noqa: A002
    """Matrix [n, m] times vector [m]."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    from .linalg import matmul
    return matmul(input, vec)   # the plain function: mv is an op of its own under autocast, not a matmul


def bmm(input, mat2):  # noqa: A002
    """Batched matrix product of [b, n, m] and [b, m, p] (no broadcasting)."""
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{input.shape[0]}, "
                           f"{input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return input @ mat2


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta · input + alpha · (mat1 @ mat2)."""
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.ndim}-D tensor" if mat1.ndim != 2 else
                           f"mat2 must be a matrix, got {mat2.ndim}-D tensor")
    return _scaled_sum(input, mat1 @ mat2, beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """beta · input + alpha · bmm(batch1, batch2)."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """beta · input + alpha · (mat @ vec)."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def _scaled_sum(input, prod, beta, alpha):  # noqa: A002
    p = prod if alpha == 1 else prod * alpha
    if beta == 0:     # PyTorch ignores input (even NaN in it) when beta is 0
        return p
    return p + (input if beta == 1 else input * beta)


# ------------------------------------------------------------------ einsum
def _parse_einsum(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in string.ascii_letters if c not in used]
    ell_n = 0
    for t, op in zip(terms, operands):
        if "..." in t:
            ell_n = max(ell_n, op.ndim - (len(t) - 3))
    ell = "".join(spare[:ell_n])
    out_terms = []
    for t, op in zip(terms, operands):
        if "..." in t:
            n = op.ndim - (len(t) - 3)
            t = t.replace("...", ell[ell_n - n:] if n else "")
        if len(t) != op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not match the "
                               f"number of dimensions ({op.ndim}) for operand {len(out_terms)}"
                               + (" and no ellipsis was given" if "..." not in lhs else ""))
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    return out_terms, out


def _diag_reduce(t, sub):
    """Operand t with subscripts sub that repeat a letter: take the diagonal over the repeats."""
    while len(set(sub)) != len(sub):
        for i, c in enumerate(sub):
            j = sub.find(c, i + 1)
            if j >= 0:
                t = t.diagonal(0, i, j)          # the diagonal goes last
                sub = sub[:i] + sub[i + 1:j] + sub[j + 1:] + c
                break
    return t, sub


def _contract(a, sa, b, sb, keep):
    """a[sa] · b[sb] summed over the letters in both that are not in keep: one (batched) matmul."""
    batch = [c for c in sa if c in sb and c in keep]
    summed = [c for c in sa if c in sb and c not in keep]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]
    size = {c: a.shape[sa.index(c)] for c in sa}
    size.update({c: b.shape[sb.index(c)] for c in sb})
    for c in batch + summed:
        if a.shape[sa.index(c)] != b.shape[sb.index(c)] and 1 not in (a.shape[sa.index(c)], b.shape[sb.index(c)]):
            raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                               f"{list(a.shape)} and {list(b.shape)}")
        size[c] = max(a.shape[sa.index(c)], b.shape[sb.index(c)])
    prod = lambda cs: int(np.prod([size[c] for c in cs], dtype=np.int64))  # noqa: E731
    ap = a.permute(*[sa.index(c) for c in batch + left + summed])
    bp = b.permute(*[sb.index(c) for c in batch + summed + right])
    ap = ap.expand(*[size[c] for c in batch + left + summed]).reshape(prod(batch), prod(left), prod(summed))
    bp = bp.expand(*[size[c] for c in batch + summed + right]).reshape(prod(batch), prod(summed), prod(right))
    r = (ap @ bp).reshape(*[size[c] for c in batch + left + right])
    return r, "".join(batch + left + right)


def einsum(equation, *operands):
    """Sums of products named by subscripts: 'ij,jk->ik' (matmul), 'bij,bjk->bik', 'i,i->', 'ij->ji',
    'ii->i' (diagonal), '...ij,...jk->...ik', implicit outputs. Built from permute/reshape/matmul/sum, so it
    runs on both devices and is differentiable.

    Example:
        >>> torch.einsum('bij,bjk->bik', a, b)      # bmm
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    subs, out = _parse_einsum(equation, operands)
    ts = []
    for k, (t, s) in enumerate(zip(operands, subs)):
        t, s = _diag_reduce(t, s)
        # sum letters found in no other operand and not in the output right away
        others = set("".join(x for j, x in enumerate(subs) if j != k)) | set(out)
        lone = [i for i, c in enumerate(s) if c not in others]
        if lone:
            t = t.sum(tuple(lone))
            s = "".join(c for c in s if c not in [s[i] for i in lone])
        ts.append((t, s))
    t, s = ts[0]
    for k in range(1, len(ts)):
        b, sb = ts[k]
        later = set(out) | set("".join(x for _, x in ts[k + 1:]))
        t, s = _contract(t, s, b, sb, later)
    gone = [i for i, c in enumerate(s) if c not in out]
    if gone:
        t = t.sum(tuple(gone))
        s = "".join(c for c in s if c in out)
    for c in out:
        if c not in s:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                               f"operand")
    return t.permute(*[s.index(c) for c in out]) if s != out else t


def bilinear(input1, input2, weight, bias=None):
    """y = x1ᵀ A x2 + b for weight A [out, in1, in2] over inputs [..., in1] and [..., in2].

    Example:
        >>> F.bilinear(torch.ones(2, 3), torch.ones(2, 4), torch.ones(5, 3, 4)).shape
        torch.Size([2, 5])
    """
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input sizes {input1.shape[-1]} and {input2.shape[-1]} do not match "
                           f"weight {list(weight.shape)}")
    lead = tuple(input1.shape[:-1])
    x1, x2 = input1.reshape(-1, input1.shape[-1]), input2.reshape(-1, input2.shape[-1])
    # (x1 A_o) · x2 for every o: one GEMM [B, in1] × [in1, out·in2], then a product with x2 summed over in2
    t = (x1 @ weight.permute(1, 0, 2).reshape(weight.shape[1], -1)).reshape(x1.shape[0], weight.shape[0], -1)
    y = einsum("boj,bj->bo", t, x2)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, weight.shape[0])


declare("trace", trace, family="products", torch=False)       # rawdev.trace(tensor) also works (rawdev.trace)
declare("inner", inner, family="products")
declare("vdot", vdot, family="products")
declare("addr", addr, family="products", inplace=True)
declare("addbmm", addbmm, family="products", inplace=True)
declare("chain_matmul", chain_matmul, family="products", method=False)
declare("matrix_exp", matrix_exp, family="products")
declare("pinverse", pinverse, family="products")
for _name, _fn, _kw in (
        ("outer", outer, {"aliases": ("ger",)}), ("dot", dot, {}), ("mv", mv, {}), ("bmm", bmm, {}),
        ("addmm", addmm, {"inplace": True}), ("baddbmm", baddbmm, {"inplace": True}),
        ("addmv", addmv, {"inplace": True})):
    declare(_name, _fn, family="products", **_kw)
declare("einsum", einsum, family="products", method=False)
declare("bilinear", bilinear, family="products", functional=True, torch=False, method=False)
