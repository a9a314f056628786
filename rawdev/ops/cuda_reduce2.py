"""The cuda path of the row scans (scan_sort.ptx): cumsum / cumprod along the last dim of a contiguous
float32 tensor, one 256-thread block per row (rows longer than 256 are walked in chunks with a carry)."""
from .cuda import _f32, _kernel, _rdev, empty

__all__ = ["scan_rows"]


def scan_rows(x, kind, reverse=False):
    """Inclusive scan ("sum" or "prod") of x along its last dim (reverse: from the end); x contiguous float32."""
    _f32("cumsum" if kind == "sum" else "cumprod", x)
    y = empty(x.shape, x.dtype, x.device, f"cum{kind} output")
    n = x.shape[-1] if x.ndim else 1
    rows = x.numel() // n if n else 0
    if rows:
        _kernel(_rdev(x), f"scan_{kind}_f32", f"cum{kind}").launch(
            min(rows, 65535), 256, [y.data_ptr(), x.data_ptr(), rows, n, int(bool(reverse))])
    return y
