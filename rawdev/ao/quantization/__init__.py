"""`torch.ao.quantization` as far as dynamic quantization goes: quantize_dynamic, qconfigs, observers.

Dynamic quantization (the LSTM word language model and BERT tutorials): `quantize_dynamic(model, {nn.Linear},
dtype=torch.qint8)` swaps each nn.Linear for a DynamicQuantizedLinear (int8 weight, input quantized per call).
Static quantization (prepare/convert with calibration, QuantStub/DeQuantStub, fuse_modules) and quantization-aware
training are not built: those names raise NotImplementedError saying so.
"""
from ...refusals import refusing_getattr
from .observer import (
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    UniformQuantizationObserverBase,
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)
from .qconfig import (
    QConfig,
    QConfigDynamic,
    default_dynamic_qconfig,
    default_per_channel_qconfig,
    default_qconfig,
    float16_dynamic_qconfig,
    float16_static_qconfig,
    float_qparams_weight_only_qconfig,
    get_default_qconfig,
    per_channel_dynamic_qconfig,
)
from .quantize import (
    convert,
    get_default_dynamic_quant_module_mappings,
    propagate_qconfig_,
    quantize_dynamic,
    swap_module,
)

__all__ = ["quantize_dynamic", "propagate_qconfig_", "convert", "swap_module",
           "get_default_dynamic_quant_module_mappings", "QConfig", "QConfigDynamic", "default_qconfig",
           "default_dynamic_qconfig", "default_per_channel_qconfig", "float16_dynamic_qconfig",
           "float16_static_qconfig", "float_qparams_weight_only_qconfig", "per_channel_dynamic_qconfig",
           "get_default_qconfig", "ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver", "PlaceholderObserver", "HistogramObserver",
           "default_observer", "default_weight_observer", "default_per_channel_weight_observer",
           "default_dynamic_quant_observer", "default_placeholder_observer", "default_float_qparams_observer"]

WHY = ("rawdev builds dynamic quantization only (quantize_dynamic: int8 Linear and LSTM weights, activations "
       "quantized per call); static quantization (prepare/convert with calibration, QuantStub, fuse_modules) and "
       "quantization-aware training are not built")
__getattr__ = refusing_getattr("torch.ao.quantization", "static quantization and QAT (torch.ao.quantization)", WHY)
