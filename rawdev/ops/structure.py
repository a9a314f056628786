"""Ops that build or rearrange whole tensors, composed from declared ops (so both devices and autograd come with
them): diff, cross, tensordot, kron, cartesian_prod, combinations, block_diag, tril/triu_indices, vander, rot90,
diag, diag_embed, diagflat, broadcast_tensors/broadcast_shapes, column_stack, trapezoid/cumulative_trapezoid, and the
Tensor methods fill_diagonal_ and adjoint."""
import itertools

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import factory
from ..tensor.core import Tensor
from .registry import declare
from .shape import wrap_dim


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    """The n-th forward difference along dim: out[i] = x[i + 1] − x[i], applied n times (for bool, x[i + 1] != x[i]);
    prepend/append are joined to input along dim first.

    Args:
        input: a tensor of at least one dimension.
        n: how many times to difference.
        dim: the dimension.
        prepend, append: tensors joined before/after input along dim.

    Example:
        >>> torch.diff(torch.tensor([1, 3, 6, 10]))
        tensor([2, 3, 4])
    """
    from .join import cat
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi, lo = x.narrow(d, 1, size - 1), x.narrow(d, 0, size - 1)
        x = (hi != lo) if x.dtype is _dt.bool else hi - lo
    return x


def cross(input, other, dim=None):  # noqa: A002
    """The 3-vector cross product along dim (the operands broadcast). dim=None takes the first dimension of size 3,
    as PyTorch's (deprecated) default; torch.linalg.cross uses dim=-1.

    Example:
        >>> torch.cross(torch.tensor([[1., 0., 0.]]), torch.tensor([[0., 1., 0.]]), dim=1)
        tensor([[0., 0., 1.]])
    """
    a, b = broadcast_tensors(input, other)
    if dim is None:
        dims = [i for i, s in enumerate(a.shape) if s == 3]
        if not dims:
            raise RuntimeError("no dimension of size 3 in input")
        d = dims[0]
    else:
        d = wrap_dim(dim, a.ndim)
    if a.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {a.shape[d]} and "
                           f"{b.shape[d]}")
    # c_i = a_{i+1} b_{i+2} − a_{i+2} b_{i+1}: rolling by −1 brings component i+1 to position i
    return a.roll(-1, d) * b.roll(-2, d) - a.roll(-2, d) * b.roll(-1, d)


def linalg_cross(input, other, *, dim=-1):  # noqa: A002
    """torch.linalg.cross: the cross product along dim (default the last)."""
    return cross(input, other, dim=dim)


def tensordot(a, b, dims=2, out=None):
    """Contract a's last `dims` dimensions with b's first `dims` (an int), or the listed dimensions
    (dims = (dims_a, dims_b)); the result has a's free dimensions then b's.

    Example:
        >>> torch.tensordot(torch.ones(2, 3, 4), torch.ones(3, 4, 5), dims=2).shape
        torch.Size([2, 5])
    """
    if out is not None:
        raise TypeError("tensordot(out=...) is not supported by rawdev")
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif isinstance(dims, Tensor):
        return tensordot(a, b, dims.tolist() if dims.ndim else int(dims.item()))
    else:
        da, db = dims
        da, db = ([da], [db]) if isinstance(da, int) else (list(da), list(db))
    da, db = [wrap_dim(d, a.ndim) for d in da], [wrap_dim(d, b.ndim) for d in db]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    fa, fb = [d for d in range(a.ndim) if d not in da], [d for d in range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da]))
    am = a.permute(*(fa + da)).reshape(int(np.prod([a.shape[d] for d in fa])), k)
    bm = b.permute(*(db + fb)).reshape(k, int(np.prod([b.shape[d] for d in fb])))
    return (am @ bm).reshape(*[a.shape[d] for d in fa], *[b.shape[d] for d in fb])


