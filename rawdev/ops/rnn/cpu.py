"""The cpu path of the recurrent cells (numpy, in the tensor's dtype): the signatures of cuda.py beside it.

The saved activations have the layout the cuda kernels write: LSTM [B, 4H] = i, f, g, o after their
nonlinearities; GRU [B, 4H] = r, z, n and the hidden product's n part (W_hn h + b_hn).
"""
import numpy as np

from ..cpu_values import v, wrap

__all__ = ["lstm_cell_fwd", "lstm_cell_bwd", "gru_cell_fwd", "gru_cell_bwd", "rnn_cell_fwd", "rnn_cell_bwd"]


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_cell_fwd(gx, gh, c):
    """(h1, c1, gates) of one LSTM step from the input and hidden products gx, gh [B, 4H] and the cell c [B, H]."""
    g = v(gx) + v(gh)
    H = c.shape[-1]
    i, f, gg, o = _sig(g[:, :H]), _sig(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), _sig(g[:, 3 * H:])
    c1 = f * v(c) + i * gg
    h1 = o * np.tanh(c1)
    dt = gx.dtype
    return wrap(h1, dt), wrap(c1, dt), wrap(np.concatenate([i, f, gg, o], 1), dt)


def lstm_cell_bwd(dh1, dc1, act, c, c1):
    """(d gates [B, 4H], dc [B, H]) from the gradients of h1 and c1."""
    a = v(act)
    H = c.shape[-1]
    i, f, gg, o = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
    tc = np.tanh(v(c1))
    dh = v(dh1)
    dct = v(dc1) + dh * o * (1 - tc * tc)
    dG = np.concatenate([dct * gg * i * (1 - i), dct * v(c) * f * (1 - f), dct * i * (1 - gg * gg),
                         dh * tc * o * (1 - o)], 1)
    return wrap(dG, act.dtype), wrap(dct * f, act.dtype)


def gru_cell_fwd(gx, gh, h):
    """(h1, gates) of one GRU step from the input and hidden products gx, gh [B, 3H] and the state h [B, H]."""
    x, hh = v(gx), v(gh)
    H = h.shape[-1]
    r = _sig(x[:, :H] + hh[:, :H])
    z = _sig(x[:, H:2 * H] + hh[:, H:2 * H])
    hn = hh[:, 2 * H:]
    n = np.tanh(x[:, 2 * H:] + r * hn)
    h1 = (1 - z) * n + z * v(h)
    return wrap(h1, gx.dtype), wrap(np.concatenate([r, z, n, hn], 1), gx.dtype)


def gru_cell_bwd(dh1, act, h):
    """(d input product [B, 3H], d hidden product [B, 3H], dh [B, H]) from the gradient of h1."""
    a, d = v(act), v(dh1)
    H = h.shape[-1]
    r, z, n, hn = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
    dn = d * (1 - z) * (1 - n * n)
    dz = d * (v(h) - n) * z * (1 - z)
    dr = dn * hn * r * (1 - r)
    dt = act.dtype
    return (wrap(np.concatenate([dr, dz, dn], 1), dt), wrap(np.concatenate([dr, dz, dn * r], 1), dt),
            wrap(d * z, dt))


def rnn_cell_fwd(gx, gh, relu):
    """h1 = relu or tanh of gx + gh."""
    s = v(gx) + v(gh)
    return wrap(np.maximum(s, 0) if relu else np.tanh(s), gx.dtype)


def rnn_cell_bwd(dh1, h1, relu):
    """The gradient of the pre-activation from that of h1 (through h1 itself: relu's mask, tanh's 1 - h1²)."""
    y, d = v(h1), v(dh1)
    return wrap(np.where(y > 0, d, 0) if relu else d * (1 - y * y), h1.dtype)
