"""cuda launchers of the fused attention kernels (ptx/attention.ptx): forward (online softmax, saves the
row logsumexp), the probabilities for need_weights, and the two recompute backward kernels.

The forward and the backward kernels come in float32 and in float16/bfloat16 storage forms: q, k, v, the
output and the gradients of one 16-bit dtype are read and written as 2 bytes (float32 math, shared tiles,
logsumexp and a float mask), so under autocast they pass rawdev.ops.opmath unwidened (`native_low`) with no
float32 copies; their results are the float32 kernels' on the widened operands, rounded once."""
from .. import dtypes as _dt
from .cuda_launch import _f32, _kernel, _low, _rdev, _storage, dense, empty

__all__ = ["sdpa_fwd", "sdpa_bwd", "sdpa_bwd_q", "sdpa_bwd_kv", "sdpa_probs"]

_ROWS = 32       # rows per block (4 threads per row, 128 threads)


def _head(E, Ev):
    for d in (16, 32, 64, 128):
        if max(E, Ev) <= d:
            return d
    raise NotImplementedError(f"scaled_dot_product_attention on cuda supports head sizes up to 128 "
                              f"(got E={E}, Ev={Ev}); run it on the cpu")


def _tail(mask, N, L, S, E, Ev, scale, causal, p, seed):
    """The kernels' shared trailing arguments (mask pointer, strides, mode, sizes, scale, causal, dropout)."""
    if mask.mode:
        m, sb, sl, ss = mask.cuda
        mp = m.data_ptr()
    else:
        mp, sb, sl, ss = 0, 0, 0, 0
    return [mp, sb, sl, ss, mask.mode, N, L, S, E, Ev, float(scale), int(causal), float(p), int(seed), 0]


def _launch(q, name, rows, args, N, d, sfx=""):
    blocks = N * -(-rows // _ROWS)
    if blocks:
        _kernel(_rdev(q), f"{name}{sfx or '_f32'}_d{d}", "scaled_dot_product_attention").launch(blocks, 128, args)


def sdpa_fwd(q, k, v, mask, causal, scale, p, seed):
    """out [N, L, Ev] (q's dtype), lse [N, L] (float32) for q [N, L, E], k [N, S, E], v [N, S, Ev]."""
    sfx = _storage("scaled_dot_product_attention", q, k, v)
    q, k, v = dense(q), dense(k), dense(v)
    N, L, E = q.shape
    S, Ev = k.shape[1], v.shape[2]
    d = _head(E, Ev)
    out = empty((N, L, Ev), q.dtype, q.device, "attention output")
    lse = empty((N, L), _dt.float32, q.device, "attention logsumexp")
    _launch(q, "sdpa_fwd", L, [out.data_ptr(), lse.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr()]
            + _tail(mask, N, L, S, E, Ev, scale, causal, p, seed), N, d, sfx)
    return out, lse


def sdpa_probs(q, k, lse, mask, causal, scale, p, seed):
    """The probabilities [N, L, S] of the forward that saved lse (dropped as it dropped them)."""
    q, k, lse = dense(q), dense(k), dense(lse)
    N, L, E = q.shape
    S = k.shape[1]
    d = _head(E, E)
    w = empty((N, L, S), _dt.float32, q.device, "attention weights")
    _launch(q, "sdpa_probs", L, [w.data_ptr(), lse.data_ptr(), q.data_ptr(), k.data_ptr()]
            + _tail(mask, N, L, S, E, E, scale, causal, p, seed), N, d)
    return w


def sdpa_bwd(g, q, k, v, out, lse, mask, causal, scale, p, seed, want_scores=False):
    """(dq, dk, dv, dS or None): dq and rowsum(dO*O) (and the score gradient dS [N, L, S] when asked) over query
    rows, then dk, dv over key rows (P recomputed from lse)."""
    dq, rowdot, ds = sdpa_bwd_q(g, q, k, v, out, lse, mask, causal, scale, p, seed, want_scores)
    dk, dv = sdpa_bwd_kv(g, q, k, v, rowdot, lse, mask, causal, scale, p, seed)
    return dq, dk, dv, ds


def sdpa_bwd_q(g, q, k, v, out, lse, mask, causal, scale, p, seed, want_scores=False):
    """The query-row half of sdpa_bwd: (dq, rowsum(dO*O) [N, L] float32, dS or None). The forward output is read
    here only, so a caller that runs the halves as two calls lets its widened copy go before the key-row half."""
    sfx = _storage("scaled_dot_product_attention backward", g, q, k, v, out)
    if want_scores:   # the score gradient is a float32 kernel output: only the float32 form writes it
        _f32("scaled_dot_product_attention backward", g)
    g, q, k, v, out = dense(g), dense(q), dense(k), dense(v), dense(out)
    N, L, E = q.shape
    S, Ev = k.shape[1], v.shape[2]
    d = _head(E, Ev)
    tail = _tail(mask, N, L, S, E, Ev, scale, causal, p, seed)
    dq = empty((N, L, E), q.dtype, q.device, "attention grad q")
    rowdot = empty((N, L), _dt.float32, q.device, "attention rowsum(dO*O)")
    ds = empty((N, L, S), _dt.float32, q.device, "attention mask grad") if want_scores else None
    dsp = ds.data_ptr() if ds is not None else 0
    _launch(q, "sdpa_bwd_dq", L, [dq.data_ptr(), rowdot.data_ptr(), dsp, g.data_ptr(), out.data_ptr(), lse.data_ptr(),
                                  q.data_ptr(), k.data_ptr(), v.data_ptr()] + tail, N, d, sfx)
    return dq, rowdot, ds


def sdpa_bwd_kv(g, q, k, v, rowdot, lse, mask, causal, scale, p, seed):
    """The key-row half of sdpa_bwd: (dk, dv) from rowsum(dO*O) of sdpa_bwd_q."""
    sfx = _storage("scaled_dot_product_attention backward", g, q, k, v)
    g, q, k, v = dense(g), dense(q), dense(k), dense(v)
    N, L, E = q.shape
    S, Ev = k.shape[1], v.shape[2]
    d = _head(E, Ev)
    tail = _tail(mask, N, L, S, E, Ev, scale, causal, p, seed)
    if L == 0:   # no query rows: the key side still owes zeros
        from .cuda_launch import full
        return full((N, S, E), 0.0, q.dtype, q.device), full((N, S, Ev), 0.0, q.dtype, q.device)
    dk = empty((N, S, E), q.dtype, q.device, "attention grad k")
    dv = empty((N, S, Ev), q.dtype, q.device, "attention grad v")
    _launch(q, "sdpa_bwd_dkv", S, [dk.data_ptr(), dv.data_ptr(), g.data_ptr(), rowdot.data_ptr(), lse.data_ptr(),
                                   q.data_ptr(), k.data_ptr(), v.data_ptr()] + tail, N, d, sfx)
    return dk, dv


# opmath passes 16-bit q, k, v (and gradient, output) unwidened where the 16-bit kernels take them
sdpa_fwd.native_low = lambda q, k, v, *args: _low(q, k, v) is not None  # type: ignore[attr-defined]
sdpa_bwd_q.native_low = (  # type: ignore[attr-defined]
    lambda g, q, k, v, out, lse, mask, causal, scale, p, seed, want_scores=False: _low(g, q, k, v, out) is not None
    and not want_scores)
sdpa_bwd_kv.native_low = lambda g, q, k, v, *args: _low(g, q, k, v) is not None  # type: ignore[attr-defined]
