"""Observers (PyTorch's torch.ao.quantization.observer): modules that watch tensors go by and turn what they saw
into quantization parameters with PyTorch's formulas. Dynamic quantization uses them on weights (MinMaxObserver,
PerChannelMinMaxObserver) and as placeholders for the activation (PlaceholderObserver).

The formulas (`calculate_qparams`), in float32 as PyTorch computes them, with min_neg = min(min_val, 0) and
max_pos = max(max_val, 0):
    affine:     scale = max((max_pos - min_neg) / (qmax - qmin), eps)
                zero_point = clamp(qmin - round_half_even(min_neg / scale), qmin, qmax)          (int32)
    symmetric:  scale = max(max(-min_neg, max_pos) / ((qmax - qmin) / 2), eps)
                zero_point = 0, or 128 for quint8 ((qmin + qmax) // 2 with a custom range)       (int64)
    float_qparams (per channel): scale = (max - min) / (qmax - qmin) (1 where not above eps), zero_point = -min / scale
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from ... import dtypes as _dt
from ...nn.module import Module
from ...tensor.core import Tensor
from ...tensor.factory import tensor as _tensor

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver",
           "PerChannelMinMaxObserver", "PlaceholderObserver", "HistogramObserver", "default_observer",
           "default_weight_observer", "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_placeholder_observer", "default_float_qparams_observer", "calculate_qmin_qmax"]

_EPS = float(np.finfo(np.float32).eps)
_SYMMETRIC = (_dt.per_tensor_symmetric, _dt.per_channel_symmetric)


class _PartialWrapper:
    """An observer class with some constructor arguments bound (what `Observer.with_args(...)` returns); calling
    it makes the observer, as PyTorch's _PartialWrapper."""

    def __init__(self, p):
        self.p = p

    def __call__(self, *args, **keywords):
        return self.p(*args, **keywords)

    def __repr__(self):
        return self.p.__repr__()

    def with_args(self, **kwargs):
        return _PartialWrapper(functools.partial(self.p, **kwargs))


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _host(x: Tensor) -> np.ndarray:
    return np.asarray(x.detach().float().cpu()._values(), dtype=np.float32)


