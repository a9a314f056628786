"""Linear algebra: linear, mm, matmul (GEMM kernels on cuda, reading transposed views through their
strides; numpy on the cpu)."""
import numpy as np

from ..autograd.function import Function
from .dispatch import backend, backend_of
from .registry import declare
from .shape import reshape, squeeze, sum_to, unsqueeze


# ------------------------------------------------------------------ matrix products
def _same_dtype(a, b):
    """PyTorch refuses mixed dtypes in a matrix product (numpy would promote, or truncate into integers)."""
    if a.dtype is not b.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {a.dtype._legacy[:-6]} and "
                           f"{b.dtype._legacy[:-6]}")


class _Linear(Function):
    node_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx, x, w, b):
        B = backend("linear", x, w, b)
        _same_dtype(x, w)
        if x.shape[-1] != w.shape[1]:
            lead = 1
            for s in x.shape[:-1]:
                lead *= s
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({lead}x{x.shape[-1]} and "
                               f"{w.shape[1]}x{w.shape[0]})")
        x2 = reshape(x, (-1, x.shape[-1])) if x.ndim != 2 else x
        ctx.xshape = x.shape
        ctx.has_bias = b is not None
        # x itself (not the 2-D view made here): a recorded backward needs the tensor that is in the graph
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None, w if ctx.needs_input_grad[0] else None)
        y = B.gemm(x2, w, False, True, bias=b)
        return reshape(y, tuple(x.shape[:-1]) + (w.shape[0],)) if x.ndim != 2 else y

    @staticmethod
    def backward(ctx, g):
        x2, w = ctx.saved_tensors
        if x2 is not None and x2.ndim != 2:
            x2 = reshape(x2, (-1, x2.shape[-1]))
        B = backend_of(g)
        g2 = reshape(g, (-1, g.shape[-1])) if g.ndim != 2 else g
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = B.gemm(g2, w, False, False)
            if len(ctx.xshape) != 2:
                gx = reshape(gx, ctx.xshape)
        if ctx.needs_input_grad[1]:
            gw = B.gemm(g2, x2, True, False)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = B.sum_dims(g2, (0,), False)
        return gx, gw, gb

    @staticmethod
    def backward_graph(ctx, g):
        from .reduce.functions import sum as _sum
        from .shape import transpose
        x2, w = ctx.saved_tensors
        if x2 is not None and x2.ndim != 2:
            x2 = reshape(x2, (-1, x2.shape[-1]))
        g2 = reshape(g, (-1, g.shape[-1])) if g.ndim != 2 else g
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = matmul(g2, w)
            if len(ctx.xshape) != 2:
                gx = reshape(gx, ctx.xshape)
        if ctx.needs_input_grad[1]:
            gw = matmul(transpose(g2, 0, 1), x2)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = _sum(g2, 0)
        return gx, gw, gb


def linear(input, weight, bias=None):  # noqa: A002
    """y = x·Wᵀ + b (x [*, in], W [out, in], b [out])."""
    if input.ndim == 0:
        raise RuntimeError("linear(): input must have at least one dimension")
    if input.ndim == 1:
        return squeeze(_Linear.apply(reshape(input, (1, -1)), weight, bias), 0)
    return _Linear.apply(input, weight, bias)


class _Matmul2d(Function):
    node_name = "MmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        B = backend("mm", a, b)
        _same_dtype(a, b)
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                               f"{b.shape[0]}x{b.shape[1]})")
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
        return B.gemm(a, b, False, False)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        B = backend_of(g)
        ga = B.gemm(g, b, False, True) if ctx.needs_input_grad[0] else None
        gb = B.gemm(a, g, True, False) if ctx.needs_input_grad[1] else None
        return ga, gb

    @staticmethod
    def backward_graph(ctx, g):
        from .shape import transpose
        a, b = ctx.saved_tensors
        ga = matmul(g, transpose(b, 0, 1)) if ctx.needs_input_grad[0] else None
        gb = matmul(transpose(a, 0, 1), g) if ctx.needs_input_grad[1] else None
        return ga, gb


