"""Reference helpers the op tests share: fresh random generators and central-difference gradients."""
import numpy as np

# Every subprocess a test starts gets this timeout: a guard against a hang, far above the time the slowest
# of them needs on a loaded 2-core machine (a cold gpu_check --quick: a few minutes), never a speed check.
HANG_GUARD_S = 3600


def rng():
    """A generator seeded from the running test's seed (tests/conftest.py: a fresh base seed per run, printed in
    the header and on each failure; `pytest --rawdev-seed=N` or RAWDEV_TEST_SEED=N replays a run)."""
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


POOL_GRANULE = 2 << 20   # the largest rounding a driver pool applies to one block (its allocation granularity)


def pool_used_agrees(dev, nbytes, nblocks):
    """Whether the pool's USED_MEM_CURRENT agrees with `nbytes` held in `nblocks` blocks by rawdev's count:
    equal on the simulator; a GPU's pool counts its own rounding of each block, so there it is only bounded
    (at least nbytes, never more than each block rounded up to the pool's 2 MiB granularity)."""
    from rawdev.runtime import seam
    used = dev.pool_attribute("used")
    if seam.driver_name() == "sim":
        return used == nbytes
    return nbytes <= used <= nbytes + nblocks * POOL_GRANULE
