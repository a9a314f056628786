"""Recurrent cells (PyTorch's torch.lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell) and the layer loop that
nn.RNN / nn.LSTM / nn.GRU run.

The input-to-hidden products of all time steps are one GEMM (linear over [L*B, in]); each step then runs one GEMM
for the hidden-to-hidden product and one fused cell (LSTM, GRU, Elman: an autograd Function whose forward and backward
are the backend's, cpu.py and cuda.py beside this file: numpy, or one kernel of ptx/rnn.ptx each). Backward through
time is the autograd engine walking those nodes. The per-step slices of the input GEMM come from one `_Steps` node
whose backward stacks the step gradients (one copy, not one full-size zero tensor per step).
"""
from ...autograd.function import Function
from ..dispatch import backend_of, check_same_device
from ..linalg import linear
from ..registry import declare
from ..shape import reshape
from ..slice_views import select

__all__ = ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]


class _LSTMCell(Function):
    node_name = "ThnnFusedLstmCellBackward0"

    @staticmethod
    def forward(ctx, gx, gh, c):
        h1, c1, act = backend_of(gx).lstm_cell_fwd(gx, gh, c)
        ctx.save_for_backward(act, c, c1)
        return h1, c1

    @staticmethod
    def backward(ctx, dh1, dc1):
        act, c, c1 = ctx.saved_tensors
        dG, dc = backend_of(act).lstm_cell_bwd(dh1, dc1, act, c, c1)
        return dG, dG, dc


class _GRUCell(Function):
    node_name = "ThnnFusedGruCellBackward0"

    @staticmethod
    def forward(ctx, gx, gh, h):
        h1, act = backend_of(gx).gru_cell_fwd(gx, gh, h)
        ctx.save_for_backward(act, h)
        return h1

    @staticmethod
    def backward(ctx, dh1):
        act, h = ctx.saved_tensors
        return backend_of(act).gru_cell_bwd(dh1, act, h)


class _Steps(Function):
    """x [L, ...] -> its L slices (views); backward stacks the L step gradients into one tensor."""
    node_name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, x):
        return tuple(select(x, 0, t) for t in range(x.shape[0]))

    @staticmethod
    def backward(ctx, *grads):
        from ..join import stack
        return stack(list(grads), 0)


def steps(x):
    out = _Steps.apply(x)
    return out if isinstance(out, tuple) else (out,)


# ------------------------------------------------------------------ cells (PyTorch's torch.*_cell)
def _cell_inputs(name, input, hx, w_ih, w_hh):  # noqa: A002
    check_same_device(name, input, hx, w_ih, w_hh)
    if input.ndim != 2:
        raise RuntimeError(f"{name}: Expected input to be 2D, got {input.ndim}D instead")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One LSTM step: (h1, c1) from input [B, in], hx = (h [B, H], c [B, H]); gates i, f, g, o."""
    h, c = hx
    _cell_inputs("lstm_cell", input, h, w_ih, w_hh)
    return _lstm_step(linear(input, w_ih, b_ih), h, c, w_hh, b_hh)


def _lstm_step(gx, h, c, w_hh, b_hh):
    return _LSTMCell.apply(gx, linear(h, w_hh, b_hh), c)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One GRU step: h1 from input [B, in] and hx [B, H]; gates r, z, n with n = tanh(W_in x + b_in + r*(W_hn h +
    b_hn))."""
    _cell_inputs("gru_cell", input, hx, w_ih, w_hh)
    return _GRUCell.apply(linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh), hx)


def _rnn_cell(act, input, hx, w_ih, w_hh, b_ih, b_hh):  # noqa: A002
    return _rnn_step(act, linear(input, w_ih, b_ih), hx, w_hh, b_hh)


class _RNNCell(Function):
    node_name = "RnnCellBackward0"

    @staticmethod
    def forward(ctx, gx, gh, relu):
        ctx.relu = relu
        h1 = backend_of(gx).rnn_cell_fwd(gx, gh, relu)
        ctx.save_for_backward(h1)
        return h1

    @staticmethod
    def backward(ctx, dh1):
        h1, = ctx.saved_tensors
        dp = backend_of(h1).rnn_cell_bwd(dh1, h1, ctx.relu)
        return dp, dp, None


def _rnn_step(act, gx, h, w_hh, b_hh):
    return _RNNCell.apply(gx, linear(h, w_hh, b_hh), act == "relu")


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """h1 = tanh(x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh)."""
    _cell_inputs("rnn_tanh_cell", input, hx, w_ih, w_hh)
    return _rnn_cell("tanh", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """h1 = relu(x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh)."""
    _cell_inputs("rnn_relu_cell", input, hx, w_ih, w_hh)
    return _rnn_cell("relu", input, hx, w_ih, w_hh, b_ih, b_hh)


# ------------------------------------------------------------------ the layer loop
def _keep_running(new, old, bs):
    """The first bs rows from new (the sequences still running), the rest from old (finished or not started)."""
    from ..join import cat
    return cat([new.narrow(0, 0, bs), old.narrow(0, bs, old.shape[0] - bs)], 0)


def run_layer(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, reverse, batch_sizes=None):
    """One direction of one layer over x [L, B, in] from state (h, c [B, H]; c only for LSTM) ->
    (outputs [L, B, H], h_n, c_n). mode: 'LSTM', 'GRU', 'RNN_TANH', 'RNN_RELU'.
    batch_sizes (a packed batch, longest sequence first): at step t only the first batch_sizes[t] rows advance,
    the others keep their state — so h_n is each sequence's state after its own last step, and in reverse each
    sequence starts from h at its own last step."""
    L, B = x.shape[0], x.shape[1]
    gx_all = linear(reshape(x, (L * B, x.shape[2])), w_ih, b_ih)    # every step's input product: one GEMM
    gxs = steps(reshape(gx_all, (L, B, gx_all.shape[1])))
    outs = [None] * L
    for t in (range(L - 1, -1, -1) if reverse else range(L)):
        h_prev, c_prev = h, c
        if mode == "LSTM":
            h, c = _lstm_step(gxs[t], h, c, w_hh, b_hh)
        elif mode == "GRU":
            h = _GRUCell.apply(gxs[t], linear(h, w_hh, b_hh), h)
        else:
            h = _rnn_step("tanh" if mode == "RNN_TANH" else "relu", gxs[t], h, w_hh, b_hh)
        if batch_sizes is not None and batch_sizes[t] < B:
            h = _keep_running(h, h_prev, batch_sizes[t])
            if c is not None:
                c = _keep_running(c, c_prev, batch_sizes[t])
        outs[t] = h
    from ..join import stack
    return stack(outs, 0), h, c


declare("lstm_cell", lstm_cell, family="rnn", method=False)
declare("gru_cell", gru_cell, family="rnn", method=False)
declare("rnn_tanh_cell", rnn_tanh_cell, family="rnn", method=False)
declare("rnn_relu_cell", rnn_relu_cell, family="rnn", method=False)
