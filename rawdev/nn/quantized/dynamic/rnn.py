"""Dynamic quantized LSTM (PyTorch's torch.ao.nn.quantized.dynamic.LSTM, printed DynamicQuantizedLSTM).

Each layer and direction keeps its gate weights quantized once (w_ih and w_hh each by its own weight observer:
qint8 per tensor symmetric by default) and its float biases. A layer runs as PyTorch's cpu kernel does: the
input-to-hidden product is one dynamic quantized linear over the whole sequence (the input quantized once, from
the min/max of all its time steps), the hidden-to-hidden product one per time step (the hidden state quantized
from its own min/max each step); the gates (i, f, g, o), cell and hidden state are computed in float32:

    gates = linear_dynamic(x_t, W_ih, b_ih) + linear_dynamic(h, W_hh, b_hh)
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g);   h' = sigmoid(o) * tanh(c')

float16 dynamic quantization keeps the weights rounded to float16 and multiplies in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .... import dtypes as _dt
from ....tensor.core import Tensor
from ....tensor.factory import zeros
from ...containers import ModuleList
from ...layers.rnn import RNNBase
from ...module import Module
from .linear import _linear_dynamic, quantize_weight

__all__ = ["LSTM"]


def _fp16_weight(w: Tensor) -> Tensor:
    v = np.asarray(w.detach().float().cpu()._values(), dtype=np.float32)
    return Tensor._make_cpu(np.ascontiguousarray(np.clip(v, -65504.0, 65504.0).astype(np.float16)
                                                 .astype(np.float32)), _dt.float32)


class _CellParams(Module):
    """One layer-direction's (w_ih, w_hh, b_ih, b_hh); state_dict key `param` holds the tuple."""

    def __init__(self, params: tuple) -> None:
        super().__init__()
        self.param = params

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "param"] = self.param

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, plan=None):
        if prefix + "param" in state_dict:
            self.param = tuple(state_dict.pop(prefix + "param"))
        else:
            missing_keys.append(prefix + "param")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs, plan)

    def __repr__(self):
        return "_CellParams()"


def _linear(x2: np.ndarray, w: Any, b: Any, dtype: Any) -> np.ndarray:
    if dtype is _dt.float16:
        out = x2 @ np.asarray(w._values(), dtype=np.float32).T
        return out + np.asarray(b._values(), dtype=np.float32) if b is not None else out
    return _linear_dynamic(x2, w, b)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return (np.float32(1) / (np.float32(1) + np.exp(-v))).astype(np.float32)


