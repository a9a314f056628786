"""Helpers for the per-family kernel tests (tests/test_kernels_<family>.py): device buffers from numpy,
NaN-poisoned outputs, launches by kernel name, float64 relative errors. No tests here."""
import numpy as np
from rawdev.runtime import kernels, memory


def relerr(out, ref):
    """||out - ref|| / ||ref|| in float64 (absolute norm when ref is all zeros)."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    den = np.linalg.norm(ref)
    return np.linalg.norm(out - ref) / (den if den > 0 else 1.0)


def elem_relerr(out, ref, floor=1e-6):
    """max_i |out - ref| / max(|ref|, floor * max|ref|)."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    scale = np.maximum(np.abs(ref), floor * max(np.abs(ref).max(initial=0.0), 1e-30))
    return float((np.abs(out - ref) / scale).max(initial=0.0))


class Gpu:
    """Buffers and launches on one device; keeps the buffers alive until the test ends."""

    def __init__(self, dev):
        self.dev, self.bufs = dev, []

    def put(self, host):
        host = np.ascontiguousarray(host)
        buf = memory.DeviceBuffer.alloc(self.dev, max(host.nbytes, 4), owner="test")
        if host.nbytes:
            memory.copy_htod(buf.ptr, host, host.nbytes)
        self.bufs.append(buf)
        return buf

    def poisoned(self, shape, dtype=np.float32):
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            poison = np.nan
        else:
            poison = -1 if dtype.kind == "i" else dtype.type(~0 & (256 ** dtype.itemsize - 1))
        host = np.full(shape, poison, dtype)
        return self.put(host)

    def get(self, buf, shape, dtype=np.float32):
        out = np.empty(shape, dtype)
        self.dev.synchronize()
        if out.nbytes:
            memory.copy_dtoh(out, buf.ptr, out.nbytes)
        return out

    def run(self, name, grid, block, args, shared_mem=0):
        args = [a.ptr if hasattr(a, "ptr") else a for a in args]
        kernels.get_kernel(self.dev, name).launch(grid, block, args, shared_mem=shared_mem)


def cdiv(a, b):
    return (a + b - 1) // b
