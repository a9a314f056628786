"""nn.RNN, nn.LSTM, nn.GRU and their cells with PyTorch's parameter names (weight_ih_l0, weight_hh_l0, bias_ih_l0,
bias_hh_l0, the _reverse suffix; cells: weight_ih, weight_hh, bias_ih, bias_hh), gate order (LSTM i, f, g, o;
GRU r, z, n) and init U(-1/sqrt(H), 1/sqrt(H)), so PyTorch state_dicts load."""
import math
import numbers
import warnings

from ...ops.autocast_mode import hook as _autocast_hook
from ...ops.join import cat, stack
from ...ops.rnn import functions as _rnn
from ...ops.shape import squeeze, unsqueeze
from ...tensor.factory import empty, zeros
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _unpack_sorted

# a layer's recurrence is one op under autocast, as PyTorch's fused RNN ops are (_cudnn_rnn on cuda,
# mkldnn_rnn_layer on the cpu): its input, state and weights cast to the region's dtype
_run_layer = _autocast_hook("rnn_layer", _rnn.run_layer)

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          UserWarning, stacklevel=2)
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size:
            raise NotImplementedError("LSTM(proj_size > 0) (projections) is not supported in rawdev")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        gate_size = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else hidden_size * dirs
                sfx = "_reverse" if d == 1 else ""
                names = [f"weight_ih_l{layer}{sfx}", f"weight_hh_l{layer}{sfx}"]
                shapes = [(gate_size, in_size), (gate_size, hidden_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{sfx}", f"bias_hh_l{layer}{sfx}"]
                    shapes += [(gate_size,), (gate_size,)]
                for n, s in zip(names, shapes):
                    setattr(self, n, Parameter(empty(s, dtype=dtype)))
                self._flat_weights_names += names
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self):
        """PyTorch compacts cuDNN weights here; rawdev keeps each parameter as it is (nothing to do)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = 4 if self.bias else 2
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def _layer_params(self, layer, d):
        sfx = "_reverse" if d == 1 else ""
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        return tuple(getattr(self, f"{n}_l{layer}{sfx}", None) for n in names)

    def _check_input(self, input):  # noqa: A002
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    def _check_hidden(self, hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def _forward_packed(self, packed, hx):
        """A PackedSequence through the layers: unpacked to [T, B, *] in its sorted order, each step advancing
        only the batch_sizes[t] sequences still running; the output packed the same way, h_n (and c_n) in the
        caller's batch order."""
        lstm = self.mode == "LSTM"
        sizes = [int(v) for v in packed.batch_sizes.tolist()]
        x, _ = _unpack_sorted(packed, 0.0, len(sizes))
        self._check_input(x)
        B = sizes[0]
        dirs = 2 if self.bidirectional else 1
        shape = (self.num_layers * dirs, B, self.hidden_size)
        order = packed.sorted_indices
        if hx is None:
            h0 = zeros(shape, dtype=x.dtype, device=x.device)
            c0 = zeros(shape, dtype=x.dtype, device=x.device) if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
            self._check_hidden(h0, shape)
            if lstm:
                self._check_hidden(c0, shape, "Expected hidden[1] size {}, got {}")
            if order is not None:                       # the caller's order -> the packed (sorted) order
                h0 = h0.index_select(1, order)
                c0 = c0.index_select(1, order) if lstm else None
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                w_ih, w_hh, b_ih, b_hh = self._layer_params(layer, d)
                o, h, c = _run_layer(self.mode, x, h0[k], c0[k] if lstm else None, w_ih, w_hh, b_ih, b_hh,
                                         reverse=d == 1, batch_sizes=sizes)
                outs.append(o)
                hn.append(h)
                cn.append(c)
            x = outs[0] if dirs == 1 else cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        data = cat([x[t].narrow(0, 0, bs) for t, bs in enumerate(sizes)], 0)
        out = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        h_n = stack(hn, 0)
        c_n = stack(cn, 0) if lstm else None
        if packed.unsorted_indices is not None:
            h_n = h_n.index_select(1, packed.unsorted_indices)
            c_n = c_n.index_select(1, packed.unsorted_indices) if lstm else None
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def forward(self, input, hx=None):  # noqa: A002
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead")
        batched = input.ndim == 3
        lstm = self.mode == "LSTM"
        if not batched:
            input = unsqueeze(input, 1)  # noqa: A001
            if hx is not None:
                hx = tuple(unsqueeze(h, 1) for h in hx) if lstm else unsqueeze(hx, 1)
        elif self.batch_first:
            input = input.transpose(0, 1)  # noqa: A001
        self._check_input(input)
        B = input.shape[1]
        dirs = 2 if self.bidirectional else 1
        shape = (self.num_layers * dirs, B, self.hidden_size)
        if hx is None:
            h0 = zeros(shape, dtype=input.dtype, device=input.device)
            c0 = zeros(shape, dtype=input.dtype, device=input.device) if lstm else None
        elif lstm:
            if not isinstance(hx, tuple) or len(hx) != 2:
                raise RuntimeError("LSTM: Expected hx to be a tuple (h_0, c_0)")
            h0, c0 = hx
            if batched and (h0.ndim != 3 or c0.ndim != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({h0.ndim}-D, {c0.ndim}-D) tensors")
            self._check_hidden(h0, shape)
            self._check_hidden(c0, shape, "Expected hidden[1] size {}, got {}")
        else:
            h0, c0 = hx, None
            if batched and h0.ndim != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {h0.ndim}-D tensor")
            self._check_hidden(h0, shape)
        x = input
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                w_ih, w_hh, b_ih, b_hh = self._layer_params(layer, d)
                o, h, c = _run_layer(self.mode, x, h0[k], c0[k] if lstm else None, w_ih, w_hh, b_ih, b_hh,
                                         reverse=d == 1)
                outs.append(o)
                hn.append(h)
                cn.append(c)
            x = outs[0] if dirs == 1 else cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = stack(hn, 0)
        c_n = stack(cn, 0) if lstm else None
        out = x
        if not batched:
            out, h_n = squeeze(out, 1), squeeze(h_n, 1)
            c_n = squeeze(c_n, 1) if lstm else None
        elif self.batch_first:
            out = out.transpose(0, 1)
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh or relu(x_t·W_ihᵀ + b_ih + h_{t-1}·W_hhᵀ + b_hh)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def extra_repr(self):
        s = super().extra_repr()
        return s + (f", nonlinearity={self.nonlinearity}" if self.nonlinearity != "tanh" else "")


class LSTM(RNNBase):
    """LSTM (gates i, f, g, o): returns output, (h_n, c_n)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU (gates r, z, n; n = tanh(W_in x + b_in + r*(W_hn h + b_hn)))."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prep(self, input, hx, name):  # noqa: A002
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if hx is not None and not isinstance(hx, tuple) and hx.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        return input.ndim == 2

    def _zeros(self, input):  # noqa: A002
        return zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002
        batched = self._prep(input, hx, "RNNCell")
        if not batched:
            input = unsqueeze(input, 0)  # noqa: A001
        hx = self._zeros(input) if hx is None else (hx if batched else unsqueeze(hx, 0))
        if self.nonlinearity == "tanh":
            h = _rnn.rnn_tanh_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            h = _rnn.rnn_relu_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return h if batched else squeeze(h, 0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        batched = self._prep(input, hx, "LSTMCell")
        if not batched:
            input = unsqueeze(input, 0)  # noqa: A001
        if hx is None:
            hx = (self._zeros(input), self._zeros(input))
        elif not batched:
            hx = (unsqueeze(hx[0], 0), unsqueeze(hx[1], 0))
        h, c = _rnn.lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (squeeze(h, 0), squeeze(c, 0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        batched = self._prep(input, hx, "GRUCell")
        if not batched:
            input = unsqueeze(input, 0)  # noqa: A001
        hx = self._zeros(input) if hx is None else (hx if batched else unsqueeze(hx, 0))
        h = _rnn.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h if batched else squeeze(h, 0)