class LSTM(Module):
    """An LSTM with dynamically quantized gate weights (see the module text).

    Args:
        input_size: features of the input.
        hidden_size: features of the hidden state.
        num_layers: stacked layers.
        bias: whether the gates have (float) biases.
        batch_first: input and output as (batch, seq, feature).
        dropout: dropout on the outputs of all but the last layer (in training mode).
        bidirectional: run a reverse direction too.
        dtype: rawdev.qint8 (int8 weights) or rawdev.float16.

    Example:
        >>> qlstm = rawdev.quantization.quantize_dynamic(rawdev.nn.LSTM(8, 16), {rawdev.nn.LSTM})
        >>> out, (h, c) = qlstm(rawdev.randn(5, 3, 8))
    """

    _version = 2

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype: Any = _dt.qint8, **kwargs: Any) -> None:
        super().__init__()
        if dtype not in (_dt.qint8, _dt.float16):
            raise ValueError("Unsupported dtype for dynamic RNN quantization: " + str(dtype))
        if kwargs.get("proj_size"):
            raise NotImplementedError("LSTM(proj_size > 0) is not supported in rawdev")
        self.mode = "LSTM"
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.dtype = bidirectional, dtype
        dirs = 2 if bidirectional else 1
        cells = []
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * dirs
            for _ in range(dirs):
                w_ih, w_hh = zeros(4 * hidden_size, in_size), zeros(4 * hidden_size, hidden_size)
                if dtype is _dt.qint8:
                    from ....tensor.quantized import quantize_per_tensor
                    w_ih = quantize_per_tensor(w_ih, 1.0, 0, _dt.qint8)
                    w_hh = quantize_per_tensor(w_hh, 1.0, 0, _dt.qint8)
                b_ih = zeros(4 * hidden_size) if bias else None
                b_hh = zeros(4 * hidden_size) if bias else None
                cells.append(_CellParams((w_ih, w_hh, b_ih, b_hh)))
        self._all_weight_values = ModuleList(cells)

    def _get_name(self) -> str:
        return "DynamicQuantizedLSTM"

    def extra_repr(self) -> str:
        return RNNBase.extra_repr(self)  # type: ignore[arg-type]  # the float layer's line: sizes and the non-default options

    def __repr__(self):   # the packed weights are not shown, as PyTorch's
        return f"{self._get_name()}({self.extra_repr()})"

    def _names(self):
        dirs = 2 if self.bidirectional else 1
        for layer in range(self.num_layers):
            for d in range(dirs):
                yield layer * dirs + d, f"l{layer}" + ("_reverse" if d else "")

    def get_weight(self) -> dict[str, Tensor]:
        """{"weight_ih_l0": quantized weight, "weight_hh_l0": ..., ...} (float16: float32 tensors)."""
        out = {}
        for i, sfx in self._names():
            w_ih, w_hh, _, _ = self._all_weight_values[i].param
            out[f"weight_ih_{sfx}"], out[f"weight_hh_{sfx}"] = w_ih, w_hh
        return out

    def get_bias(self) -> dict[str, Tensor]:
        """{"bias_ih_l0": float bias, ...} (empty without biases)."""
        out = {}
        for i, sfx in self._names():
            _, _, b_ih, b_hh = self._all_weight_values[i].param
            if b_ih is not None:
                out[f"bias_ih_{sfx}"], out[f"bias_hh_{sfx}"] = b_ih, b_hh
        return out

    def forward(self, input: Any, hx: Any = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:  # noqa: A002
        """(output, (h_n, c_n)) as nn.LSTM's, from the quantized weights."""
        if not isinstance(input, Tensor):
            raise NotImplementedError("rawdev's dynamic quantized LSTM takes a padded tensor, not a PackedSequence")
        if input.device.type != "cpu":
            raise NotImplementedError("Could not run 'quantized::quantized_lstm' with arguments from the 'CUDA' "
                                      "backend. (rawdev's quantized kernels are cpu kernels, as PyTorch's.)")
        unbatched = input.dim() == 2
        x = np.asarray(input.detach().float()._values(), dtype=np.float32)
        if unbatched:
            x = x[:, None, :]
        elif self.batch_first:
            x = x.transpose(1, 0, 2)
        T, B = x.shape[0], x.shape[1]
        dirs, H = (2 if self.bidirectional else 1), self.hidden_size
        if hx is None:
            h0 = np.zeros((self.num_layers * dirs, B, H), np.float32)
            c0 = np.zeros_like(h0)
        else:
            h0, c0 = (np.asarray(t.detach().float().cpu()._values(), dtype=np.float32) for t in hx)
            if unbatched:
                h0, c0 = h0[:, None, :], c0[:, None, :]
            want = (self.num_layers * dirs, B, H)
            if h0.shape != want or c0.shape != want:
                raise RuntimeError(f"Expected hidden size {want}, got {list(h0.shape)} and {list(c0.shape)}")
        layer_in, hn, cn = x, [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                idx = layer * dirs + d
                w_ih, w_hh, b_ih, b_hh = self._all_weight_values[idx].param
                gx = _linear(layer_in.reshape(T * B, -1), w_ih, b_ih, self.dtype).reshape(T, B, 4 * H)
                h, c = h0[idx], c0[idx]
                out = np.empty((T, B, H), np.float32)
                for t in (range(T) if d == 0 else range(T - 1, -1, -1)):
                    g = gx[t] + _linear(h, w_hh, b_hh, self.dtype)
                    i, f, gg, o = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
                    c = (_sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)).astype(np.float32)
                    h = (_sigmoid(o) * np.tanh(c)).astype(np.float32)
                    out[t] = h
                outs.append(out)
                hn.append(h)
                cn.append(c)
            layer_in = np.concatenate(outs, axis=2) if dirs == 2 else outs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                from ... import functional as F
                dropped = F.dropout(Tensor._make_cpu(np.ascontiguousarray(layer_in), _dt.float32), self.dropout)
                layer_in = np.asarray(dropped._values(), dtype=np.float32)
        output, h_n, c_n = layer_in, np.stack(hn), np.stack(cn)
        if unbatched:
            output, h_n, c_n = output[:, 0], h_n[:, 0], c_n[:, 0]
        elif self.batch_first:
            output = output.transpose(1, 0, 2)

        def wrap(a):
            return Tensor._make_cpu(np.ascontiguousarray(a, dtype=np.float32), _dt.float32)
        return wrap(output), (wrap(h_n), wrap(c_n))

    @classmethod
    def from_float(cls, mod: Module, use_precomputed_fake_quant: bool = False) -> LSTM:
        """The dynamic quantized LSTM for a float nn.LSTM, each gate weight quantized by its own observer from
        mod.qconfig (default_dynamic_qconfig's when it has none).

        Args:
            mod: an nn.LSTM (with a qconfig attribute, as quantize_dynamic leaves it).
            use_precomputed_fake_quant: PyTorch's flag for QAT modules (unused here).

        Returns:
            The new module.

        Example:
            >>> lstm = rawdev.nn.LSTM(8, 16); lstm.qconfig = default_dynamic_qconfig
            >>> LSTM.from_float(lstm)
            DynamicQuantizedLSTM(8, 16)
        """
        from ...layers.rnn import LSTM as FloatLSTM
        if type(mod) is not FloatLSTM:
            raise AssertionError("nn.quantized.dynamic.RNNBase.from_float only works for nn.LSTM and nn.GRU")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer_method = mod.qconfig.weight
        else:
            from ....ao.quantization.qconfig import default_dynamic_qconfig
            weight_observer_method = default_dynamic_qconfig.weight
        dtype = weight_observer_method().dtype
        if dtype not in (_dt.qint8, _dt.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        q = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first, mod.dropout,
                mod.bidirectional, dtype=dtype)

        def pack(w):
            if dtype is _dt.float16:
                return _fp16_weight(w)
            obs = weight_observer_method()
            obs(w)
            return quantize_weight(w.detach().float(), obs)

        for i, sfx in q._names():
            w_ih, w_hh = getattr(mod, f"weight_ih_{sfx}"), getattr(mod, f"weight_hh_{sfx}")
            b_ih = getattr(mod, f"bias_ih_{sfx}").detach().float() if mod.bias else None
            b_hh = getattr(mod, f"bias_hh_{sfx}").detach().float() if mod.bias else None
            q._all_weight_values[i].param = (pack(w_ih), pack(w_hh), b_ih, b_hh)
        return q
