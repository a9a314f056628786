"""cuda launchers of the fused attention kernels (ptx/attention.ptx): forward (online softmax, saves the
row logsumexp), the probabilities for need_weights, and the two recompute backward kernels; with cpu.py's
signatures.

The forward and the backward kernels come in float32 and in float16/bfloat16 storage forms: q, k, v, the
output and the gradients of one 16-bit dtype are read and written as 2 bytes (float32 math, shared tiles,
logsumexp and a float mask), so under autocast they pass rawdev.ops.opmath unwidened (`native_low`) with no
float32 copies; their results are the float32 kernels' on the widened operands, rounded once.

The mask's cuda form is (tensor, batch stride, row stride, column stride) in elements: the kernels read the mask
in place through its strides. The dropout state is a Philox seed (None without dropout): each kernel regenerates the
same keep mask from it (dropout.cu's scheme over the flat index (n*L + i)*S + j), so none is stored."""
from ... import dtypes as _dt
from ..cuda_cast import cast
from ..cuda_launch import _f32, _kernel, _low, _rdev, _storage, dense, empty, full

__all__ = ["sdpa_mask", "sdpa_dropout", "sdpa_fwd", "sdpa_bwd", "sdpa_bwd_q", "sdpa_bwd_kv", "sdpa_probs"]

_ROWS = 32       # rows per block (4 threads per row, 128 threads)


def _head(E, Ev):
    for d in (16, 32, 64, 128):
        if max(E, Ev) <= d:
            return d
    raise NotImplementedError(f"scaled_dot_product_attention on cuda supports head sizes up to 128 "
                              f"(got E={E}, Ev={Ev}); run it on the cpu")


def _tail(mask, N, L, S, E, Ev, scale, causal, p, drop):
    """The kernels' shared trailing arguments (mask pointer, strides, mode, sizes, scale, causal, dropout)."""
    if mask.mode:
        m, sb, sl, ss = mask.values
        mp = m.data_ptr()
    else:
        mp, sb, sl, ss = 0, 0, 0, 0
    return [mp, sb, sl, ss, mask.mode, N, L, S, E, Ev, float(scale), int(causal), float(p), int(drop or 0), 0]


