"""Normalization over the last dimensions and embedding lookups: layer_norm, rms_norm, embedding.

layer_norm / rms_norm flatten the normalized dimensions into D and run one fused kernel per direction (cuda:
norm.ptx, one warp per row with Welford statistics; cpu: numpy); the weight's and bias's gradients are
column sums of what the backward kernel writes. embedding is a row gather (index_select on the weight) whose
backward is a scatter-add of the gradient rows (atomics on cuda), skipping padding_idx.
"""
import math

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor.core import Tensor
from .dispatch import backend, backend_of
from .registry import declare


# ------------------------------------------------------------------ layer_norm / rms_norm
class _RowNorm(Function):
    node_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, w, b, eps, rms, shape):
        B = backend("layer_norm", x, w, b)
        x2 = x.reshape(-1, w.numel() if w is not None else shape[1]).contiguous()
        y, mean, rstd = B.row_norm(x2, w, b, eps, rms)
        ctx.save_for_backward(x2, mean, rstd, w)
        ctx.rms, ctx.xshape, ctx.eps = rms, x.shape, eps
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        x2, mean, rstd, w = ctx.saved_tensors
        B = backend_of(g)
        g2 = g.reshape(x2.shape).contiguous()
        dx, gxhat = B.row_norm_bwd(g2, x2, mean, rstd, w, ctx.rms)
        dw = B.sum_dims(gxhat, (0,)) if w is not None and ctx.needs_input_grad[1] else None
        db = B.sum_dims(g2, (0,)) if ctx.needs_input_grad[2] else None
        return dx.reshape(ctx.xshape) if ctx.needs_input_grad[0] else None, dw, db, None, None, None

    @staticmethod
    def backward_graph(ctx, g):
        """create_graph=True: the normalization rebuilt from differentiable ops on the input. The saved rows
        were made inside forward (a reshaped copy), so an alias of them in the input's shape is given the
        input's place in the graph (the node's first edge)."""
        from ..autograd.function import AccumulateGrad
        x2, _mean, _rstd, w = ctx.saved_tensors
        n, d = x2.shape
        edge, nr = ctx._graph_node.next_functions[0]
        x = x2.detach().reshape(ctx.xshape)
        if isinstance(edge, AccumulateGrad):
            x.__dict__["_accumulate_grad"] = edge
            x._requires_grad = True
        elif edge is not None:
            x.grad_fn, x._requires_grad = edge, True
            if nr:
                x.__dict__["_output_nr"] = nr
        xr = x.reshape(n, d)
        g2 = g.reshape(n, d)
        if ctx.rms:
            rstd = ((xr * xr).mean(1, keepdim=True) + ctx.eps) ** -0.5
            xhat = xr * rstd
        else:
            xc = xr - xr.mean(1, keepdim=True)
            rstd = ((xc * xc).mean(1, keepdim=True) + ctx.eps) ** -0.5
            xhat = xc * rstd
        gxhat = g2 * w if w is not None else g2
        proj = xhat * (gxhat * xhat).mean(1, keepdim=True)
        dx = rstd * (gxhat - proj if ctx.rms else gxhat - gxhat.mean(1, keepdim=True) - proj)
        dw = (g2 * xhat).sum(0) if w is not None and ctx.needs_input_grad[1] else None
        db = g2.sum(0) if ctx.needs_input_grad[2] else None
        return dx.reshape(ctx.xshape) if ctx.needs_input_grad[0] else None, dw, db, None, None, None


