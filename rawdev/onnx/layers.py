"""Symbolic functions of modules whose ONNX form is not the sum of the ops their forward runs: the recurrent
layers (ONNX's LSTM / GRU / RNN nodes, PyTorch's gate order rearranged into ONNX's) and multi-head attention
(the projections, heads and softmax spelled out), plus the common layers, emitted from their parameters directly
(a Linear is one Gemm, a BatchNorm in eval mode one BatchNormalization). Containers and the user's own modules
have no entry: their forward is recorded op by op."""
import numpy as np

from . import symbolic as S

__all__ = ["emitter_for"]


def _np(t):
    return np.asarray(t.detach().cpu())


def _ops(name):
    return S.SYMBOLIC[name]


def _table():
    from ..nn import layers as L
    from ..nn.layers import activation as A
    t = {
        L.linear.Linear: lambda tr, m, out, x: _ops("linear")(tr, out, x, m.weight, m.bias),
        L.flatten.Identity: lambda tr, m, out, x, *a, **k: _ops("contiguous")(tr, out, x),
        L.flatten.Flatten: lambda tr, m, out, x: _ops("flatten")(tr, out, x, m.start_dim, m.end_dim),
        L.normalization.LayerNorm: lambda tr, m, out, x: _ops("layer_norm")(tr, out, x, m.normalized_shape,
                                                                              m.weight, m.bias, m.eps),
        L.sparse.Embedding: _embedding,
        L.attention.MultiheadAttention: _mha,
        A.ReLU: lambda tr, m, out, x: _ops("relu")(tr, out, x),
        A.Tanh: lambda tr, m, out, x: _ops("tanh")(tr, out, x),
        A.Sigmoid: lambda tr, m, out, x: _ops("sigmoid")(tr, out, x),
        A.SiLU: lambda tr, m, out, x: _ops("silu")(tr, out, x),
        A.GELU: lambda tr, m, out, x: _ops("gelu")(tr, out, x, m.approximate),
        A.LeakyReLU: lambda tr, m, out, x: _ops("leaky_relu")(tr, out, x, m.negative_slope),
        A.ELU: lambda tr, m, out, x: _ops("elu")(tr, out, x, m.alpha),
        A.Softmax: lambda tr, m, out, x: _ops("softmax")(tr, out, x, m.dim),
        A.LogSoftmax: lambda tr, m, out, x: _ops("log_softmax")(tr, out, x, m.dim),
    }
    for cls in (L.conv.Conv1d, L.conv.Conv2d, L.conv.Conv3d):
        t[cls] = _conv
    for cls in (L.batchnorm.BatchNorm1d, L.batchnorm.BatchNorm2d, L.batchnorm.BatchNorm3d):
        t[cls] = _batchnorm
    for cls in (L.dropout.Dropout, L.dropout.Dropout1d, L.dropout.Dropout2d, L.dropout.Dropout3d):
        t[cls] = lambda tr, m, out, x: _ops("dropout")(tr, out, x, m.p, m.training)
    for cls in (L.pooling.MaxPool1d, L.pooling.MaxPool2d, L.pooling.MaxPool3d):
        t[cls] = lambda tr, m, out, x: _ops("max_pool")(tr, out, x, m.kernel_size, m.stride, m.padding,
                                                        m.dilation, m.ceil_mode, m.return_indices)
    for cls in (L.pooling.AvgPool1d, L.pooling.AvgPool2d, L.pooling.AvgPool3d):
        t[cls] = lambda tr, m, out, x: _ops("avg_pool")(tr, out, x, m.kernel_size, m.stride, m.padding,
                                                        m.ceil_mode, m.count_include_pad,
                                                        getattr(m, "divisor_override", None))
    for d in (1, 2, 3):
        t[getattr(L.pooling, f"AdaptiveAvgPool{d}d")] = \
            lambda tr, m, out, x: _ops("adaptive_avg_pool2d")(tr, out, x, m.output_size)
    for cls in (L.rnn.LSTM, L.rnn.GRU, L.rnn.RNN):
        t[cls] = _rnn
    return t


