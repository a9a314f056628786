"""Arrays onto a device in a dtype and back, and the float dtype and tolerance per device, for the tests of ops
that are exact in float64 on the cpu (covariance, scatter/put, the composed pointwise ops, selection)."""
import numpy as np
import rawdev

__all__ = ["on", "num", "FLOAT", "TOL"]


def on(a, dev, dt=None, grad=False):
    t = rawdev.tensor(np.asarray(a), device=dev)
    if dt is not None:
        t = t.to(dtype=dt)
    return t.requires_grad_(True) if grad else t


def num(t):
    return t.detach().cpu().numpy()


FLOAT = {"cpu": rawdev.float64, "cuda": rawdev.float32}


TOL = {"cpu": 1e-12, "cuda": 2e-6}
