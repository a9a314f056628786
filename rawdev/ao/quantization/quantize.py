"""quantize_dynamic and the steps it is made of (PyTorch's torch.ao.quantization.quantize): give modules a qconfig
(propagate_qconfig_), then swap each module whose type has a quantized counterpart and a qconfig for that
counterpart made from it (convert)."""

from __future__ import annotations

import copy
from typing import Any

from ... import dtypes as _dt
from ...nn.layers.linear import Linear as _FloatLinear
from ...nn.module import Module
from ...nn.quantized import dynamic as _nnqd
from .qconfig import default_dynamic_qconfig, float16_dynamic_qconfig, float_qparams_weight_only_qconfig

__all__ = ["quantize_dynamic", "propagate_qconfig_", "convert", "swap_module",
           "get_default_dynamic_quant_module_mappings"]


def get_default_dynamic_quant_module_mappings() -> dict[type, type]:
    """{float module type: dynamic quantized type} that quantize_dynamic swaps by default: nn.Linear and nn.LSTM.
    (PyTorch also maps GRU, the RNN cells and the embeddings; rawdev has no quantized versions of those, so they
    stay float.)

    Returns:
        A new dict.

    Example:
        >>> get_default_dynamic_quant_module_mappings()[rawdev.nn.Linear]
        <class 'rawdev.nn.quantized.dynamic.linear.Linear'>
    """
    from ...nn.layers.rnn import LSTM
    return {_FloatLinear: _nnqd.Linear, LSTM: _nnqd.LSTM}


def _rnn_types() -> set[type]:
    from ...nn.layers import rnn
    return {getattr(rnn, n) for n in ("LSTM", "GRU", "LSTMCell", "RNNCell", "GRUCell") if hasattr(rnn, n)}


def propagate_qconfig_(module: Module, qconfig_dict: Any = None, prepare_custom_config_dict: Any = None) -> None:
    """Set `qconfig` on every submodule: its type's entry, overridden by its qualified name's, else its parent's
    (PyTorch's rule; a module's own existing `qconfig` attribute wins).

    Args:
        module: the model, changed in place.
        qconfig_dict: {type or qualified name: QConfig or None}.
        prepare_custom_config_dict: PyTorch's custom-module options (unused).

    Example:
        >>> propagate_qconfig_(model, {rawdev.nn.Linear: default_dynamic_qconfig})
    """
    spec = {} if qconfig_dict is None else qconfig_dict

    def walk(m, parent_qconfig, prefix):
        qc = spec.get(type(m), parent_qconfig)
        qc = spec.get(prefix, qc)
        qc = getattr(m, "qconfig", qc)
        m.qconfig = qc
        for name, child in m.named_children():
            walk(child, qc, prefix + "." + name if prefix else name)

    walk(module, None, "")


def swap_module(mod: Module, mapping: dict, custom_module_class_mapping: Any = None,
                use_precomputed_fake_quant: bool = False) -> Module:
    """mod's quantized counterpart when its exact type is in mapping and it has a qconfig, else mod itself.

    Args:
        mod: a module.
        mapping: {float type: quantized type with from_float}.
        custom_module_class_mapping: PyTorch's custom-module mapping (unused).
        use_precomputed_fake_quant: passed on to from_float.

    Returns:
        The module to use in mod's place (its forward hooks carried over).

    Example:
        >>> swap_module(fc, get_default_dynamic_quant_module_mappings())
    """
    if getattr(mod, "qconfig", None) is None or type(mod) not in mapping:
        return mod
    new = mapping[type(mod)].from_float(mod)
    for hook in getattr(mod, "_forward_pre_hooks", {}).values():
        new.register_forward_pre_hook(hook)
    for hook in getattr(mod, "_forward_hooks", {}).values():
        new.register_forward_hook(hook)
    return new


def convert(module: Module, mapping: Any = None, inplace: bool = False, remove_qconfig: bool = True,
            is_reference: bool = False, convert_custom_config_dict: Any = None,
            use_precomputed_fake_quant: bool = False) -> Module:
    """Swap every submodule whose type is in mapping (and that has a qconfig) for its quantized counterpart.

    Args:
        module: the model.
        mapping: {float type: quantized type}; the dynamic defaults when None.
        inplace: change module itself rather than a deep copy.
        remove_qconfig: delete the qconfig attributes afterwards.
        is_reference: PyTorch's reference-model conversion (not supported: raises).
        convert_custom_config_dict: PyTorch's custom-module options (unused).
        use_precomputed_fake_quant: passed on to from_float.

    Returns:
        The converted model.

    Example:
        >>> propagate_qconfig_(model, {rawdev.nn.Linear: default_dynamic_qconfig}); convert(model, inplace=True)
    """
    if is_reference:
        raise NotImplementedError("rawdev has no reference quantized modules (convert(is_reference=True))")
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)

    def walk(m):
        for name, child in list(m.named_children()):
            if type(child) not in mapping:
                walk(child)
            m._modules[name] = swap_module(child, mapping)

    walk(module)
    if remove_qconfig:
        for m in module.modules():
            if "qconfig" in m.__dict__:
                del m.__dict__["qconfig"]
    return module


def quantize_dynamic(model: Module, qconfig_spec: Any = None, dtype: Any = _dt.qint8, mapping: Any = None,
                     inplace: bool = False) -> Module:
    """Dynamic quantization (PyTorch's): nn.Linear modules become dynamic quantized Linears (int8 weights, input
    quantized per call); others stay float.

    Args:
        model: the float model.
        qconfig_spec: which modules: a set of types and/or qualified names (quantized with dtype's default
            qconfig), or a dict {type or name: QConfig}; None: every Linear (and PyTorch's RNN types, which
            rawdev leaves float).
        dtype: rawdev.qint8 (int8 weights) or rawdev.float16 (float16 weights).
        mapping: {float type: quantized type}; the default maps nn.Linear.
        inplace: change model itself rather than a deep copy.

    Returns:
        The quantized model.

    Example:
        >>> qmodel = rawdev.quantization.quantize_dynamic(model, {rawdev.nn.Linear}, dtype=rawdev.qint8)
    """
    if qconfig_spec is None:
        if dtype is _dt.qint8:
            qconfig_spec = {t: default_dynamic_qconfig for t in {_FloatLinear} | _rnn_types()}
        elif dtype is _dt.float16:
            qconfig_spec = {t: float16_dynamic_qconfig for t in {_FloatLinear} | _rnn_types()}
        elif dtype is _dt.quint8:
            from ...nn.layers.resample import EmbeddingBag
            from ...nn.layers.sparse import Embedding
            qconfig_spec = {Embedding: float_qparams_weight_only_qconfig,
                            EmbeddingBag: float_qparams_weight_only_qconfig}
        else:
            raise ValueError(f"Don't know how to quantize with default settings for {dtype}. Provide full qconfig "
                             "please")
    elif isinstance(qconfig_spec, set):
        if dtype is _dt.qint8:
            default_qconfig = default_dynamic_qconfig
        elif dtype is _dt.float16:
            default_qconfig = float16_dynamic_qconfig
        elif dtype is _dt.quint8:
            default_qconfig = float_qparams_weight_only_qconfig
        else:
            raise RuntimeError(f"Unknown dtype specified for quantize_dynamic: {dtype}")
        qconfig_spec = dict.fromkeys(qconfig_spec, default_qconfig)
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model
