"""Attention: scaled_dot_product_attention (one autograd Function; its forward, backward and probabilities are the
backend's, cpu.py and cuda.py beside this file: numpy, or the fused flash-style kernels of ptx/attention.ptx) and
multi_head_attention_forward (nn.MultiheadAttention's functional form).

The op flattens the batch dims to N and works on q [N, L, E], k [N, S, E], v [N, S, Ev]. The forward saves the
logsumexp of each score row (lse); the backward recomputes the probabilities from it, in two halves: dQ over query
rows, then dK/dV over key rows (on cuda, two recompute kernels). A query row with no key to attend gets output 0 and
gradient 0 (PyTorch's math path since 2.5 does the same). The mask and the dropout reach the backends in the
backend's own form, made once per call (sdpa_mask, sdpa_dropout) and read by the forward, the backward and the
probabilities alike.
"""
import math

import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...tensor.core import Tensor
from ..dispatch import backend_of, check_same_device
from ..registry import declare
from ..shape import expand, reshape

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


# ------------------------------------------------------------------ masks
class _Mask:
    """A mask viewed as [N, L, S]: mode 0 none, 1 float (added), 2 bool (True = attend); `values` is the backend's
    form of it, made once by its sdpa_mask (see cpu.py and cuda.py)."""

    def __init__(self, mask, batch, N, L, S):
        self.mode, self.values = 0, None
        if mask is None:
            return
        self.mode = 2 if mask.dtype is _dt.bool else 1
        # the backend reads the tensor from here, not as an argument: the cuda dispatcher would hand it a contiguous
        # (and for 16-bit, a widened) copy, where the kernels read the mask in place through its strides
        self.values = mask
        self.values = backend_of(mask).sdpa_mask(self, tuple(batch), N, L, S)


# ------------------------------------------------------------------ the op
class _SDPA(Function):
    node_name = "ScaledDotProductAttentionBackward0"

    @staticmethod
    def forward(ctx, q, k, v, mask, causal, scale, p_drop, generator, side, batch, bias):
        B = backend_of(q)
        ctx.bias_shape = None if bias is None else tuple(bias.shape)
        ctx.mask, ctx.causal, ctx.scale, ctx.p, ctx.batch = mask, causal, scale, p_drop, batch
        # the dropout state (a keep mask, or a seed the kernels regenerate it from): one draw, which the backward
        # and the probabilities reuse
        ctx.drop = B.sdpa_dropout(generator, p_drop, q.shape[0], q.shape[1], k.shape[1]) if p_drop > 0 else None
        out, lse = B.sdpa_fwd(q, k, v, mask, causal, scale, p_drop, ctx.drop)
        if side is not None:
            side.update(lse=lse, drop=ctx.drop)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, out, lse = ctx.saved_tensors
        want_bias = ctx.bias_shape is not None and ctx.needs_input_grad[10]
        B = backend_of(g)
        # two calls, not sdpa_bwd's one: where 16-bit tensors are widened to float32 around each call (a mixed mask
        # gradient on cuda), the float32 copy of the output and dq's float32 result are gone before dk, dv are made
        dq, rowdot, ds = B.sdpa_bwd_q(g, q, k, v, out, lse, ctx.mask, ctx.causal, ctx.scale, ctx.p, ctx.drop,
                                      want_bias)
        dk, dv = B.sdpa_bwd_kv(g, q, k, v, rowdot, lse, ctx.mask, ctx.causal, ctx.scale, ctx.p, ctx.drop)
        del rowdot
        db = None
        if want_bias:   # the score gradient, summed back to the mask's (broadcast) shape
            from ..shape import sum_to
            db = sum_to(reshape(ds, ctx.batch + tuple(ds.shape[1:])), ctx.bias_shape)
        return dq, dk, dv, None, None, None, None, None, None, None, db


