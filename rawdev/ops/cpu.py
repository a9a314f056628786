"""The cpu path of every op: numpy, in the tensor's own dtype (float64 for gradient checks).

Each function takes and returns rawdev Tensors (no autograd here). This is also the oracle the cuda
path is tested against. The signatures are the backend contract; rawdev/ops/cuda.py has the same ones.
"""
import math

import numpy as np

from .. import dtypes as _dt
from ..device import CPU
from ..tensor.core import Tensor
from .cpu_values import _vdt, v, wrap  # noqa: F401  (the family folders take them from here too)

NAME = "cpu"


# ------------------------------------------------------------------ creation / copies
def empty(shape, dt, dev=CPU, owner=None):
    return Tensor._make_cpu(np.empty(tuple(shape), dt.storage), dt)


def full(shape, value, dt, dev=CPU, owner=None):
    return wrap(np.full(tuple(shape), value, _vdt(dt)), dt)


def clone(x, owner=None):
    return x._contiguous_copy()


def copy_into(dst, src):
    dst._write(src)


# ------------------------------------------------------------------ elementwise
def add(a, b, alpha=1.0, dt=None):
    """a + alpha*b with broadcasting; dt: result dtype."""
    if alpha == 1:
        r = v(a) + v(b)
    elif alpha == -1:
        r = v(a) - v(b)
    else:   # an integer alpha wraps into an unsigned dtype (uint8: -2 is 254), as PyTorch's
        r = v(a) + v(b) * np.asarray(alpha).astype(_vdt(b.dtype))
    return wrap(r, dt or _dt.from_numpy_dtype(r.dtype))


def add_(a, b, alpha=1.0):
    """In place: a += alpha*b (b broadcast to a)."""
    if a.dtype is _dt.bfloat16:   # combined in float32 values, stored back as bfloat16 bits
        a._write(wrap(v(a) + v(b) * np.float32(alpha), a.dtype))
        return a
    av = a._host_storage()
    if alpha == 1:
        av += v(b).astype(av.dtype, copy=False)
    else:
        av += (v(b) * alpha).astype(av.dtype, copy=False)
    a._bump_version()
    return a


def scale_(x, s):
    if x.dtype is _dt.bfloat16:
        x._write(wrap(v(x) * np.float32(s), x.dtype))
        return x
    xv = x._host_storage()
    xv *= np.asarray(s, xv.dtype)
    x._bump_version()
    return x


def mul(a, b, dt=None):
    r = v(a) * v(b)
    return wrap(r, dt or _dt.from_numpy_dtype(r.dtype))


def div(a, b, dt=None):
    r = v(a) / v(b)
    return wrap(r, dt or _dt.from_numpy_dtype(r.dtype))


def scale(x, s):
    """x * s for a Python scalar s, in x's dtype."""
    xv = v(x)
    return wrap(xv * np.asarray(s, xv.dtype), x.dtype)


def add_scalar(x, s):
    xv = v(x)
    return wrap(xv + np.asarray(s, xv.dtype), x.dtype)


def div_scalar(x, s):
    xv = v(x)
    return wrap(xv / np.asarray(s, xv.dtype), x.dtype)


def rsub_scalar(x, s):
    xv = v(x)
    return wrap(np.asarray(s, xv.dtype) - xv, x.dtype)


def rdiv_scalar(x, s):
    xv = v(x)
    return wrap(np.asarray(s, xv.dtype) / xv, x.dtype)


def neg(x):
    return wrap(-v(x), x.dtype)


def pow_scalar(x, e):
    xv = v(x)
    return wrap(np.power(xv, np.asarray(e, xv.dtype)), x.dtype)


def _erfc_cf(a):
    """erfc(a) for a ≥ 2 by its continued fraction exp(−a²)/√π / (a + (1/2)/(a + 1/(a + (3/2)/(a + …)))),
    40 levels evaluated from the bottom (relative error ~1e-14 over [2, 27])."""
    k = a.copy()
    for n in range(40, 0, -1):
        k = a + (n / 2) / k
    with np.errstate(under="ignore"):
        return np.exp(-a * a) / (math.sqrt(math.pi) * k)