def kron(input, other):  # noqa: A002
    """The Kronecker product: out[i·m + j] = input[i] · other[j] along every dimension (the shorter operand gets
    leading 1s).

    Example:
        >>> torch.kron(torch.tensor([1, 2]), torch.tensor([1, 10]))
        tensor([ 1, 10,  2, 20])
    """
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = input.reshape(*[v for s in sa for v in (s, 1)])
    b = other.reshape(*[v for s in sb for v in (1, s)])
    return (a * b).reshape(*[x * y for x, y in zip(sa, sb)])


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows: [N1·N2·…, len(tensors)] (one tensor: itself).

    Example:
        >>> torch.cartesian_prod(torch.tensor([1, 2]), torch.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    from .creation import meshgrid
    from .join import stack
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The length-r combinations of a 1-D tensor's elements, as rows (itertools' order).

    Example:
        >>> torch.combinations(torch.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    from .join import stack
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    if idx.shape[0] == 0:
        return input.new_empty((0, r))
    cols = factory.tensor(idx.T.copy(), device=input.device)
    return stack([input.index_select(0, cols[j]) for j in range(r)], 1)


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) placed along the diagonal of a zero matrix.

    Example:
        >>> torch.block_diag(torch.tensor([[1, 2]]), torch.tensor([[3], [4]]))
        tensor([[1, 2, 0],
                [0, 0, 3],
                [0, 0, 4]])
    """
    from .join import _promote, cat
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        mats.append(t.reshape(1, 1) if t.ndim == 0 else (t.reshape(1, -1) if t.ndim == 1 else t))
    if not mats:
        return factory.empty((1, 0))
    dt = _promote([m.dtype for m in mats])
    dev = mats[0].device
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        parts = []
        if left:
            parts.append(factory.zeros((r, left), dtype=dt, device=dev))
        parts.append(m.to(dtype=dt))
        if cols - left - c:
            parts.append(factory.zeros((r, cols - left - c), dtype=dt, device=dev))
        rows.append(cat(parts, 1) if len(parts) > 1 else parts[0])
        left += c
    return cat(rows, 0)


def _tri_indices(np_fn, row, col, offset, dtype, device):
    r, c = np_fn(row, offset, col) if row and col else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return factory.tensor(np.stack([r, c]).astype(np.int64), dtype=dtype or _dt.int64, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The [2, N] row/column indices of a row × col matrix's lower triangle (on and below diagonal `offset`),
    row by row.

    Example:
        >>> torch.tril_indices(3, 3)
        tensor([[0, 1, 1, 2, 2, 2],
                [0, 0, 1, 0, 1, 2]])
    """
    return _tri_indices(np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The [2, N] indices of the upper triangle (on and above diagonal `offset`).

    Example:
        >>> torch.triu_indices(2, 3)
        tensor([[0, 0, 0, 1, 1],
                [0, 1, 2, 1, 2]])
    """
    return _tri_indices(np.triu_indices, row, col, offset, dtype, device)


def vander(x, N=None, increasing=False):  # noqa: N803 (PyTorch's name)
    """The Vandermonde matrix of a 1-D x: columns x^(N−1) … x^0 (or x^0 … x^(N−1) when increasing).

    Example:
        >>> torch.vander(torch.tensor([1, 2, 3]), N=3)
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
    """
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = x.dtype if x.dtype is not _dt.bool else _dt.int64
    powers = factory.arange(n, device=x.device).to(dtype=dt)
    if not increasing:
        powers = powers.flip(0)
    return x.to(dtype=dt).unsqueeze(1) ** powers


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    """Rotate by 90° k times in the plane of dims, from the first dimension toward the second (a copy).

    Example:
        >>> torch.rot90(torch.tensor([[1, 2], [3, 4]]))
        tensor([[2, 4],
                [1, 3]])
    """
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = wrap_dim(dims[0], input.ndim), wrap_dim(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return input.clone()


class _DiagEmbedLast(Function):
    node_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, v, offset):
        n = v.shape[-1] + abs(offset)
        out = factory.zeros(tuple(v.shape[:-1]) + (n, n), dtype=v.dtype, device=v.device)
        out.diagonal(offset, -2, -1).copy_(v)
        ctx.offset = offset
        return out

    @staticmethod
    def backward(ctx, g):
        return g.diagonal(ctx.offset, -2, -1), None

    backward_graph = backward


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """A tensor whose (dim1, dim2) planes have input's last dimension on diagonal `offset`, zeros elsewhere.

    Example:
        >>> torch.diag_embed(torch.tensor([[1, 2]]))
        tensor([[[1, 0],
                 [0, 2]]])
    """
    nd = input.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = _DiagEmbedLast.apply(input, int(offset))
    if (d1, d2) == (nd - 2, nd - 1):
        return out
    return out.movedim((nd - 2, nd - 1), (d1, d2))


def diagflat(input, offset=0):  # noqa: A002
    """The flattened input on diagonal `offset` of a square matrix.

    Example:
        >>> torch.diagflat(torch.tensor([[1, 2]]))
        tensor([[1, 0],
                [0, 2]])
    """
    return _DiagEmbedLast.apply(input.reshape(-1), int(offset))


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (RuntimeError if they do not).

    Example:
        >>> torch.broadcast_shapes((2, 1), (3,))
        torch.Size([2, 3])
    """
    from ..tensor.core import Size
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return Size(np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{' '.join(str(list(s)) for s in shapes)}") from None


def broadcast_tensors(*tensors):
    """The tensors expanded (as views) to their common broadcast shape.

    Example:
        >>> [t.shape for t in torch.broadcast_tensors(torch.zeros(2, 1), torch.zeros(3))]
        [torch.Size([2, 3]), torch.Size([2, 3])]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*[tuple(t.shape) for t in tensors])
    return tuple(t if tuple(t.shape) == tuple(shape) else t.expand(*shape) for t in tensors)


def column_stack(tensors, *, out=None):
    """The tensors as columns side by side: 0-D and 1-D ones become [N, 1] first, then hstack.

    Example:
        >>> torch.column_stack([torch.tensor([1, 2]), torch.tensor([3, 4])])
        tensor([[1, 3],
                [2, 4]])
    """
    from .join import hstack
    if out is not None:
        raise TypeError("column_stack(out=...) is not supported by rawdev")
    return hstack([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors])


def _trapezoid_parts(y, x, dx, dim):
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    mids = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) if n else y.narrow(d, 0, 0)
    if x is None:
        return mids * (0.5 * (1.0 if dx is None else dx)), d
    if isinstance(x, Tensor):
        if x.ndim == 1:
            if x.shape[0] != n:
                raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
            steps = x[1:] - x[:-1]
            steps = steps.reshape(*[n - 1 if i == d else 1 for i in range(y.ndim)])
        else:
            xd = wrap_dim(dim, x.ndim)
            steps = x.narrow(xd, 1, n - 1) - x.narrow(xd, 0, n - 1)
        return mids * steps * 0.5, d
    return mids * (0.5 * float(x)), d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """∫ y along dim by the trapezoidal rule, at sample points x (a tensor), or spacing dx (default 1).

    Example:
        >>> torch.trapezoid(torch.tensor([1., 2., 3.]))
        tensor(4.)
    """
    if y.shape[wrap_dim(dim, y.ndim)] == 0:
        return y.sum(dim) * 0
    parts, d = _trapezoid_parts(y, x, dx, dim)
    return parts.sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    """The older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along dim (one element fewer than y along dim).

    Example:
        >>> torch.cumulative_trapezoid(torch.tensor([1., 2., 3.]))
        tensor([1.5000, 4.0000])
    """
    parts, d = _trapezoid_parts(y, x, dx, dim)
    return parts.cumsum(d)


def fill_diagonal_(self, fill_value, wrap=False):
    """Write fill_value on the main diagonal in place (every dimension of equal length above 2-D; a tall matrix
    with wrap=True restarts the diagonal every column-count + 1 rows, as NumPy).

    Example:
        >>> torch.zeros(2, 3).fill_diagonal_(1.)
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.ndim > 2:
        n = self.shape[0]
        view = self.as_strided((n,), (sum(self.stride()),), self.storage_offset())
        view.fill_(fill_value)
        return self
    rows, cols = self.shape
    if not wrap or rows <= cols:
        self.diagonal().fill_(fill_value)
        return self
    for start in range(0, rows, cols + 1):
        self.narrow(0, start, min(cols, rows - start)).diagonal().fill_(fill_value)
    return self


def adjoint(input):  # noqa: A002
    """The conjugate transpose of the last two dimensions (a view; for real tensors, the transpose).

    Example:
        >>> torch.adjoint(torch.tensor([[1, 2]])).shape
        torch.Size([2, 1])
    """
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {input.ndim}-D tensor.")
    return input.transpose(-2, -1)


class _DiagEmbed(Function):
    node_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, v, offset):
        from ..tensor.factory import zeros
        n = v.shape[0] + abs(offset)
        out = zeros((n, n), dtype=v.dtype, device=v.device)
        out.diagonal(offset).copy_(v)
        ctx.offset = offset
        return out

    @staticmethod
    def backward(ctx, g):
        return g.diagonal(ctx.offset), None


def diag(input, diagonal=0):  # noqa: A002
    """1-D input: the square matrix with input on its diagonal-th diagonal. 2-D input: that diagonal, a copy.

    Example:
        >>> torch.diag(torch.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    if input.ndim == 1:
        return _DiagEmbed.apply(input, int(diagonal))
    if input.ndim == 2:
        return input.diagonal(diagonal).clone()
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " f"{input.ndim}D")


declare("diff", diff, family="structure")
declare("cross", cross, family="structure")
declare("tensordot", tensordot, family="structure", method=False)
declare("kron", kron, family="structure")
declare("cartesian_prod", cartesian_prod, family="structure", method=False)
declare("combinations", combinations, family="structure", method=False)
declare("block_diag", block_diag, family="structure", method=False)
declare("tril_indices", tril_indices, family="structure", method=False)
declare("triu_indices", triu_indices, family="structure", method=False)
declare("vander", vander, family="structure", method=False)
declare("rot90", rot90, family="structure")
declare("diag_embed", diag_embed, family="structure")
declare("diagflat", diagflat, family="structure")
declare("broadcast_shapes", broadcast_shapes, family="structure", method=False)
declare("broadcast_tensors", broadcast_tensors, family="structure", method=False)
declare("column_stack", column_stack, family="structure", method=False)
declare("trapezoid", trapezoid, family="structure", method=False)
declare("trapz", trapz, family="structure", method=False)
declare("cumulative_trapezoid", cumulative_trapezoid, family="structure", method=False)
declare("fill_diagonal_", fill_diagonal_, family="structure", torch=False)
declare("adjoint", adjoint, family="structure")
declare("diag", diag, family="structure")
