"""The cuda path of embedding_bag (embedding_bag.ptx): one thread per output element; the backward adds into a zeroed
gradient with atomics (scatter-add on the device)."""
from ... import dtypes as _dt
from ..cuda_launch import _ew, _f32, _rdev, empty, full

__all__ = ["embedding_bag_fwd", "embedding_bag_bwd"]


def _ptr(t):
    return t.data_ptr() if t is not None else 0


def embedding_bag_fwd(w, idx, bounds, psw, mode, pad):
    """(out [B, D], argmax [B, D] int64 | None, cnt [B] float32); bounds: a device int64 [B + 1] tensor."""
    _f32("embedding_bag", w, psw)
    V, D = w.shape
    B = bounds.numel() - 1
    out = empty((B, D), _dt.float32, w.device, "embedding_bag output")
    am = empty((B, D), _dt.int64, w.device, "embedding_bag argmax") if mode == 2 else None
    cnt = empty((B,), _dt.float32, w.device, "embedding_bag counts")
    if B and D:
        _ew(_rdev(w), "ebag_fwd_f32", [out.data_ptr(), _ptr(am), cnt.data_ptr(), w.data_ptr(), idx.data_ptr(),
                                       bounds.data_ptr(), _ptr(psw), B, D, V, int(mode), int(pad)], B * D,
            "embedding_bag")
    elif B:
        cnt = full((B,), 0, _dt.float32, w.device, "embedding_bag counts")
    return out, am, cnt


def embedding_bag_bwd(g, w, idx, bounds, bag_of, psw, argmax, cnt, mode, pad, need_w, need_psw):
    V, D = w.shape
    B = bounds.numel() - 1
    rdev = _rdev(g)
    gw = gpsw = None
    if need_w:
        gw = full((V, D), 0, _dt.float32, g.device, "embedding_bag weight grad")
        _ew(rdev, "ebag_bwd_f32", [gw.data_ptr(), g.data_ptr(), _ptr(argmax), cnt.data_ptr(), idx.data_ptr(),
                                   bounds.data_ptr(), _ptr(psw), B, D, int(mode), int(pad)], B * D,
            "embedding_bag backward")
    if need_psw:
        n = idx.numel()
        gpsw = empty((n,), _dt.float32, g.device, "embedding_bag per_sample_weights grad")
        _ew(rdev, "ebag_psw_bwd_f32", [gpsw.data_ptr(), g.data_ptr(), w.data_ptr(), idx.data_ptr(),
                                       bag_of.data_ptr(), n, D, int(pad)], n, "embedding_bag backward")
    return gw, gpsw
