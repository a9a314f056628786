"""The cuda path of sorting rows of any length (sort_long.ptx): sort keys, chunk sorts in shared memory, merge
passes. Returns the sorting permutation; the values are gathered through it by the caller (rawdev/ops/scan_sort.py),
so their gradient is gather's."""
from .. import dtypes as _dt
from .cuda_cast import cast
from .cuda_launch import _ew, _kernel, _rdev, dense, empty

__all__ = ["sort_indices", "CHUNK"]

CHUNK = 2048          # the run each block sorts in shared memory (sort_long.cu)


def sort_indices(x, descending):
    """int64 [rows, n]: for contiguous x [rows, n], the stable order of each row (NaN greatest; descending puts
    NaN first), as positions within the row. float32 and int64 sort on their own keys; 16-bit floats through
    float32 and narrower integers through int64 (exact, so the order is the same)."""
    x = dense(x)
    if x.dtype in (_dt.float16, _dt.bfloat16):
        x = cast(x, _dt.float32)
    elif x.dtype is not _dt.float32 and x.dtype is not _dt.int64:
        x = cast(x, _dt.int64)
    rows, n = x.shape
    rdev = _rdev(x)
    wide = x.dtype is _dt.int64
    kdt, suffix = (_dt.int64, "u64") if wide else (_dt.int32, "u32")   # unsigned keys in same-width storage
    keys = empty((rows, n), kdt, x.device, "sort keys")
    idx = empty((rows, n), _dt.int64, x.device, "sort indices")
    total = rows * n
    if total == 0:
        return idx
    _ew(rdev, "sort_keys_i64" if wide else "sort_keys_f32", [keys.data_ptr(), x.data_ptr(), total,
                                                               int(bool(descending))], total, "sort")
    chunks = -(-n // CHUNK)
    _kernel(rdev, f"sort_chunks_{suffix}", "sort").launch(min(rows * chunks, 65535), 512,
                                                           [keys.data_ptr(), idx.data_ptr(), rows, n])
    w = CHUNK
    if w < n:
        k2 = empty((rows, n), kdt, x.device, "sort keys")
        i2 = empty((rows, n), _dt.int64, x.device, "sort indices")
        while w < n:
            _ew(rdev, f"merge_runs_{suffix}", [k2.data_ptr(), i2.data_ptr(), keys.data_ptr(), idx.data_ptr(), rows,
                                               n, w], total, "sort")
            keys, k2, idx, i2 = k2, keys, i2, idx
            w *= 2
    return idx
