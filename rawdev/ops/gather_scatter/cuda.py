"""The cuda path of gather / scatter / scatter_add / scatter_reduce (gather_scatter.ptx): the operand indexed along a
dim seen as [outer, size, inner], the index (and gathered output / scattered source) as [outer, nidx, inner];
an index entry outside [0, size) trips the kernels' device-side assert."""
from ..cuda_launch import _ew, _f32, _rdev, dense, empty

__all__ = ["gather_dim", "scatter_dim_", "linear_index", "first_out_of_range", "floor_divide_int"]

_REDUCE = {"prod": 0, "amax": 1, "amin": 2}


def gather_dim(x, outer, size, inner, idx, nidx, d=0):
    """out[o, j, i] = x[o, idx[o, j, i], i] (any dtype)."""
    out = empty((outer, nidx, inner), x.dtype, x.device, "gather output")
    n = outer * nidx * inner
    _ew(_rdev(x), f"gather_b{x.dtype.itemsize}", [out.data_ptr(), x.data_ptr(), idx.data_ptr(), outer, nidx, size,
                                                   inner], n, "gather")
    return out


def scatter_dim_(dst, outer, size, inner, idx, nidx, src, reduce=None, d=0):
    """In place into contiguous dst: dst[o, idx[o, j, i], i] = src[o, j, i] (reduce None, any dtype), += (sum),
    or combined by prod / amax / amin (float32, atomics)."""
    src = dense(src)
    n = outer * nidx * inner
    args = [dst.data_ptr(), src.data_ptr(), idx.data_ptr(), outer, nidx, size, inner]
    if reduce is None:
        _ew(_rdev(dst), f"scatter_b{dst.dtype.itemsize}", args, n, "scatter")
    elif reduce == "sum":
        _f32("scatter_add", dst, src)
        _ew(_rdev(dst), "scatter_add_f32", args, n, "scatter_add")
    else:
        _f32("scatter_reduce", dst, src)
        _ew(_rdev(dst), "scatter_reduce_f32", args + [_REDUCE[reduce]], n, "scatter_reduce")
    dst._bump_version()
    return dst


def linear_index(idx, sizes, dims=None):
    """idx [k, n] (int64) -> [n]: the row-major position of each column in a block of `sizes` (negative entries
    wrap; one out of range trips the kernel's device-side assert)."""
    import numpy as np

    from ...tensor.factory import tensor
    k, n = idx.shape
    out = empty((n,), idx.dtype, idx.device, "linear index")
    if n:
        sz = tensor(np.asarray(sizes, np.int64), device=idx.device)
        _ew(_rdev(idx), "linear_index", [out.data_ptr(), idx.data_ptr(), sz.data_ptr(), k, n], n, "index")
    return out


def first_out_of_range(idx, size):
    """None: on the device an entry out of range trips the kernel's device-side assert (reading the index back to
    check it on the host would cost a sync per op)."""
    return None


def floor_divide_int(a, b):
    raise NotImplementedError("scatter_reduce(reduce='mean') of integer tensors on cuda: rawdev's scatter kernels "
                              "add float32 (use a float tensor)")
