"""The cpu path of scaled_dot_product_attention (numpy, in the tensor's dtype): the signatures of cuda.py beside it.

The forward materialises the [N, L, S] scores (no tiling). The backward is cuda's two halves, which the op calls
one after the other: each recomputes the probabilities from the saved row logsumexp, as the cuda kernels do (so the
scores and their exponentials are computed twice per backward, where one pass could share them). The mask's cpu
form is its values as a numpy [N, L, S] array (a broadcast view where numpy can keep one); the dropout state (None
without dropout) is a bool keep mask [N, L, S] drawn from the cpu generator, saved by the forward for the backward
and the probabilities.
"""
import numpy as np

# cpu_values.v as _vals: `v` is the value tensor's name here, as in cuda.py's signatures
from ..cpu_values import _vdt, wrap
from ..cpu_values import v as _vals

__all__ = ["sdpa_mask", "sdpa_dropout", "sdpa_fwd", "sdpa_bwd", "sdpa_bwd_q", "sdpa_bwd_kv", "sdpa_probs"]


def sdpa_mask(mask, batch, N, L, S):
    """The values of the mask that `mask.values` holds, broadcast to batch + (L, S) and viewed as [N, L, S]."""
    return np.reshape(np.broadcast_to(_vals(mask.values), tuple(batch) + (L, S)), (N, L, S))


def sdpa_dropout(generator, p, N, L, S):
    """The keep mask [N, L, S] of one forward (True = kept, each with probability 1 - p), from `generator`."""
    return generator.np.random((N, L, S)) >= p


def _bias(mask, dt):
    """The additive form of a mask (0 / -inf for bool), or None."""
    if mask.mode == 0:
        return None
    if mask.mode == 2:
        return np.where(mask.values, 0.0, -np.inf).astype(dt)
    return mask.values.astype(dt, copy=False)


def _scores(q, k, mask, causal, scale):
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(scale)
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.arange(S)[None, :] <= np.arange(L)[:, None], s, -np.inf)
    bias = _bias(mask, q.dtype)
    if bias is not None:
        s = s + bias
    return s


def _probs(s, lse):
    with np.errstate(invalid="ignore"):
        p = np.exp(s - lse[..., None])
    return np.where(np.isfinite(lse)[..., None], p, 0.0).astype(s.dtype)


def sdpa_fwd(q, k, v, mask, causal, scale, p, drop):
    """(out [N, L, Ev], lse [N, L]), both of q's dtype, for q [N, L, E], k [N, S, E], v [N, S, Ev]."""
    qv = _vals(q)
    s = _scores(qv, _vals(k), mask, causal, scale)
    m = s.max(-1) if s.shape[-1] else np.full(s.shape[:-1], -np.inf, s.dtype)
    m0 = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m0[..., None])
    tot = e.sum(-1)
    with np.errstate(divide="ignore"):
        lse = np.where(tot > 0, m0 + np.log(np.where(tot > 0, tot, 1.0)), np.inf).astype(qv.dtype)
    pr = _probs(s, lse)
    if drop is not None:
        pr = pr * drop / qv.dtype.type(1.0 - p)
    return wrap(np.matmul(pr, _vals(v)).astype(qv.dtype), q.dtype), wrap(lse, q.dtype)


def sdpa_probs(q, k, lse, mask, causal, scale, p, drop):
    """The probabilities [N, L, S] of the forward that saved lse (dropped as it dropped them)."""
    qv = _vals(q)
    pr = _probs(_scores(qv, _vals(k), mask, causal, scale), _vals(lse))
    if drop is not None:
        pr = pr * drop / (1.0 - p)
    return wrap(pr.astype(_vdt(q.dtype)), q.dtype)


def _grad_values(g, q):
    """The output gradient's numpy values, in the dtype q's are computed in."""
    return np.asarray(_vals(g), _vals(q).dtype)


def _recompute(gv, q, k, v, lse, mask, causal, scale, p, drop, di):
    """What both backward halves start from, in numpy: (q, k, P, dS), the probabilities P recomputed from lse and the
    score gradient dS = P * (dP - di) with dP = dO·vᵀ through the dropout mask and di = rowsum(dO*O) [N, L, 1]."""
    qv, kv = _vals(q), _vals(k)
    pr = _probs(_scores(qv, kv, mask, causal, scale), _vals(lse))
    dp = np.matmul(gv, np.swapaxes(_vals(v), -1, -2))
    if drop is not None:
        dp = dp * drop * qv.dtype.type(1.0 / (1.0 - p))
    return qv, kv, pr, pr * (dp - di)


def sdpa_bwd(g, q, k, v, out, lse, mask, causal, scale, p, drop, want_scores=False):
    """(dq, dk, dv, dS or None): sdpa_bwd_q, then sdpa_bwd_kv."""
    dq, rowdot, ds = sdpa_bwd_q(g, q, k, v, out, lse, mask, causal, scale, p, drop, want_scores)
    dk, dv = sdpa_bwd_kv(g, q, k, v, rowdot, lse, mask, causal, scale, p, drop)
    return dq, dk, dv, ds


def sdpa_bwd_q(g, q, k, v, out, lse, mask, causal, scale, p, drop, want_scores=False):
    """The query-row half of sdpa_bwd: (dq, rowsum(dO*O) [N, L] in the values' dtype, dS or None)."""
    gv = _grad_values(g, q)
    di = (gv * _vals(out)).sum(-1, keepdims=True)
    qv, kv, _, ds = _recompute(gv, q, k, v, lse, mask, causal, scale, p, drop, di)
    dq = np.matmul(ds, kv) * qv.dtype.type(scale)
    return (wrap(dq.astype(qv.dtype), q.dtype), wrap(di[..., 0]),
            wrap(ds.astype(qv.dtype), q.dtype) if want_scores else None)


def sdpa_bwd_kv(g, q, k, v, rowdot, lse, mask, causal, scale, p, drop):
    """The key-row half of sdpa_bwd: (dk, dv) from rowsum(dO*O) of sdpa_bwd_q."""
    gv = _grad_values(g, q)
    qv, _, pr, ds = _recompute(gv, q, k, v, lse, mask, causal, scale, p, drop, _vals(rowdot)[..., None])
    dt = qv.dtype
    pd = pr * drop * dt.type(1.0 / (1.0 - p)) if drop is not None else pr
    dv = np.matmul(np.swapaxes(pd, -1, -2), gv)
    dk = np.matmul(np.swapaxes(ds, -1, -2), qv) * dt.type(scale)
    return wrap(dk.astype(dt), q.dtype), wrap(dv.astype(dt), q.dtype)
