"""The cpu path of the dropout family: masks drawn directly from rawdev's host generator (numpy), in the tensor's
dtype; the signatures of cuda.py beside it."""
import numpy as np

from ..cpu_values import _vdt, v, wrap

__all__ = ["dropout", "dropout_bwd", "dropout_keep"]


def dropout(x, p, generator):
    """(y, mask): mask = keep/(1-p) drawn from rawdev's host generator; y = x*mask."""
    dtp = _vdt(x.dtype)
    keep = generator.np.random(tuple(x.shape)) >= p
    mask = keep.astype(dtp) / np.asarray(1 - p, dtp)
    return wrap(v(x) * mask, x.dtype), wrap(mask, x.dtype)


def dropout_bwd(g, mask, p):
    return wrap(v(g) * v(mask), g.dtype)


def dropout_keep(shape, p, scale, dt, dev, generator):
    """A [shape] tensor of dtype dt: scale where an element is kept (probability 1 - p), 0 elsewhere, drawn from
    rawdev's host generator (dev is the cpu; the cuda form needs it)."""
    dtp = _vdt(dt)
    keep = generator.np.random(shape) >= p
    return wrap(keep.astype(dtp) * np.asarray(scale, dtp), dt)
