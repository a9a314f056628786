"""Python wrappers of kernels.cu: take rawdev tensors, launch, return tensors."""
from pathlib import Path

import rawdev

# compiled with NVRTC on first use, then cached on disk ($RAWDEV_CACHE_DIR, default ~/.cache/rawdev);
# -lineinfo keeps the CUDA source lines in the PTX for error reports
MODULE = rawdev.RawModule(code=Path(__file__).with_name("kernels.cu").read_text(), options=("-lineinfo",))


def axpy_relu(a, x, y):
    """max(a * x + y, 0) elementwise, for float32 cuda tensors of one shape."""
    if x.shape != y.shape:
        raise ValueError(f"x and y must have one shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    x, y = x.contiguous(), y.contiguous()   # the kernel indexes flat memory
    out = rawdev.empty_like(x)
    n = x.numel()
    if n:
        blocks = min((n + 255) // 256, 1024)
        MODULE.get_function("axpy_relu")((blocks,), (256,), (x, y, out, float(a), n))
    return out


def row_sums(m, threads=128):
    """The sum of each row of a 2-d float32 cuda tensor."""
    rows, cols = m.shape
    m = m.contiguous()
    out = rawdev.empty(rows, device=m.device)
    if rows:
        MODULE.get_function("row_sums")((rows,), (threads,), (m, out, rows, cols), shared_mem=threads * 4)
    return out