class _InProjSplit(Function):
    """The packed in-projection [L, B, 3E] as its q, k and v pieces (narrow views) from one node, whose backward
    joins the three gradients with one cat (PyTorch's SplitWithSizesBackward0). Three narrow nodes would each make a
    zero-filled [L, B, 3E] gradient and the engine would sum them: two more such tensors alive, and each sum of
    16-bit gradients widened to float32 (rawdev.ops.opmath) — the largest block of a bfloat16 autocast backward."""
    node_name = "SplitWithSizesBackward0"
    differentiable_backward = True    # a cat of the gradients: recorded under create_graph

    @staticmethod
    def forward(ctx, qkv, E):
        from ..slice_views import narrow
        ctx.meta = (tuple(qkv.shape[:2]) + (E,), qkv.dtype, qkv.device)
        return tuple(narrow(qkv, 2, i * E, E) for i in range(3))

    @staticmethod
    def backward(ctx, *grads):
        from ...tensor.factory import zeros
        from ..join import cat
        shape, dt, dev = ctx.meta
        return cat([zeros(shape, dtype=dt, device=dev) if g is None else g for g in grads], 2), None


def _probs(q, k, mask, causal, scale, p_drop, side):
    """The attention probabilities [N, L, S] of a forward that just ran (its lse and dropout state); no grad."""
    return backend_of(q).sdpa_probs(q, k, side["lse"], mask, causal, scale, p_drop, side["drop"])


