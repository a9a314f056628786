"""Dynamic quantized Linear (PyTorch's torch.ao.nn.quantized.dynamic.Linear, printed DynamicQuantizedLinear).

The weight is quantized once (qint8 by its observer: per tensor symmetric by default, or per channel); each
forward quantizes the input to quint8 from its own min/max (fbgemm's ChooseQuantizationParams: the range
widened to hold 0, 7-bit with reduce_range as fbgemm/x86 do, 8-bit on qnnpack), multiplies the integers, and
scales the integer sums by input_scale * weight_scale before adding the float bias:

    y = (sum_k (qx - zx) * (qw - zw)) * sx * sw + b

The integer products are summed exactly: in float64, whose 53-bit mantissa holds every sum of products of 8-bit
numbers (|p| < 2**15) over fewer than 2**38 terms, which numpy multiplies with BLAS (its int32/int64 matmul
has no BLAS and is tens of times slower) — the same integers an int32 accumulator holds, without its overflow.
float16 dynamic quantization stores the weight rounded to float16 (saturating) and computes in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .... import dtypes as _dt
from ....tensor.core import Tensor
from ....tensor.factory import zeros
from ....tensor.quantized import QuantizedTensor, quantize_per_channel, quantize_per_tensor
from ... import functional as F
from ...module import Module

__all__ = ["Linear", "LinearPackedParams", "choose_input_qparams", "quantize_weight"]

_SMALL_SCALE = float(np.float32(6.1e-5))   # fbgemm's SMALL_SCALE_THRESHOLD


def choose_input_qparams(x_min: float, x_max: float, reduce_range: bool) -> tuple[float, int]:
    """fbgemm's ChooseQuantizationParams for a quint8 activation: (scale, zero_point) covering [min, max] and 0.

    Args:
        x_min: the input's minimum.
        x_max: the input's maximum.
        reduce_range: quantize to 0..127 (fbgemm/x86) rather than 0..255.

    Returns:
        (scale as a float32 value, zero_point).

    Example:
        >>> choose_input_qparams(-1.0, 3.0, False)
        (0.01568627543747425, 64)
    """
    qmin, qmax = 0, 255
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    mn = min(float(np.float32(x_min)), 0.0)
    mx = max(float(np.float32(x_max)), 0.0)
    scale = (mx - mn) / (qmax - qmin)
    if float(np.float32(scale)) == 0.0 or np.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:
        org = scale
        scale = _SMALL_SCALE
        if mn == 0.0:
            mx = _SMALL_SCALE * (qmax - qmin)
        elif mx == 0.0:
            mn = -_SMALL_SCALE * (qmax - qmin)
        else:
            amp = float(np.float32(_SMALL_SCALE / org))
            mn, mx = float(np.float32(mn * amp)), float(np.float32(mx * amp))
    zp_from_min = qmin - mn / scale
    zp_from_max = qmax - mx / scale
    err_min = abs(qmin) - abs(mn / scale)
    err_max = abs(qmax) - abs(mx / scale)
    initial = zp_from_min if err_min < err_max else zp_from_max
    if initial < qmin:
        zp = qmin
    elif initial > qmax:
        zp = qmax
    else:
        zp = int(np.rint(initial))
    return float(np.float32(scale)), zp


def quantize_weight(float_wt: Tensor, observer: Any) -> QuantizedTensor:
    """A float weight quantized with the parameters its (already run) observer computes (PyTorch's
    _quantize_weight).

    Args:
        float_wt: the float weight.
        observer: a MinMaxObserver / PerChannelMinMaxObserver that has seen it.

    Returns:
        The qint8 QuantizedTensor (per tensor or per channel along the observer's ch_axis).

    Example:
        >>> obs = default_weight_observer(); obs(w); qw = quantize_weight(w, obs)
    """
    scale, zp = observer.calculate_qparams()
    if observer.qscheme in (_dt.per_tensor_affine, _dt.per_tensor_symmetric):
        return quantize_per_tensor(float_wt, float(scale.item()), int(zp.item()), _dt.qint8)
    if observer.qscheme in (_dt.per_channel_affine, _dt.per_channel_symmetric):
        return quantize_per_channel(float_wt, scale.double(), zp.long(), observer.ch_axis, _dt.qint8)
    raise ValueError(f"Unsupported qscheme: {observer.qscheme}")


class LinearPackedParams(Module):
    """The quantized weight and float bias of a quantized Linear (PyTorch's LinearPackedParams): state_dict keys
    `dtype` and `_packed_params` (the (weight, bias) pair)."""

    _version = 3

    def __init__(self, dtype: Any = _dt.qint8) -> None:
        super().__init__()
        self.dtype = dtype
        self._weight_bias_pair: tuple[Tensor, Tensor | None] = (zeros(0), None)

    def set_weight_bias(self, weight: Tensor, bias: Tensor | None) -> None:
        if self.dtype is _dt.qint8:
            if not isinstance(weight, QuantizedTensor) or weight.dtype is not _dt.qint8:
                raise RuntimeError("quantized::linear_prepack: the weight must be a qint8 quantized tensor")
        elif self.dtype is _dt.float16:
            w = np.asarray(weight.detach().float().cpu()._values(), dtype=np.float32)
            w16 = np.clip(w, -65504.0, 65504.0).astype(np.float16).astype(np.float32)   # fbgemm saturates
            weight = Tensor._make_cpu(np.ascontiguousarray(w16), _dt.float32)
        else:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        if bias is not None:
            bias = bias.detach().float().cpu()
        self._weight_bias_pair = (weight, bias)

    def _weight_bias(self) -> tuple[Tensor, Tensor | None]:
        return self._weight_bias_pair

    def forward(self, x: Tensor) -> Tensor:
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, plan=None):
        for key in ("dtype", "_packed_params"):
            if prefix + key not in state_dict:
                missing_keys.append(prefix + key)
        if prefix + "dtype" in state_dict and prefix + "_packed_params" in state_dict:
            self.dtype = state_dict.pop(prefix + "dtype")
            w, b = state_dict.pop(prefix + "_packed_params")
            self.set_weight_bias(w, b)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs, plan)

    def __repr__(self):
        return repr(self._weight_bias())


class Linear(Module):
    """A Linear with a quantized weight whose input is quantized per call (see the module text).

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias_: whether it has a (float) bias.
        dtype: rawdev.qint8 (int8 weight, dynamic quint8 input) or rawdev.float16 (float16 weight).

    Example:
        >>> qlinear = rawdev.ao.nn.quantized.dynamic.Linear(20, 30)
        >>> qlinear(rawdev.randn(128, 20)).shape
        rawdev.Size([128, 30])
    """

    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype: Any = _dt.qint8) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bias = zeros(out_features) if bias_ else None
        if dtype is _dt.qint8:
            qweight = quantize_per_tensor(zeros(out_features, in_features), 1.0, 0, _dt.qint8)
        elif dtype is _dt.float16:
            qweight = zeros(out_features, in_features)
        else:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(qweight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        s = f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._packed_params.dtype}"
        if self._packed_params.dtype is _dt.qint8:
            s += f", qscheme={self.weight().qscheme()}"
        return s

    def __repr__(self):   # the packed parameters are not shown, as PyTorch's
        return f"{self._get_name()}({self.extra_repr()})"

    def weight(self) -> Tensor:
        """The quantized weight (a float32 tensor for float16 dynamic quantization)."""
        return self._packed_params._weight_bias()[0]

    def bias(self) -> Tensor | None:
        """The float bias."""
        return self._packed_params._weight_bias()[1]

    def set_weight_bias(self, w: Tensor, b: Tensor | None) -> None:
        self._packed_params.set_weight_bias(w, b)

    def forward(self, x: Tensor) -> Tensor:
        """y = x·Wᵀ + b with W quantized and x quantized per call (float16: W rounded to float16)."""
        w, b = self._packed_params._weight_bias()
        if x.device.type != "cpu":
            raise NotImplementedError("Could not run 'quantized::linear_dynamic' with arguments from the 'CUDA' "
                                      "backend. (rawdev's quantized kernels are cpu kernels, as PyTorch's.)")
        if self._packed_params.dtype is _dt.float16:
            return F.linear(x.float(), w, b).to(x.dtype)
        if x.shape[-1] != self.in_features:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({x.numel() // max(x.shape[-1], 1)}x"
                               f"{x.shape[-1]} and {self.in_features}x{self.out_features})")
        out = _linear_dynamic(np.asarray(x.detach().float()._values(), dtype=np.float32), w, b)
        return Tensor._make_cpu(np.ascontiguousarray(out.reshape(tuple(x.shape[:-1]) + (self.out_features,))),
                                _dt.float32).to(x.dtype)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = Tensor._make_cpu(np.asarray(self.scale, np.float32), _dt.float32)
        destination[prefix + "zero_point"] = Tensor._make_cpu(np.asarray(self.zero_point, np.int64), _dt.int64)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, plan=None):
        if prefix + "scale" in state_dict:
            self.scale = float(state_dict.pop(prefix + "scale"))
        if prefix + "zero_point" in state_dict:
            self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs, plan)

    @classmethod
    def from_float(cls, mod: Module, use_precomputed_fake_quant: bool = False) -> Linear:
        """The dynamic quantized Linear for a float nn.Linear, its weight quantized by mod.qconfig's weight
        observer (default_dynamic_qconfig's when it has none).

        Args:
            mod: an nn.Linear (with a qconfig attribute, as quantize_dynamic leaves it).
            use_precomputed_fake_quant: PyTorch's flag for QAT modules (unused here).

        Returns:
            The new module.

        Example:
            >>> fc = rawdev.nn.Linear(4, 3); fc.qconfig = default_dynamic_qconfig
            >>> Linear.from_float(fc)
            DynamicQuantizedLinear(in_features=4, out_features=3, dtype=rawdev.qint8, qscheme=rawdev.per_tensor_affine)
        """
        from ...layers.linear import Linear as FloatLinear
        from ...layers.linear import NonDynamicallyQuantizableLinear
        if type(mod) not in (FloatLinear, NonDynamicallyQuantizableLinear):
            raise AssertionError(f"nn.quantized.dynamic.Linear.from_float only works for one of "
                                 f"{[FloatLinear.__name__, NonDynamicallyQuantizableLinear.__name__]}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer = mod.qconfig.weight()
        else:
            from ....ao.quantization.qconfig import default_dynamic_qconfig
            weight_observer = default_dynamic_qconfig.weight()
        dtype = weight_observer.dtype
        if dtype not in (_dt.qint8, _dt.float16):
            raise AssertionError(f"The only supported dtypes for dynamic quantized linear are qint8 and float16 got: "
                                 f"{dtype}")
        weight_observer(mod.weight)
        if dtype is _dt.qint8:
            qweight = quantize_weight(mod.weight.float(), weight_observer)
        else:
            qweight = mod.weight.float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear


def _linear_dynamic(x: np.ndarray, w: Any, b: Tensor | None) -> np.ndarray:
    """quantized::linear_dynamic on numpy values: x (..., in) float32 -> (N, out) float32."""
    from ..engine import current_engine
    x2 = x.reshape(-1, x.shape[-1])
    if x2.size:
        sx, zx = choose_input_qparams(float(x2.min()), float(x2.max()), current_engine() != "qnnpack")
    else:
        sx, zx = choose_input_qparams(0.0, 0.0, True)
    qx = np.clip(np.rint(x2 / np.float32(sx)) + zx, 0, 255)           # quint8 values, held exactly in float32
    qw = w._qint.astype(np.float64)
    if w.qscheme() is _dt.per_tensor_affine:
        qw -= w.q_zero_point()
        w_scale = np.float64(w.q_scale())
    else:
        if w.q_per_channel_axis() != 0:
            raise RuntimeError("quantized::linear_dynamic: a per-channel weight must be quantized along axis 0 "
                               "(its output features)")
        qw -= w._zps.reshape(-1, 1)
        w_scale = w._scales.astype(np.float32).astype(np.float64)
    acc = (qx.astype(np.float64) - zx) @ qw.T       # exact integer sums (see the module text)
    out = (acc * (np.float64(sx) * w_scale)).astype(np.float32)
    if b is not None:
        out += np.asarray(b._values(), dtype=np.float32)
    return out