def _launch(q, name, rows, args, N, d, sfx=""):
    blocks = N * -(-rows // _ROWS)
    if blocks:
        _kernel(_rdev(q), f"{name}{sfx or '_f32'}_d{d}", "scaled_dot_product_attention").launch(blocks, 128, args)


def sdpa_mask(mask, batch, N, L, S):
    """The cuda form of the mask that `mask.values` holds, broadcast to batch + (L, S): (tensor, batch stride, row
    stride, column stride), the batch dims merged into one stride (N = prod(batch)); a copy [N, L, S] only where
    they cannot be."""
    t = mask.values
    if mask.mode == 1 and t.dtype is not _dt.float32:
        t = cast(t, _dt.float32)   # every kernel form reads a float mask as float32 (exact for 16-bit masks)
    batch = tuple(batch)
    shape = batch + (L, S)
    n, st = t.ndim, t.stride()
    lead = len(shape) - n
    m = t._view(shape, [0] * lead + [st[j] if t.shape[j] == shape[lead + j] else 0 for j in range(n)],
                t.storage_offset())   # expand: stride 0 on the broadcast dims
    st = m.stride()
    bst = st[:len(batch)]
    if all(s == 0 for s in bst):
        sb = 0
    elif all(bst[d] == bst[d + 1] * batch[d + 1] for d in range(len(batch) - 1)):
        sb = bst[-1]
    else:
        m = m._contiguous_copy("attention mask")
        st, sb = m.stride(), L * S
    return m, sb, st[-2], st[-1]


def sdpa_dropout(generator, p, N, L, S):
    """The Philox seed of one forward's keep mask (each element kept with probability 1 - p), from `generator`."""
    return int(generator.np.integers(0, 2 ** 63))


def sdpa_fwd(q, k, v, mask, causal, scale, p, drop):
    """out [N, L, Ev] (q's dtype), lse [N, L] (float32) for q [N, L, E], k [N, S, E], v [N, S, Ev]."""
    sfx = _storage("scaled_dot_product_attention", q, k, v)
    q, k, v = dense(q), dense(k), dense(v)
    N, L, E = q.shape
    S, Ev = k.shape[1], v.shape[2]
    d = _head(E, Ev)
    out = empty((N, L, Ev), q.dtype, q.device, "attention output")
    lse = empty((N, L), _dt.float32, q.device, "attention logsumexp")
    _launch(q, "sdpa_fwd", L, [out.data_ptr(), lse.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr()]
            + _tail(mask, N, L, S, E, Ev, scale, causal, p, drop), N, d, sfx)
    return out, lse


def sdpa_probs(q, k, lse, mask, causal, scale, p, drop):
    """The probabilities [N, L, S] of the forward that saved lse (dropped as it dropped them)."""
    q, k, lse = dense(q), dense(k), dense(lse)
    N, L, E = q.shape
    S = k.shape[1]
    d = _head(E, E)
    w = empty((N, L, S), _dt.float32, q.device, "attention weights")
    _launch(q, "sdpa_probs", L, [w.data_ptr(), lse.data_ptr(), q.data_ptr(), k.data_ptr()]
            + _tail(mask, N, L, S, E, E, scale, causal, p, drop), N, d)
    return w


def sdpa_bwd(g, q, k, v, out, lse, mask, causal, scale, p, drop, want_scores=False):
    """(dq, dk, dv, dS or None): dq and rowsum(dO*O) (and the score gradient dS [N, L, S] when asked) over query
    rows, then dk, dv over key rows (P recomputed from lse)."""
    dq, rowdot, ds = sdpa_bwd_q(g, q, k, v, out, lse, mask, causal, scale, p, drop, want_scores)
    dk, dv = sdpa_bwd_kv(g, q, k, v, rowdot, lse, mask, causal, scale, p, drop)
    return dq, dk, dv, ds


def sdpa_bwd_q(g, q, k, v, out, lse, mask, causal, scale, p, drop, want_scores=False):
    """The query-row half of sdpa_bwd: (dq, rowsum(dO*O) [N, L] float32, dS or None). The forward output is read
    here only, so a caller that runs the halves as two calls lets its widened copy go before the key-row half."""
    sfx = _storage("scaled_dot_product_attention backward", g, q, k, v, out)
    if want_scores:   # the score gradient is a float32 kernel output: only the float32 form writes it
        _f32("scaled_dot_product_attention backward", g)
    g, q, k, v, out = dense(g), dense(q), dense(k), dense(v), dense(out)
    N, L, E = q.shape
    S, Ev = k.shape[1], v.shape[2]
    d = _head(E, Ev)
    tail = _tail(mask, N, L, S, E, Ev, scale, causal, p, drop)
    dq = empty((N, L, E), q.dtype, q.device, "attention grad q")
    rowdot = empty((N, L), _dt.float32, q.device, "attention rowsum(dO*O)")
    ds = empty((N, L, S), _dt.float32, q.device, "attention mask grad") if want_scores else None
    dsp = ds.data_ptr() if ds is not None else 0
    _launch(q, "sdpa_bwd_dq", L, [dq.data_ptr(), rowdot.data_ptr(), dsp, g.data_ptr(), out.data_ptr(), lse.data_ptr(),
                                  q.data_ptr(), k.data_ptr(), v.data_ptr()] + tail, N, d, sfx)
    return dq, rowdot, ds


def sdpa_bwd_kv(g, q, k, v, rowdot, lse, mask, causal, scale, p, drop):
    """The key-row half of sdpa_bwd: (dk, dv) from rowsum(dO*O) of sdpa_bwd_q."""
    sfx = _storage("scaled_dot_product_attention backward", g, q, k, v)
    g, q, k, v = dense(g), dense(q), dense(k), dense(v)
    N, L, E = q.shape
    S, Ev = k.shape[1], v.shape[2]
    d = _head(E, Ev)
    tail = _tail(mask, N, L, S, E, Ev, scale, causal, p, drop)
    if L == 0:   # no query rows: the key side still owes zeros
        return full((N, S, E), 0.0, q.dtype, q.device), full((N, S, Ev), 0.0, q.dtype, q.device)
    dk = empty((N, S, E), q.dtype, q.device, "attention grad k")
    dv = empty((N, S, Ev), q.dtype, q.device, "attention grad v")
    _launch(q, "sdpa_bwd_dkv", S, [dk.data_ptr(), dv.data_ptr(), g.data_ptr(), rowdot.data_ptr(), lse.data_ptr(),
                                   q.data_ptr(), k.data_ptr(), v.data_ptr()] + tail, N, d, sfx)
    return dk, dv


# opmath passes 16-bit q, k, v (and gradient, output) unwidened where the 16-bit kernels take them
sdpa_fwd.native_low = lambda q, k, v, *args: _low(q, k, v) is not None  # type: ignore[attr-defined]
sdpa_bwd_q.native_low = (  # type: ignore[attr-defined]
    lambda g, q, k, v, out, lse, mask, causal, scale, p, drop, want_scores=False: _low(g, q, k, v, out) is not None
    and not want_scores)
sdpa_bwd_kv.native_low = lambda g, q, k, v, *args: _low(g, q, k, v) is not None  # type: ignore[attr-defined]