def _broadcast_batch(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(f"scaled_dot_product_attention: the batch dimensions of query, key and value must be "
                           f"broadcastable, got {[list(s) for s in shapes]}") from None


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, generator=None,
          need_weights=False):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if t.ndim < 2:
            raise RuntimeError(f"scaled_dot_product_attention: expected {name} to have at least 2 dimensions, "
                               f"got {t.ndim}")
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention: expected a floating point dtype, got {query.dtype}")
    check_same_device("scaled_dot_product_attention", query, key, value, attn_mask)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if dropout_p < 0.0 or dropout_p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    L, E = query.shape[-2:]
    S, Ek = key.shape[-2:]
    Sv, Ev = value.shape[-2:]
    if Ek != E or Sv != S:
        raise RuntimeError(f"scaled_dot_product_attention: shape mismatch: query {list(query.shape)}, key "
                           f"{list(key.shape)}, value {list(value.shape)} (need key [..., S, E] and value "
                           f"[..., S, Ev] for query [..., L, E])")
    batch = _broadcast_batch(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    N = int(np.prod(batch, dtype=np.int64))
    if attn_mask is not None:
        if attn_mask.dtype is not _dt.bool and attn_mask.dtype is not query.dtype:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
        try:
            np.broadcast_shapes(tuple(attn_mask.shape), tuple(batch) + (L, S))
        except ValueError:
            raise RuntimeError(f"The size of attn_mask {list(attn_mask.shape)} must be broadcastable to "
                               f"{list(batch) + [L, S]}") from None
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    drop_all = dropout_p == 1.0       # every element dropped: zeros (computed at p = 0, times 0)
    if drop_all:
        dropout_p = 0.0
    from ... import random as _random
    gen = generator or _random.default_generator

    def flat(t, rows, cols):
        t = expand(t, tuple(batch) + (rows, cols)) if tuple(t.shape[:-2]) != batch else t
        return reshape(t, (N, rows, cols))

    q3, k3, v3 = flat(query, L, E), flat(key, S, E), flat(value, S, Ev)
    from ...autograd.grad_mode import no_grad
    with no_grad():
        mask = _Mask(attn_mask, batch, N, L, S)
    side = {} if need_weights else None
    bias = attn_mask if attn_mask is not None and mask.mode == 1 and attn_mask.requires_grad else None
    out = _SDPA.apply(q3, k3, v3, mask, bool(is_causal), scale, float(dropout_p), gen, side, tuple(batch), bias)
    out = reshape(out, tuple(batch) + (L, Ev))
    if drop_all:
        from ..binary import mul
        out = mul(out, 0.0)
    if not need_weights:
        return out
    with no_grad():
        w = _probs(q3.detach(), k3.detach(), mask, bool(is_causal), scale, float(dropout_p), side)
        if drop_all:
            w = mul(w, 0.0)
    return out, reshape(w, tuple(batch) + (L, S))


def _repeat_heads(t, r):
    """repeat_interleave(t, r, dim=-3) as unsqueeze + expand + reshape (differentiable, one copy)."""
    if r == 1:
        return t
    from ..shape import unsqueeze
    shape = tuple(t.shape)
    x = expand(unsqueeze(t, -3), shape[:-3] + (shape[-3], r) + shape[-2:])
    return reshape(x, shape[:-3] + (shape[-3] * r,) + shape[-2:])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q·kᵀ·scale + mask)·v over the last two dims (q [..., L, E], k [..., S, E], v [..., S, Ev]); a
    bool mask marks what may be attended (True), a float mask is added; is_causal attends key j from query i
    iff j <= i. On cuda: fused kernels on float32, float16 or bfloat16 storage with float32 math (head sizes up to
    128), no L×S matrix in memory."""
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and value.ndim >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError(f"number of heads in key and value must divide the number of heads in query, got "
                               f"query {hq}, key {hk}, value {hv}")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hv)
    return _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale)


# ------------------------------------------------------------------ multi-head attention
def _float_mask(mask, dt, name):
    """PyTorch's _canonical_mask: a bool mask (True = masked out) becomes 0 / -inf; a float mask stays."""
    if mask is None:
        return None
    if mask.dtype is _dt.bool:
        from ..binary import add, neg
        from ..unary import log
        return log(add(neg(mask.to(dtype=dt)), 1.0))     # log(1) = 0, log(0) = -inf
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """nn.MultiheadAttention's computation: in-projection (one Linear per q/k/v from in_proj_weight's row
    blocks), the fused attention per head, out-projection. Inputs (L, B, E) or unbatched (L, E)."""
    from ..autocast_mode import hook
    from ..binary import add
    from ..reduce.functions import mean
    from ..registry import public
    from ..shape import permute, squeeze, unsqueeze
    from ..slice_views import narrow
    linear = public("linear")             # a composite in PyTorch too: under autocast its parts cast (float16
    sdpa = hook("scaled_dot_product_attention", _sdpa)   # projections and attention), the whole does not
    if bias_k is not None or bias_v is not None or add_zero_attn or static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: add_bias_kv, add_zero_attn and static_k/static_v "
                                  "are not supported in rawdev")
    if use_separate_proj_weight:
        raise NotImplementedError("multi_head_attention_forward: separate q/k/v projection weights (kdim/vdim "
                                  "different from embed_dim) are not supported in rawdev")
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = unsqueeze(query, 1), unsqueeze(key, 1), unsqueeze(value, 1)
        if key_padding_mask is not None:
            key_padding_mask = unsqueeze(key_padding_mask, 0)
    elif query.ndim != 3:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D "
                             f"query tensor")
    L, B, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    if E % num_heads:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
    H, Dh = num_heads, E // num_heads
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    causal = False
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask, causal = None, True
    dt = query.dtype

    def proj(x, i):
        w = narrow(in_proj_weight, 0, i * E, E)
        b = narrow(in_proj_bias, 0, i * E, E) if in_proj_bias is not None else None
        return linear(x, w, b)

    def heads(x, n):   # (n, B, E) -> (B, H, n, Dh)
        return permute(reshape(x, (n, B, H, Dh)), (1, 2, 0, 3))

    if query is key and key is value:   # self-attention: one GEMM for the three projections
        qkv = linear(query, in_proj_weight, in_proj_bias)
        q, k, v = (heads(piece, L) for piece in _InProjSplit.apply(qkv, E))
    else:
        q, k, v = heads(proj(query, 0), L), heads(proj(key, 1), S), heads(proj(value, 2), S)
    mask = None
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(L, S)}.")
            mask = _float_mask(attn_mask, dt, "attn_mask")
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (B * H, L, S):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(B * H, L, S)}.")
            mask = reshape(_float_mask(attn_mask, dt, "attn_mask"), (B, H, L, S))
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (B, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(B, S)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = reshape(_float_mask(key_padding_mask, dt, "key_padding_mask"), (B, 1, 1, S))
        mask = kpm if mask is None else add(mask, kpm)
    p = dropout_p if training else 0.0
    res = sdpa(q, k, v, mask, p, causal, None, None, need_weights)
    o, w = res if need_weights else (res, None)
    o = reshape(permute(o, (2, 0, 1, 3)), (L, B, E))
    out = linear(o, out_proj_weight, out_proj_bias)
    if w is not None and average_attn_weights:
        w = mean(w, 1)
    if unbatched:
        out = squeeze(out, 1)
        if w is not None:
            w = squeeze(w, 0)
    return out, w


declare("scaled_dot_product_attention", scaled_dot_product_attention, family="attention", functional=True,
        torch=False, method=False)
declare("multi_head_attention_forward", multi_head_attention_forward, family="attention", functional=True,
        torch=False, method=False)