def _erf(x):
    """erf in numpy (it has none), to float64's last bits or so.

    |x| < 2: the Maclaurin series (40 terms reach 1e-17 at |x| = 2); beyond: 1 − erfc, erfc by its continued
    fraction."""
    z = np.asarray(x, np.float64)
    a = np.abs(z)
    small = np.minimum(a, 2.0)
    z2, term, acc = small * small, small.copy(), small.copy()
    for n in range(1, 40):
        term = term * (-z2) / n
        acc = acc + term / (2 * n + 1)
    series = acc * (2.0 / math.sqrt(math.pi))
    tail = 1.0 - _erfc_cf(np.maximum(a, 2.0))
    r = np.where(a < 2.0, series, tail) * np.sign(z)
    return r.astype(np.result_type(x), copy=False)


def _gelu_tanh(x):
    k0, k1 = np.asarray(math.sqrt(2.0 / math.pi), x.dtype), np.asarray(0.044715, x.dtype)
    return 0.5 * x * (1 + np.tanh(k0 * (x + k1 * x * x * x)))


# ------------------------------------------------------------------ comparisons and casts
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal,
        "same": lambda a, b: np.equal(a, b) | (np.isnan(a) & np.isnan(b))}   # eq, or both NaN


def compare(a, b, op):
    """Bool tensor a <op> b; b is a tensor of a's dtype (broadcast) or a Python scalar (compared in a's
    dtype: numpy's weak scalars, as PyTorch's wrapped numbers)."""
    bv = v(b) if isinstance(b, Tensor) else b
    with np.errstate(invalid="ignore"):
        return wrap(_CMP[op](v(a), bv), _dt.bool)


def cast(x, dt):
    """x's values in dtype dt (what Tensor.to(dtype) does on the cpu)."""
    return Tensor._make_cpu(_dt.convert_storage(x._host_storage(), x.dtype, dt), dt)


# ------------------------------------------------------------------ broadcasting
def expand(x, shape):
    return wrap(np.broadcast_to(v(x), tuple(shape)), x.dtype)


# ------------------------------------------------------------------ matrix products
def gemm(a, b, ta=False, tb=False, bias=None, act=0, alpha=1.0):
    """op(a)[M,K] · op(b)[K,N] (* alpha) (+ bias[N]) then act (0 none, 1 relu, 2 gelu-tanh); 2-D only."""
    av, bv = v(a), v(b)
    r = (av.T if ta else av) @ (bv.T if tb else bv)
    if alpha != 1:
        r = r * np.asarray(alpha, r.dtype)
    if bias is not None:
        r = r + v(bias)
    if act == 1:
        r = np.maximum(r, 0)
    elif act == 2:
        r = _gelu_tanh(r)
    return wrap(r, a.dtype)


def matmul(a, b):
    """numpy matmul semantics (batched, broadcast, 1-D promotion)."""
    r = np.matmul(v(a), v(b))
    return wrap(r, a.dtype)


# ------------------------------------------------------------------ softmax family
def softmax(x, dim, log=False):
    xv = v(x)
    m = np.max(xv, axis=dim, keepdims=True)
    z = xv - m
    if log:
        r = z - np.log(np.sum(np.exp(z), axis=dim, keepdims=True))
    else:
        e = np.exp(z)
        r = e / np.sum(e, axis=dim, keepdims=True)
    return wrap(r, x.dtype)


def softmax_bwd(gy, y, dim, log=False):
    g, yv = v(gy), v(y)
    if log:
        r = g - np.exp(yv) * np.sum(g, axis=dim, keepdims=True)
    else:
        r = yv * (g - np.sum(g * yv, axis=dim, keepdims=True))
    return wrap(r, gy.dtype)


