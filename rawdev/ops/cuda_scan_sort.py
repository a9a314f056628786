"""The cuda path of the row scans and row sorts (scan_sort.ptx): cumsum / cumprod along the last dim of a
contiguous float32 tensor, one 256-thread block per row (rows longer than 256 are walked in chunks with a carry);
sort_rows sorts rows of up to SORT_MAX elements in shared memory (longer rows: cuda_sortlong.py)."""
from .. import dtypes as _dt
from .cuda_launch import _f32, _kernel, _rdev, empty

__all__ = ["scan_rows", "sort_rows", "SORT_MAX"]


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


SORT_MAX = 2048   # the longest row sort_rows_f32 sorts in shared memory


def sort_rows(x, k, descending):
    """The first k of each row of x (contiguous float32 [..., n], n <= SORT_MAX) in stable sorted order:
    (values, int64 indices within the row, int64 flat indices r * n + index)."""
    _f32("sort", x)
    n = x.shape[-1]
    rows = x.numel() // n if n else 0
    shape = tuple(x.shape[:-1]) + (k,)
    vals = empty(shape, x.dtype, x.device, "sort values")
    idx = empty(shape, _dt.int64, x.device, "sort indices")
    flat = empty(shape, _dt.int64, x.device, "sort flat indices")
    if rows and k:
        _kernel(_rdev(x), "sort_rows_f32", "sort").launch(
            min(rows, 65535), 512, [vals.data_ptr(), idx.data_ptr(), flat.data_ptr(), x.data_ptr(), rows, n, k,
                                    int(bool(descending))])
    return vals, idx, flat
