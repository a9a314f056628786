"""Checks shared by the tests of ops composed from declared ones: a value against a float64 NumPy reference and the
gradient against central differences, on the cpu in float64 and on the simulated GPU in float32."""
import numpy as np
import rawdev

from _refs import numeric_grad, rng

__all__ = ["on", "num", "TOL", "DEVICES", "check"]


def on(a, dev, grad=False):
    dt = rawdev.float64 if dev == "cpu" else rawdev.float32
    t = rawdev.tensor(np.asarray(a), dtype=dt, device=dev)
    return t.requires_grad_(True) if grad else t


def num(t):
    return t.detach().cpu().numpy().astype(np.float64)


TOL = {"cpu": 1e-7, "cuda": 2e-4}


DEVICES = ("cpu", "cuda")


def check(dev, fn_ours, fn_ref, *arrays, grad_of=(0,)):
    """fn_ours(tensors) against fn_ref(arrays) in value, and d/d arrays[i] of sum(out · G) for i in grad_of."""
    ts = [on(a, dev, grad=i in grad_of) for i, a in enumerate(arrays)]
    y = fn_ours(*ts)
    ref = fn_ref(*arrays)
    np.testing.assert_allclose(num(y), ref, rtol=TOL[dev], atol=TOL[dev])
    g = rng().standard_normal(ref.shape)
    (y * on(g, dev)).sum().backward()
    for i in grad_of:
        def f(a, i=i):
            args = list(arrays)
            args[i] = a
            return fn_ref(*args)
        np.testing.assert_allclose(num(ts[i].grad), numeric_grad(f, arrays[i], g), rtol=TOL[dev] * 10,
                                   atol=TOL[dev] * 10)
