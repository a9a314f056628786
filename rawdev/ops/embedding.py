"""Embedding lookups: embedding.

embedding is a row gather (index_select on the weight, any dtype: a float16/bfloat16 weight is gathered in its
own storage) whose backward is a scatter-add of the gradient rows (atomics on cuda), skipping padding_idx; a
16-bit gradient is summed in float32 and rounded once. layer_norm and rms_norm live in the normalization family
(rawdev/ops/normalization/).
"""
import math

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor.core import Tensor
from .dispatch import backend, backend_of
from .registry import declare


# ------------------------------------------------------------------ embedding
class _Embedding(Function):
    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, idx, padding_idx, scale_grad_by_freq=False):
        B = backend("embedding", weight, idx)
        V, D = weight.shape
        out = B.index_select(weight, 1, V, D, idx)
        ctx.save_for_backward(idx)
        ctx.V, ctx.D, ctx.padding_idx, ctx.wdt, ctx.freq = V, D, padding_idx, weight.dtype, scale_grad_by_freq
        return out.reshape(idx.numel(), D)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        B = backend_of(g)
        g = g.contiguous()
        gdt = g.dtype
        if ctx.padding_idx is not None:   # the padding row gets no gradient, as PyTorch's embedding_backward
            pad = B.compare(idx, ctx.padding_idx, "eq")
            g = B.fill_where(g, pad.reshape(idx.numel(), 1), 0)
        # a 16-bit gradient is summed into float32 (repeated indices add up without a rounding per add) and the
        # sum rounded once to the weight's dtype; the cuda kernel reads g in its own storage (no widened copy)
        low = gdt in (_dt.float16, _dt.bfloat16)
        if ctx.freq:   # each occurrence's row divided by how often its index occurs (in float32 for 16-bit g)
            g = g.to(dtype=_dt.float32) * _inv_freq(idx, ctx.V, _dt.float32) if low else g * _inv_freq(idx, ctx.V, gdt)
        gw = B.full((ctx.V, ctx.D), 0, _dt.float32 if low else gdt, g.device)
        B.index_add_(gw, 1, ctx.V, ctx.D, idx, g)
        return (gw.to(dtype=gdt) if low else gw), None, None, None

    @staticmethod
    def backward_graph(ctx, g):   # the scatter-add recorded; its adjoint is the lookup again
        from ..autograd.function import linear_backward
        (idx,) = ctx.saved_tensors
        pad = ctx.padding_idx
        inner = type("EmbeddingCtx", (), {})()
        inner.V, inner.D, inner.padding_idx, inner.saved_tensors, inner.freq = ctx.V, ctx.D, pad, (idx,), ctx.freq

        def adj(gg):
            rows = _Embedding.apply(gg, idx, pad)
            if pad is not None:
                rows = rows * backend_of(idx).compare(idx, pad, "ne").reshape(idx.numel(), 1).to(dtype=rows.dtype)
            # no 1/count here even under scale_grad_by_freq: PyTorch's embedding_dense_double_backward is the plain
            # gather (the scaling is not a derivative, and its adjoint is not taken)
            return rows
        return linear_backward(g, lambda t: _Embedding.backward(inner, t)[0], adj), None, None, None


def _inv_freq(idx, V, dt):
    """[len(idx), 1] of dtype dt: 1 / (how many times idx[k] occurs in idx), scale_grad_by_freq's factor per row
    (in the gradient's dtype, float32 for a 16-bit one, as PyTorch's kernels compute it)."""
    with no_grad():
        counts = idx.bincount(minlength=V).index_select(0, idx)
        return (1.0 / counts.to(dtype=dt)).reshape(-1, 1)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,  # noqa: A002
              sparse=False):
    """Rows of weight picked by the integer tensor input: output shape input.shape + (embedding_dim,).

    padding_idx: that row gets no gradient. max_norm: the rows looked up are first renormalized in place to
    norm <= max_norm (norm_type-norm), as PyTorch does. scale_grad_by_freq: each looked-up row's gradient is divided
    by how many times its index occurs in input.

    Example:
        >>> F.embedding(torch.tensor([[1, 2], [4, 5]]), weight)   # (2, 2, embedding_dim)
    """
    if not isinstance(input, Tensor) or input.dtype not in (_dt.int64, _dt.int32):
        got = input.dtype.name if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {got} instead (while checking arguments for embedding)")
    if sparse:
        raise NotImplementedError("embedding(sparse=True): rawdev's autograd makes dense "
                                  "gradients only (it has sparse COO tensors, but no backward produces one); "
                                  "use sparse=False")
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
    out = _Embedding.apply(weight, idx, padding_idx, bool(scale_grad_by_freq))
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


declare("embedding", embedding, family="embedding", functional=True, method=False, torch=False)