# ------------------------------------------------------------------ losses
def _ce_weights(target, n_cls, weight, ignore_index, dtp):
    t = v(target).astype(np.int64)
    valid = t != ignore_index
    if np.any((t[valid] < 0) | (t[valid] >= n_cls)):
        bad = t[valid][(t[valid] < 0) | (t[valid] >= n_cls)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    ts = np.where(valid, t, 0)
    w = (v(weight)[ts] if weight is not None else np.ones(t.shape, dtp)) * valid
    return ts, w.astype(dtp), valid


def cross_entropy(logits, target, weight, ignore_index, reduction, smoothing):
    """logits [N, C], target [N] class indices. Returns (loss, logp) with PyTorch's semantics."""
    logp = v(softmax(logits, 1, log=True))
    dtp = logp.dtype
    n, c = logp.shape
    ts, w, valid = _ce_weights(target, c, weight, ignore_index, dtp)
    nll = -logp[np.arange(n), ts] * w
    if smoothing:
        wc = v(weight) if weight is not None else np.ones(c, dtp)
        smooth = -(logp * wc).sum(1) * valid
        per = (1 - smoothing) * nll + (smoothing / c) * smooth
    else:
        per = nll
    if reduction == "none":
        r = per
    elif reduction == "sum":
        r = per.sum()
    else:
        with np.errstate(invalid="ignore", divide="ignore"):   # every target ignored: nan, silently (PyTorch)
            r = per.sum() / w.sum()
    return wrap(np.asarray(r, dtp), logits.dtype), (wrap(logp, logits.dtype),)


def cross_entropy_bwd(gy, saved, target, weight, ignore_index, reduction, smoothing):
    lp = v(saved[0])
    dtp = lp.dtype
    n, c = lp.shape
    ts, w, valid = _ce_weights(target, c, weight, ignore_index, dtp)
    g = v(gy)
    if reduction == "none":
        gs = g.reshape(n)
    elif reduction == "sum":
        gs = np.full(n, g.reshape(()), dtp)
    else:
        # Every target ignored: the loss is nan but each row's weight is 0, so its gradient is 0 (as
        # PyTorch's): 0 * (g / 0) would make it nan.
        total = w.sum()
        gs = np.full(n, g.reshape(()) / total if total != 0 else 0, dtp)
    p = np.exp(lp)
    onehot = np.zeros_like(lp)
    onehot[np.arange(n), ts] = 1
    # d(nll_i)/dz = w_i (p - onehot); d(smooth_i)/dz = valid_i (sum(wc) p - wc)
    grad = (1 - smoothing) * (w[:, None] * (p - onehot))
    if smoothing:
        wc = v(weight) if weight is not None else np.ones(c, dtp)
        grad = grad + (smoothing / c) * (valid[:, None] * (wc.sum() * p - wc[None, :]))
    return wrap(grad * gs[:, None], gy.dtype)


from .reduce.cpu import *  # noqa: F401,F403,E402  (sum, mean, max/min along a dim)
from .select.cpu import *  # noqa: F401,F403,E402  (where, masked_fill, clamp, maximum/minimum)
from .normalization.cpu import *  # noqa: F401,F403,E402  (layer_norm, rms_norm, group_norm, batch_norm)
from .conv.cpu import *  # noqa: F401,F403,E402  (convolution, pooling)
from .gather_scatter.cpu import *  # noqa: F401,F403,E402  (gather, scatter)
from .resample.cpu import *  # noqa: F401,F403,E402  (interpolate)
from .embedding_bag.cpu import *  # noqa: F401,F403,E402  (embedding_bag)
from .rnn.cpu import *  # noqa: F401,F403,E402  (the recurrent cells)
from .optim_steps.cpu import *  # noqa: F401,F403,E402  (the optimizers' steps and state)
from .attention.cpu import *  # noqa: F401,F403,E402  (scaled_dot_product_attention)
from .cpu_math import *  # noqa: F401,F403,E402  (binary math, logical, classify)
from .dropout.cpu import *  # noqa: F401,F403,E402  (dropout and its masks)
from .index_along_dim.cpu import *  # noqa: F401,F403,E402  (index_select, index_copy_, index_add_)