def calculate_qmin_qmax(quant_min: Any, quant_max: Any, has_customized_qrange: bool, dtype: Any,
                        reduce_range: bool) -> tuple[int, int]:
    """PyTorch's quantization range of an observer: the dtype's (halved with reduce_range) or the custom one.

    Args:
        quant_min: the custom lower bound, or None.
        quant_max: the custom upper bound, or None.
        has_customized_qrange: whether both bounds were given.
        dtype: rawdev.qint8, quint8, qint32 (or int8/uint8/int32).
        reduce_range: halve the range (fbgemm's 7-bit activations).

    Returns:
        (quant_min, quant_max).

    Example:
        >>> calculate_qmin_qmax(None, None, False, rawdev.quint8, True)
        (0, 127)
    """
    if has_customized_qrange:
        if reduce_range:
            return quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (_dt.qint8, _dt.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (_dt.quint8, _dt.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (_dt.qint32, _dt.int32):
        return -(2 ** 31), 2 ** 31 - 1
    return 0, 15


class ObserverBase(Module):
    """The observers' base: a module whose forward records what it sees and returns its input unchanged.

    Args:
        dtype: the quantized dtype the parameters are for.
        is_dynamic: whether the observed tensor is quantized per call (dynamic quantization's activations).
    """

    def __init__(self, dtype: Any, is_dynamic: bool = False) -> None:
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    with_args = classmethod(_with_args)

    def calculate_qparams(self, **kwargs: Any) -> Any:
        raise NotImplementedError


class UniformQuantizationObserverBase(ObserverBase):
    """Observers with PyTorch's uniform (affine or symmetric) scale/zero_point formulas (see the module text).

    Args:
        dtype: the quantized dtype (rawdev.quint8 by default).
        qscheme: rawdev.per_tensor_affine, per_tensor_symmetric, per_channel_affine, per_channel_symmetric or
            per_channel_affine_float_qparams.
        reduce_range: use half the dtype's range.
        quant_min: a custom lower bound (with quant_max).
        quant_max: a custom upper bound (with quant_min).
        factory_kwargs: PyTorch's buffer factory arguments (ignored: buffers are float32 cpu tensors).
        eps: the smallest scale.
        is_dynamic: see ObserverBase.
    """

    def __init__(self, dtype: Any = _dt.quint8, qscheme: Any = _dt.per_tensor_affine, reduce_range: bool = False,
                 quant_min: Any = None, quant_max: Any = None, factory_kwargs: Any = None, eps: float = _EPS,
                 is_dynamic: bool = False, **kwargs: Any) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers. "
                          "reduce_range will be deprecated in a future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", _tensor([eps], dtype=_dt.float32))
        if qscheme not in (_dt.per_tensor_affine, _dt.per_tensor_symmetric, _dt.per_channel_affine,
                           _dt.per_channel_symmetric, _dt.per_channel_affine_float_qparams):
            raise AssertionError("Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                                 "per_channel_affine, per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        if dtype not in (_dt.qint8, _dt.quint8, _dt.qint32, _dt.int8, _dt.uint8, _dt.int32):
            raise AssertionError("Default Observer only works for qint8, quint8 and quint4x2 data type")
        self.has_customized_qrange = (quant_min is not None) and (quant_max is not None)
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise AssertionError("Used-specified quantization range must include 0.")
            if not quant_min < quant_max:
                raise AssertionError("qmin must be strictly less than qmax for user-specified quantization range.")
        self.quant_min, self.quant_max = calculate_qmin_qmax(quant_min, quant_max, self.has_customized_qrange,
                                                             dtype, reduce_range)

    def _calculate_qparams(self, min_val: Tensor, max_val: Tensor) -> tuple[Tensor, Tensor]:
        mn, mx = _host(min_val), _host(max_val)
        if mn.size == 0 or mx.size == 0 or bool(np.any(mn == np.inf)) or bool(np.any(mx == -np.inf)):
            warnings.warn("must run observer before calling calculate_qparams. Returning default values.",
                          stacklevel=2)
            return _tensor([1.0]), _tensor([0])
        if bool(np.any(mn > mx)):
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
        qmin, qmax = self.quant_min, self.quant_max
        eps = np.float32(_host(self.eps).reshape(-1)[0])
        min_neg, max_pos = np.minimum(mn, np.float32(0)), np.maximum(mx, np.float32(0))
        zp_dtype = _dt.int64
        if self.qscheme in _SYMMETRIC:
            max_pos = np.maximum(-min_neg, max_pos)
            scale = np.maximum(max_pos / np.float32((qmax - qmin) / 2), eps)
            zp = np.zeros(mn.shape, np.int64)
            if self.dtype in (_dt.quint8, _dt.uint8):
                zp[...] = (qmin + qmax) // 2 if self.has_customized_qrange else 128
        elif self.qscheme is _dt.per_channel_affine_float_qparams:
            scale = (mx - mn) / np.float32(qmax - qmin)
            scale = np.where(scale > eps, scale, np.float32(1.0)).astype(np.float32)
            zp, zp_dtype = (np.float32(-1) * mn / scale).astype(np.float32), _dt.float32
        else:
            scale = np.maximum((max_pos - min_neg) / np.float32(qmax - qmin), eps)
            zp = np.clip(qmin - np.rint(min_neg / scale).astype(np.int32), qmin, qmax).astype(np.int32)
            zp_dtype = _dt.int32
        scale = np.asarray(scale, np.float32).reshape(-1) if scale.ndim == 0 else np.asarray(scale, np.float32)
        zp = np.asarray(zp).reshape(-1) if np.ndim(zp) == 0 else np.asarray(zp)
        return (Tensor._make_cpu(np.ascontiguousarray(scale), _dt.float32),
                Tensor._make_cpu(np.ascontiguousarray(zp, dtype=zp_dtype.storage), zp_dtype))

    def reset_min_max_vals(self) -> None:
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


class MinMaxObserver(UniformQuantizationObserverBase):
    """Records the running minimum and maximum of what it sees; per-tensor parameters from them.

    Example:
        >>> obs = MinMaxObserver(dtype=rawdev.qint8, qscheme=rawdev.per_tensor_symmetric)
        >>> _ = obs(rawdev.tensor([-1.0, 2.0]))
        >>> obs.calculate_qparams()
        (tensor([0.0157]), tensor([0]))
    """

    def __init__(self, dtype: Any = _dt.quint8, qscheme: Any = _dt.per_tensor_affine, reduce_range: bool = False,
                 quant_min: Any = None, quant_max: Any = None, factory_kwargs: Any = None, eps: float = _EPS,
                 is_dynamic: bool = False, **kwargs: Any) -> None:
        if qscheme not in (_dt.per_tensor_affine, _dt.per_tensor_symmetric):
            raise NotImplementedError("MinMaxObserver's qscheme only support torch.per_tensor_symmetric and "
                                      "torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.register_buffer("min_val", _tensor(float("inf")))
        self.register_buffer("max_val", _tensor(float("-inf")))
        if qscheme is _dt.per_tensor_symmetric and reduce_range and dtype is _dt.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def forward(self, x_orig: Tensor) -> Tensor:
        """Record x_orig's minimum and maximum; return it unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        x = _host(x_orig)
        mn = min(float(x.min()), float(self.min_val.item()))
        mx = max(float(x.max()), float(self.max_val.item()))
        self.min_val.fill_(mn)
        self.max_val.fill_(mx)
        return x_orig

    def calculate_qparams(self, **kwargs: Any) -> tuple[Tensor, Tensor]:
        """(scale, zero_point) as one-element tensors, by the formulas of the module text."""
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self) -> None:
        self.min_val.fill_(float("inf"))
        self.max_val.fill_(float("-inf"))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """MinMaxObserver whose min/max follow a moving average: v += averaging_constant * (new - v) after the first.

    Example:
        >>> obs = MovingAverageMinMaxObserver(averaging_constant=0.5)
    """

    def __init__(self, averaging_constant: float = 0.01, dtype: Any = _dt.quint8,
                 qscheme: Any = _dt.per_tensor_affine, reduce_range: bool = False, quant_min: Any = None,
                 quant_max: Any = None, eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        self.averaging_constant = averaging_constant
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = _host(x_orig)
        cur_min, cur_max = float(self.min_val.item()), float(self.max_val.item())
        if cur_min == float("inf") and cur_max == float("-inf"):
            mn, mx = float(x.min()), float(x.max())
        else:
            c = self.averaging_constant
            mn = cur_min + c * (float(x.min()) - cur_min)
            mx = cur_max + c * (float(x.max()) - cur_max)
        self.min_val.fill_(mn)
        self.max_val.fill_(mx)
        return x_orig


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Running minimum and maximum per slice along ch_axis; per-channel parameters from them.

    Example:
        >>> obs = PerChannelMinMaxObserver(ch_axis=0, dtype=rawdev.qint8, qscheme=rawdev.per_channel_symmetric)
        >>> _ = obs(rawdev.tensor([[-1.0, 2.0], [0.5, 0.25]]))
        >>> obs.calculate_qparams()[1]
        tensor([0, 0])
    """

    min_val: Tensor   # buffers: the running per-channel extremes (empty until the first forward)
    max_val: Tensor

    def __init__(self, ch_axis: int = 0, dtype: Any = _dt.quint8, qscheme: Any = _dt.per_channel_affine,
                 reduce_range: bool = False, quant_min: Any = None, quant_max: Any = None,
                 factory_kwargs: Any = None, eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if qscheme not in (_dt.per_channel_affine, _dt.per_channel_symmetric, _dt.per_channel_affine_float_qparams):
            raise NotImplementedError("PerChannelMinMaxObserver's qscheme only support torch.per_channel_symmetric, "
                                      "torch.per_channel_affine and torch.per_channel_affine_float_qparams.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", _tensor([]))
        self.register_buffer("max_val", _tensor([]))

    def forward(self, x_orig: Tensor) -> Tensor:
        """Record each channel's minimum and maximum; return x_orig unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        x = _host(x_orig)
        y = np.moveaxis(x, self.ch_axis, 0).reshape(x.shape[self.ch_axis], -1)
        mn, mx = y.min(axis=1), y.max(axis=1)
        if self.min_val.numel() != 0:
            mn = np.minimum(mn, _host(self.min_val))
            mx = np.maximum(mx, _host(self.max_val))
        self.min_val = Tensor._make_cpu(np.ascontiguousarray(mn, np.float32), _dt.float32)
        self.max_val = Tensor._make_cpu(np.ascontiguousarray(mx, np.float32), _dt.float32)
        return x_orig

    def calculate_qparams(self, **kwargs: Any) -> tuple[Tensor, Tensor]:
        """(scales, zero_points), one per channel, by the formulas of the module text."""
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class PlaceholderObserver(ObserverBase):
    """Observes nothing: it only carries the dtype (and range) a dynamically quantized activation will get.

    Example:
        >>> PlaceholderObserver(dtype=rawdev.quint8, is_dynamic=True).dtype
        rawdev.quint8
    """

    def __init__(self, dtype: Any = _dt.float32, custom_op_name: str = "", compute_dtype: Any = None,
                 quant_min: Any = None, quant_max: Any = None, qscheme: Any = None, eps: Any = None,
                 is_dynamic: bool = False) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme is None:
            qscheme = _dt.per_tensor_affine
        if eps is None:
            eps = _EPS
        self.quant_min, self.quant_max, self.qscheme, self.eps = quant_min, quant_max, qscheme, eps
        self.custom_op = custom_op_name
        if compute_dtype:
            self.is_dynamic = True
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` will be deprecated in "
                          "a future release of PyTorch.", stacklevel=2)

    def forward(self, x: Tensor) -> Tensor:
        return x

    def extra_repr(self) -> str:
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self, **kwargs: Any) -> Any:
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002


class HistogramObserver(UniformQuantizationObserverBase):
    """PyTorch's histogram observer for static quantization's activations (L2-optimal range search). rawdev does
    static quantization (prepare/convert) neither, so constructing one raises NotImplementedError; it exists so
    that get_default_qconfig() answers with PyTorch's QConfig.

    Example:
        >>> factory = HistogramObserver.with_args(reduce_range=True)
    """

    def __init__(self, bins: int = 2048, dtype: Any = _dt.quint8, qscheme: Any = _dt.per_tensor_affine,
                 reduce_range: bool = False, quant_min: Any = None, quant_max: Any = None,
                 factory_kwargs: Any = None, eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        raise NotImplementedError("rawdev has no HistogramObserver: it serves static (calibrated) quantization, "
                                  "which rawdev does not do; dynamic quantization (quantize_dynamic) needs none")


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=_dt.qint8, qscheme=_dt.per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(dtype=_dt.qint8,
                                                                         qscheme=_dt.per_channel_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(dtype=_dt.quint8, quant_min=0, quant_max=255,
                                                               is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=_dt.quint8, qscheme=_dt.per_channel_affine_float_qparams, ch_axis=0)
