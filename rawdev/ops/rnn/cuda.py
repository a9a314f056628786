"""The cuda path of the recurrent cells: one launch of ptx/rnn.ptx each (float32), with cpu.py's signatures."""
from ... import dtypes as _dt
from ..cuda_launch import _ew, _f32, _rdev, dense, empty

__all__ = ["lstm_cell_fwd", "lstm_cell_bwd", "gru_cell_fwd", "gru_cell_bwd", "rnn_cell_fwd", "rnn_cell_bwd"]


def _ptr(t):
    return 0 if t is None else t.data_ptr()


def lstm_cell_fwd(gx, gh, c):
    _f32("lstm_cell", gx, gh, c)
    gx, gh, c = dense(gx), dense(gh), dense(c)
    B, H = c.shape
    h1 = empty((B, H), _dt.float32, c.device, "lstm h")
    c1 = empty((B, H), _dt.float32, c.device, "lstm c")
    act = empty((B, 4 * H), _dt.float32, c.device, "lstm gates")
    _ew(_rdev(c), "lstm_cell_fwd", [h1.data_ptr(), c1.data_ptr(), act.data_ptr(), gx.data_ptr(), gh.data_ptr(),
                                    c.data_ptr(), B, H], B * H, "lstm_cell")
    return h1, c1, act


def lstm_cell_bwd(dh1, dc1, act, c, c1):
    _f32("lstm_cell backward", dh1, dc1)
    dh1, dc1 = dense(dh1), dense(dc1)
    B, H = c.shape
    dG = empty((B, 4 * H), _dt.float32, c.device, "lstm gates grad")
    dc = empty((B, H), _dt.float32, c.device, "lstm c grad")
    _ew(_rdev(c), "lstm_cell_bwd", [dG.data_ptr(), dc.data_ptr(), _ptr(dh1), _ptr(dc1), act.data_ptr(),
                                    dense(c).data_ptr(), c1.data_ptr(), B, H], B * H, "lstm_cell backward")
    return dG, dc


def gru_cell_fwd(gx, gh, h):
    _f32("gru_cell", gx, gh, h)
    gx, gh, h = dense(gx), dense(gh), dense(h)
    B, H = h.shape
    h1 = empty((B, H), _dt.float32, h.device, "gru h")
    act = empty((B, 4 * H), _dt.float32, h.device, "gru gates")
    _ew(_rdev(h), "gru_cell_fwd", [h1.data_ptr(), act.data_ptr(), gx.data_ptr(), gh.data_ptr(), h.data_ptr(), B, H],
        B * H, "gru_cell")
    return h1, act


def gru_cell_bwd(dh1, act, h):
    _f32("gru_cell backward", dh1)
    dh1, h = dense(dh1), dense(h)
    B, H = h.shape
    dgx = empty((B, 3 * H), _dt.float32, h.device, "gru gates grad")
    dgh = empty((B, 3 * H), _dt.float32, h.device, "gru hidden gates grad")
    dh = empty((B, H), _dt.float32, h.device, "gru h grad")
    _ew(_rdev(h), "gru_cell_bwd", [dgx.data_ptr(), dgh.data_ptr(), dh.data_ptr(), _ptr(dh1), act.data_ptr(),
                                   h.data_ptr(), B, H], B * H, "gru_cell backward")
    return dgx, dgh, dh


def rnn_cell_fwd(gx, gh, relu):
    _f32("rnn_cell", gx, gh)
    gx, gh = dense(gx), dense(gh)
    h1 = empty(gx.shape, _dt.float32, gx.device, "rnn h")
    n = gx.numel()
    _ew(_rdev(gx), "rnn_cell_fwd", [h1.data_ptr(), gx.data_ptr(), gh.data_ptr(), n, int(relu)], n, "rnn_cell")
    return h1


def rnn_cell_bwd(dh1, h1, relu):
    _f32("rnn_cell backward", dh1)
    dh1 = dense(dh1)
    d = empty(h1.shape, _dt.float32, h1.device, "rnn pre-activation grad")
    n = h1.numel()
    _ew(_rdev(h1), "rnn_cell_bwd", [d.data_ptr(), dh1.data_ptr(), h1.data_ptr(), n, int(relu)], n,
        "rnn_cell backward")
    return d
