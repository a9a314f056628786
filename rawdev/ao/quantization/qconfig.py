"""QConfig (PyTorch's torch.ao.quantization.qconfig): which observers make a module's activation and weight
quantization parameters, as a namedtuple of observer factories (classes or `Observer.with_args(...)`)."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from ... import dtypes as _dt
from ...nn.module import Module
from .observer import (
    HistogramObserver,
    PlaceholderObserver,
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)

__all__ = ["QConfig", "QConfigDynamic", "default_qconfig", "default_dynamic_qconfig", "float16_dynamic_qconfig",
           "per_channel_dynamic_qconfig", "float_qparams_weight_only_qconfig", "default_per_channel_qconfig",
           "get_default_qconfig", "float16_static_qconfig"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """How to quantize a module: observer factories for its activation and its weight.

    Args:
        activation: an observer class or `Observer.with_args(...)` for the activation.
        weight: the same for the weight.

    Example:
        >>> QConfig(activation=MinMaxObserver.with_args(dtype=rawdev.quint8),
        ...         weight=MinMaxObserver.with_args(dtype=rawdev.qint8, qscheme=rawdev.per_tensor_symmetric))
    """

    __slots__ = ()

    def __new__(cls, activation: Any, weight: Any) -> QConfig:
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError("QConfig received observer instance, please pass observer class instead. Use "
                             "MyObserver.with_args(x=1) to override arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


QConfigDynamic = QConfig   # PyTorch's deprecated name for the same thing

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer, weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer, weight=default_weight_observer)
float16_dynamic_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=_dt.float16, is_dynamic=True),
                                  weight=PlaceholderObserver.with_args(dtype=_dt.float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=_dt.float16),
                                 weight=PlaceholderObserver.with_args(dtype=_dt.float16))
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """PyTorch's default static-quantization QConfig for a backend.

    Args:
        backend: "x86" (default), "fbgemm", "qnnpack" or "onednn".
        version: 0, the only version PyTorch defines.

    Returns:
        QConfig(activation=HistogramObserver (reduce_range for x86/fbgemm), weight=per-channel symmetric qint8
        MinMaxObserver, or per-tensor for qnnpack). rawdev cannot construct the HistogramObserver (it does not
        do static quantization); the weight observer works.

    Example:
        >>> get_default_qconfig("qnnpack").weight().qscheme
        rawdev.per_tensor_symmetric
    """
    supported = ["x86", "fbgemm", "qnnpack", "onednn"]
    if backend not in supported:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of {supported}")
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not supported. Version number "
                             "must be 0")
    if backend in ("x86", "fbgemm"):
        return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                       weight=default_per_channel_weight_observer)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False), weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                   weight=default_per_channel_weight_observer)