def _norm_rows(input, normalized_shape, weight, bias, eps, rms):  # noqa: A002
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != ns or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(p.shape)} and normalized_shape = {list(ns)}")
    D = int(np.prod(ns))
    w = weight.reshape(D) if weight is not None else None
    b = bias.reshape(D) if bias is not None else None
    out = _RowNorm.apply(input, w, b, eps, rms, (input.numel() // max(D, 1), D))
    if out.grad_fn is not None and rms:
        out.grad_fn.rename("RmsNormBackward0")
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalize over the last len(normalized_shape) dims to mean 0 and variance 1 (biased), then scale by
    weight and shift by bias (both of normalized_shape, optional).

    Example:
        >>> F.layer_norm(x, (x.shape[-1],))
    """
    return _norm_rows(input, normalized_shape, weight, bias, eps, rms=False)


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight (optional).
    eps=None uses torch.finfo(input.dtype).eps, as PyTorch."""
    if eps is None:
        eps = float(_dt.finfo(input.dtype).eps)
    return _norm_rows(input, normalized_shape, weight, None, eps, rms=True)


declare("layer_norm", layer_norm, family="norm", functional=True, method=False)
declare("rms_norm", rms_norm, family="norm", functional=True, method=False)


# ------------------------------------------------------------------ embedding
class _Embedding(Function):
    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, idx, padding_idx):
        B = backend("embedding", weight, idx)
        V, D = weight.shape
        out = B.index_select(weight, 1, V, D, idx)
        ctx.save_for_backward(idx)
        ctx.V, ctx.D, ctx.padding_idx, ctx.wdt = V, D, padding_idx, weight.dtype
        return out.reshape(idx.numel(), D)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        B = backend_of(g)
        g = g.contiguous()
        if ctx.padding_idx is not None:   # the padding row gets no gradient, as PyTorch's embedding_backward
            pad = B.compare(idx, ctx.padding_idx, "eq")
            g = B.fill_where(g, pad.reshape(idx.numel(), 1), 0)
        gw = B.full((ctx.V, ctx.D), 0, g.dtype, g.device)
        B.index_add_(gw, 1, ctx.V, ctx.D, idx, g)
        return gw, None, None

    @staticmethod
    def backward_graph(ctx, g):   # the scatter-add recorded; its adjoint is the lookup again
        from ..autograd.function import linear_backward
        (idx,) = ctx.saved_tensors
        pad = ctx.padding_idx
        inner = type("EmbeddingCtx", (), {})()
        inner.V, inner.D, inner.padding_idx, inner.saved_tensors = ctx.V, ctx.D, pad, (idx,)

        def adj(gg):
            rows = _Embedding.apply(gg, idx, pad)
            if pad is not None:
                rows = rows * backend_of(idx).compare(idx, pad, "ne").reshape(idx.numel(), 1).to(dtype=rows.dtype)
            return rows
        return linear_backward(g, lambda t: _Embedding.backward(inner, t)[0], adj), None, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,  # noqa: A002
              sparse=False):
    """Rows of weight picked by the integer tensor input: output shape input.shape + (embedding_dim,).

    padding_idx: that row gets no gradient. max_norm: the rows looked up are first renormalized in place to
    norm <= max_norm (norm_type-norm), as PyTorch does.

    Example:
        >>> F.embedding(torch.tensor([[1, 2], [4, 5]]), weight)   # (2, 2, embedding_dim)
    """
    if not isinstance(input, Tensor) or input.dtype not in (_dt.int64, _dt.int32):
        got = input.dtype.name if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {got} instead (while checking arguments for embedding)")
    if sparse:
        raise NotImplementedError("embedding(sparse=True): rawdev has no sparse tensors; use sparse=False")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding(scale_grad_by_freq=True) is not supported by rawdev yet")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got {weight.ndim}-D")
    V = weight.shape[0]
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % V
    idx = input.reshape(-1)
    if idx.dtype is not _dt.int64:
        idx = idx.to(dtype=_dt.int64)
    idx = idx.contiguous()
    if max_norm is not None:
        _renorm_rows_(weight, idx, max_norm, norm_type)
    out = _Embedding.apply(weight, idx, padding_idx)
    return out.reshape(tuple(input.shape) + (weight.shape[1],))


def _renorm_rows_(weight, idx, max_norm, norm_type):
    """PyTorch's embedding_renorm_: each looked-up row whose norm exceeds max_norm is scaled to max_norm."""
    from ..tensor.factory import tensor
    with no_grad():
        rows = np.unique(np.asarray(idx.cpu()._values()))
        if rows.size == 0:
            return
        r = tensor(rows, device=weight.device)
        w = weight.index_select(0, r)
        p = float(norm_type)
        norms = (w.abs() ** p).sum(1) ** (1.0 / p) if p != math.inf else w.abs().max(1)[0]
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        weight.index_copy_(0, r, w * scale.unsqueeze(1))


declare("embedding", embedding, family="norm", functional=True, method=False, torch=False)
