"""Reference helpers the op tests share: fresh random generators and central-difference gradients."""
import numpy as np


def rng():
    """A generator with a fresh seed: every run draws new inputs."""
    return np.random.default_rng()


def numeric_grad(f, x, g, h=1e-6):
    """d/dx sum(f(x) · g) by central differences (float64)."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        out[i] = ((f(xp) - f(xm)) * g).sum() / (2 * h)
    return out