_TABLE = None


def emitter_for(mod):
    """The module symbolic for mod's exact class (a subclass may change forward: it is recorded op by op)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _table()
    return _TABLE.get(type(mod))


def _conv(tr, m, out, x):
    if m.padding_mode != "zeros":
        raise NotImplementedError(f"rawdev.onnx.export: {type(m).__name__} with padding_mode={m.padding_mode!r}")
    return _ops("conv")(tr, out, x, m.weight, m.bias, m.stride, m.padding, m.dilation, m.groups)


def _batchnorm(tr, m, out, x):
    if m.training or m.running_mean is None:
        raise NotImplementedError(f"rawdev.onnx.export: {type(m).__name__} in training mode, or without running "
                                  f"statistics (export in eval mode with track_running_stats=True)")
    return _ops("batch_norm")(tr, out, x, m.running_mean, m.running_var, m.weight, m.bias, False, 0.0, m.eps)


def _embedding(tr, m, out, x):
    return _ops("embedding")(tr, out, x, m.weight, m.padding_idx, m.max_norm)


# ------------------------------------------------------------------ recurrent layers
# ONNX's gate order from PyTorch's: LSTM i f g o -> i o f c; GRU r z n -> z r h
_GATES = {"LSTM": (4, [0, 3, 1, 2]), "GRU": (3, [1, 0, 2]), "RNN_TANH": (1, [0]), "RNN_RELU": (1, [0])}


def _gates(w, mode, h):
    n, order = _GATES[mode]
    return np.concatenate([w[k * h:(k + 1) * h] for k in order], 0)


def _layer_slice(g, v, layer, dirs):
    """The initial states of one layer: rows [layer*dirs, (layer+1)*dirs) of h0 / c0."""
    return g.node("Slice", [v, g.ints([layer * dirs]), g.ints([(layer + 1) * dirs]), g.ints([0])])


def _rnn(tr, m, out, x, hx=None):
    from ..tensor import Tensor
    g = tr.graph
    if not isinstance(x, Tensor) or x.ndim != 3:
        raise NotImplementedError(f"rawdev.onnx.export: {type(m).__name__} on a PackedSequence or an unbatched "
                                  f"input (give it a [seq, batch, feature] tensor)")
    mode, H, dirs = m.mode, m.hidden_size, 2 if m.bidirectional else 1
    lstm = mode == "LSTM"
    seq = g.node("Transpose", [tr.v(x)], perm=[1, 0, 2]) if m.batch_first else tr.v(x)
    h0 = c0 = None
    if hx is not None:
        h0, c0 = (tr.v(hx[0]), tr.v(hx[1])) if lstm else (tr.v(hx), None)
    hn, cn = [], []
    for layer in range(m.num_layers):
        W, R, B = [], [], []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh = m._layer_params(layer, d)
            W.append(_gates(_np(w_ih), mode, H))
            R.append(_gates(_np(w_hh), mode, H))
            if b_ih is not None:
                B.append(np.concatenate([_gates(_np(b_ih), mode, H), _gates(_np(b_hh), mode, H)]))
        ins = [seq, tr.v(np.stack(W)), tr.v(np.stack(R)), tr.v(np.stack(B)) if B else "", ""]
        ins.append(_layer_slice(g, h0, layer, dirs) if h0 is not None else "")
        if lstm:
            ins.append(_layer_slice(g, c0, layer, dirs) if c0 is not None else "")
        attrs = {"hidden_size": H, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "GRU":
            attrs["linear_before_reset"] = 1
        if mode.startswith("RNN"):
            attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * dirs
        op = {"LSTM": "LSTM", "GRU": "GRU"}.get(mode, "RNN")
        outs = g.node(op, ins, n_out=3 if lstm else 2, **attrs)
        y = g.node("Transpose", [outs[0]], perm=[0, 2, 1, 3])          # [T, dirs, B, H] -> [T, B, dirs, H]
        seq = g.node("Reshape", [y, g.ints([0, 0, -1])])
        hn.append(outs[1])
        if lstm:
            cn.append(outs[2])
    y = g.node("Transpose", [seq], perm=[1, 0, 2]) if m.batch_first else g.node("Identity", [seq])
    h = g.node("Concat", hn, axis=0) if len(hn) > 1 else g.node("Identity", hn)
    if lstm:
        c = g.node("Concat", cn, axis=0) if len(cn) > 1 else g.node("Identity", cn)
        return [y, h, c]
    return [y, h]


# ------------------------------------------------------------------ multi-head attention
def _mha(tr, m, out, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
         average_attn_weights=True, is_causal=False):
    g = tr.graph
    if query.ndim != 3:
        raise NotImplementedError("rawdev.onnx.export: MultiheadAttention on an unbatched input")
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
        raise NotImplementedError("rawdev.onnx.export: MultiheadAttention with kdim/vdim, add_bias_kv or "
                                  "add_zero_attn")
    E, H = m.embed_dim, m.num_heads
    Dh = E // H
    dt = _np(m.in_proj_weight).dtype
    w = _np(m.in_proj_weight)
    b = _np(m.in_proj_bias) if m.in_proj_bias is not None else None
    # [N, L, E] (batch_first) or [L, N, E]: heads split to [N, H, L, Dh]
    to_heads = [0, 2, 1, 3] if m.batch_first else [1, 2, 0, 3]

    def project(x, k):
        y = g.node("MatMul", [tr.v(x), tr.v(np.ascontiguousarray(w[k * E:(k + 1) * E].T))])
        if b is not None:
            y = g.node("Add", [y, tr.v(b[k * E:(k + 1) * E])])
        return g.node("Reshape", [y, g.ints([0, 0, H, Dh])])
    q = g.node("Transpose", [project(query, 0)], perm=to_heads)
    q = g.node("Mul", [q, tr.v(np.asarray(1.0 / np.sqrt(Dh), dt))])
    k = g.node("Transpose", [project(key, 1)], perm=[to_heads[0], to_heads[1], to_heads[3], to_heads[2]])
    v = g.node("Transpose", [project(value, 2)], perm=to_heads)
    scores = g.node("MatMul", [q, k])                                   # [N, H, L, S]
    L, S = query.shape[1 if m.batch_first else 0], key.shape[1 if m.batch_first else 0]
    if is_causal and attn_mask is None:
        attn_mask = np.triu(np.ones((L, S), dtype=bool), 1)
    def neg():
        return tr.v(np.asarray(-np.inf, dt))
    if attn_mask is not None:
        mk = attn_mask if isinstance(attn_mask, np.ndarray) else _np(attn_mask)
        if mk.ndim == 3:
            mk = mk.reshape(-1, H, L, S)
        scores = g.node("Where", [tr.v(mk), neg(), scores]) if mk.dtype == np.bool_ else \
            g.node("Add", [scores, tr.v(mk.astype(dt))])
    if key_padding_mask is not None:
        kp = g.node("Unsqueeze", [tr.v(key_padding_mask), g.ints([1, 2])])   # [N, 1, 1, S]
        if key_padding_mask.dtype.name == "bool":
            scores = g.node("Where", [kp, neg(), scores])
        else:
            scores = g.node("Add", [scores, kp])
    p = g.node("Softmax", [scores], axis=-1)
    ctx = g.node("MatMul", [p, v])                                      # [N, H, L, Dh]
    back = [0, 2, 1, 3] if m.batch_first else [2, 0, 1, 3]
    ctx = g.node("Reshape", [g.node("Transpose", [ctx], perm=back), g.ints([0, 0, E])])
    y = _ops("linear")(tr, out[0], _Named(ctx, query), m.out_proj.weight, m.out_proj.bias)
    names = [y]
    if out[1] is not None:
        names.append(S._reduce(tr, "ReduceMean", p, [1], False) if average_attn_weights else p)
    return names


class _Named:
    """A value name standing in for a tensor argument of a symbolic (its shape is the tensor `like`'s)."""

    def __init__(self, name, like):
        self.name, self.ndim, self.shape, self.dtype = name, like.ndim, like.shape, like.dtype
