"""The cuda path of interpolate (resample.ptx): one thread per output element; the backward adds into a zeroed
gradient with atomics (scatter-add on the device)."""
from ... import dtypes as _dt
from ..cuda_launch import _ew, _f32, _rdev, empty, full

__all__ = ["interp_fwd", "interp_bwd"]

_INTERP = {"nearest": "interp_nearest", "bilinear": "interp_bilinear"}


def interp_fwd(x3, OH, OW, sh, sw, mode, flag):
    """x3: contiguous [P, H, W] float32 -> [P, OH, OW]; flag: nearest-exact (nearest) or align_corners."""
    _f32("interpolate", x3)
    P, H, W = x3.shape
    y = empty((P, OH, OW), _dt.float32, x3.device, "interpolate output")
    _ew(_rdev(x3), _INTERP[mode] + "_fwd_f32", [y.data_ptr(), x3.data_ptr(), P, H, W, OH, OW, float(sh), float(sw),
                                                int(flag)], y.numel(), "interpolate")
    return y


def interp_bwd(g3, H, W, sh, sw, mode, flag):
    P, OH, OW = g3.shape
    dx = full((P, H, W), 0, _dt.float32, g3.device, "interpolate input grad")
    _ew(_rdev(g3), _INTERP[mode] + "_bwd_f32", [dx.data_ptr(), g3.data_ptr(), P, H, W, OH, OW, float(sh), float(sw),
                                                int(flag)], g3.numel(), "interpolate backward")
    return dx