class _MatmulBatched(Function):
    node_name = "BmmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        B = backend("matmul", a, b)
        _same_dtype(a, b)
        ctx.save_for_backward(a, b)
        if B.NAME == "cpu":
            return B.matmul(a, b)
        return _cuda_bmm(a, b, False, False)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        if g.is_cuda:
            ga = _cuda_bmm(g, b, False, True) if ctx.needs_input_grad[0] else None
            gb = _cuda_bmm(a, g, True, False) if ctx.needs_input_grad[1] else None
        else:
            from . import cpu as C
            gv, av, bv = C.v(g), C.v(a), C.v(b)
            ga = C.wrap(np.matmul(gv, np.swapaxes(bv, -1, -2)), g.dtype) if ctx.needs_input_grad[0] else None
            gb = C.wrap(np.matmul(np.swapaxes(av, -1, -2), gv), g.dtype) if ctx.needs_input_grad[1] else None
        return (sum_to(ga, a.shape) if ga is not None else None, sum_to(gb, b.shape) if gb is not None else None)

    @staticmethod
    def backward_graph(ctx, g):
        from .shape import transpose
        a, b = ctx.saved_tensors
        ga = sum_to(matmul(g, transpose(b, -1, -2)), a.shape) if ctx.needs_input_grad[0] else None
        gb = sum_to(matmul(transpose(a, -1, -2), g), b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


def _cuda_bmm(a, b, ta, tb):
    """a @ b over broadcast batch dims on cuda (ta/tb: the last two dims of a/b transposed)."""
    from .dispatch import backend_of
    from .shape import expand_meta, make_view
    ra, ca = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
    rb, cb = (b.shape[-1], b.shape[-2]) if tb else (b.shape[-2], b.shape[-1])
    if ca != rb:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{ca}, {rb}] but got: "
                           f"[{rb}, {cb}].")
    batch = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    n = int(np.prod(batch)) if batch else 1
    ae = make_view(a, expand_meta(a, batch + tuple(a.shape[-2:]))).reshape(n, *a.shape[-2:])
    be = make_view(b, expand_meta(b, batch + tuple(b.shape[-2:]))).reshape(n, *b.shape[-2:])
    y = backend_of(a).bmm(ae, be, ta, tb)
    return y.reshape(batch + (ra, cb))


def _sparse_operand(a, b):
    """True when either operand is a sparse COO tensor (rawdev.ops.sparse_coo multiplies those)."""
    return getattr(a, "is_sparse", False) is True or getattr(b, "is_sparse", False) is True


# The product of a sparse operand: rawdev.ops.sparse_coo sets it when it is installed (a sparse tensor exists only
# after that), so this module, which sparse_coo imports for its dense products, never imports sparse_coo back.
SPARSE_MM: list = [None]


def matmul(input, other, *, out=None):  # noqa: A002
    if out is not None:
        from .out_arg import write_out
        return write_out("matmul", matmul(input, other), out, input, other)
    a, b = input, other
    if _sparse_operand(a, b):
        return SPARSE_MM[0](a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    if b.ndim <= 2:
        bm = unsqueeze(b, 1) if b.ndim == 1 else b
        a2 = unsqueeze(a, 0) if a.ndim == 1 else a
        lead = tuple(a2.shape[:-1])
        if a2.shape[-1] != bm.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({int(np.prod(lead))}x{a2.shape[-1]} and "
                               f"{bm.shape[0]}x{bm.shape[1]})")
        out = _Matmul2d.apply(reshape(a2, (-1, a2.shape[-1])) if a2.ndim != 2 else a2, bm)
        out = reshape(out, lead + (bm.shape[1],)) if a2.ndim != 2 else out
        if b.ndim == 1:
            out = squeeze(out, -1)
        if a.ndim == 1:
            out = squeeze(out, -2 if b.ndim == 2 else -1) if out.ndim else out
        return out
    if a.ndim == 1:   # a vector times a batch of matrices: as a batch of 1-row matrices
        return squeeze(_MatmulBatched.apply(unsqueeze(a, 0), b), -2)
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{int(np.prod(a.shape[:-2]))}, {a.shape[-1]}] but got: [{int(np.prod(b.shape[:-2]))}, "
                           f"{b.shape[-2]}].")
    return _MatmulBatched.apply(a, b)


def mm(input, mat2):  # noqa: A002
    if _sparse_operand(input, mat2):
        return SPARSE_MM[0](input, mat2)
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("mm(): both arguments must be 2-D")
    return _Matmul2d.apply(input, mat2)




declare("linear", linear, family="linalg", functional=True, torch=False, method=False)
declare("matmul", matmul, family="linalg", functional=True)
declare("mm", mm, family="linalg")
