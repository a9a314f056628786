"""`rawdev.onnx`: torch.onnx's export for rawdev models. `export(model, args, f)` runs the model once on the
example inputs and records the ops its forward runs into an ONNX graph (rawdev/onnx/tracer.py), parameters and
buffers as initializers under their state_dict names, then writes the model with the `onnx` package — an optional
extra: `pip install 'rawdev[onnx]'` (onnxruntime, to run the file, comes with it).

What is exported is the path the example inputs took (as PyTorch's TorchScript-based exporter): Python control
flow is unrolled, sizes read with `x.size(0)` become constants except where an op keeps the input's dim (a
reshape that keeps the batch dim), so `dynamic_axes` stay dynamic through the ops rawdev maps. An op without an
ONNX mapping raises NotImplementedError naming it.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError", "TrainingMode", "dynamo_export", "ExportOptions",
           "OnnxRegistry", "ONNXProgram"]

DEFAULT_OPSET = 18          # PyTorch's torch.onnx default opset_version (ONNX_DEFAULT_OPSET)
MIN_OPSET = 14


class OnnxExporterError(RuntimeError):
    """An export that could not be completed (PyTorch's torch.onnx.OnnxExporterError)."""


class TrainingMode:
    """PyTorch's torch.onnx.TrainingMode: rawdev exports in EVAL (the default) or PRESERVE mode."""
    EVAL = "EVAL"
    PRESERVE = "PRESERVE"
    TRAINING = "TRAINING"


def is_in_onnx_export() -> bool:
    """True while rawdev.onnx.export is recording a forward (a model may branch on it, as with PyTorch)."""
    from .tracer import active
    return active() is not None


def _np_dtype(t):
    import numpy as np
    return np.dtype(t.dtype.storage)


def _value_info(name, t, dyn):
    from .graph import elem_type, onnx_module
    onnx = onnx_module()
    shape = [dyn.get(i, d) for i, d in enumerate(t.shape)]
    return onnx.helper.make_tensor_value_info(name, elem_type(_np_dtype(t)), shape)


def _dynamic(dynamic_axes, name):
    spec = (dynamic_axes or {}).get(name)
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {int(k): str(v) for k, v in spec.items()}
    return {int(k): f"{name}_dynamic_axes_{j + 1}" for j, k in enumerate(spec)}


@contextlib.contextmanager
def _mode(model, training):
    """The export runs in eval mode (PyTorch's TrainingMode.EVAL default); every module's flag is restored."""
    flags = [(m, m.training) for m in model.modules()]
    if training in (None, TrainingMode.EVAL, False):
        model.eval()
    elif training == TrainingMode.TRAINING or training is True:
        raise NotImplementedError("rawdev.onnx.export: training=TrainingMode.TRAINING (dropout and batch "
                                  "statistics in the graph) is not supported; export in eval mode")
    try:
        yield
    finally:
        for m, t in flags:
            m.training = t


def export(model: Any, args: Any = (), f: Any = None, export_params: bool = True, verbose: bool = False,
           training: Any = None, input_names: list | None = None, output_names: list | None = None,
           operator_export_type: Any = None, opset_version: int | None = None, do_constant_folding: bool = True,
           dynamic_axes: dict | None = None, keep_initializers_as_inputs: bool | None = None,
           custom_opsets: dict | None = None, export_modules_as_functions: Any = False,
           autograd_inlining: bool = True, *, kwargs: dict | None = None, dynamo: bool = False,
           external_data: bool = True, **unused: Any) -> None:
    """Export a rawdev model (an nn.Module or a function of tensors) to an ONNX file.

    Args:
        model: the module (run in eval mode during the export; its modes are restored after) or callable.
        args: the example inputs: a tensor, or a tuple of positional arguments (a trailing dict is keyword
            arguments, as in PyTorch).
        f: a path (str or os.PathLike) or a binary file-like object the model is written to.
        export_params: True (default): parameters are initializers; False: they become graph inputs.
        input_names: names of the graph inputs, in order (default "input", "input.1", ...).
        output_names: names of the graph outputs, in the order the forward returns tensors (default "output",
            "output.1", ...).
        opset_version: the ONNX opset (default 18, PyTorch's default; 14 to the onnx package's newest).
        dynamic_axes: {input or output name: {axis: "symbolic name"} or [axes]}: those dims are left symbolic.
        kwargs: keyword arguments for the model (PyTorch's spelling).
        verbose: print the graph after export.

    Returns:
        None (the model is in `f`).

    Raises:
        ModuleNotFoundError: the onnx package is missing (it names the extra to install).
        NotImplementedError: an op or module of the forward has no ONNX mapping (the message names it).

    Example:
        >>> rawdev.onnx.export(model, (rawdev.randn(1, 3, 28, 28),), "model.onnx", input_names=["x"],
        ...                    output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    """
    from ..autograd.grad_mode import no_grad
    from ..nn.module import Module
    from ..tensor import Tensor
    from .graph import Graph, onnx_module
    from .tracer import Tracer, _tensors

    onnx = onnx_module()
    if f is None:
        raise TypeError("export() missing required argument 'f' (a path or a binary file-like object)")
    if dynamo:
        raise NotImplementedError("rawdev.onnx.export(dynamo=True): rawdev records the forward as the "
                                  "TorchScript-based exporter does; call it with dynamo=False")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ValueError(f"rawdev.onnx.export supports opset_version {MIN_OPSET} to {newest} (the installed onnx "
                         f"package's newest), got {opset}")
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    kw = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kw.update(args[-1])
        args = args[:-1]
    inputs = _tensors((args, kw), [])
    in_names = list(input_names or [])
    in_names += [("input" if i == 0 else f"input.{i}") for i in range(len(in_names), len(inputs))]
    graph = Graph(opset)
    params: dict[int, tuple[str, Any]] = {}
    if isinstance(model, Module):
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            params.setdefault(id(p), (name, p))
    tracer = Tracer(graph, params)
    for t, n in zip(inputs, in_names):
        tracer.bind(t, n)
    mode = _mode(model, training) if isinstance(model, Module) else contextlib.nullcontext()
    with mode, no_grad(), tracer:
        if isinstance(model, Module):
            tracer.patch_module_attributes(model)
        out = model(*args, **kw)
    outs = _tensors(out, [])
    if not outs:
        raise OnnxExporterError("rawdev.onnx.export: the model returned no tensors")
    out_names = list(output_names or [])
    out_names += [("output" if i == 0 else f"output.{i}") for i in range(len(out_names), len(outs))]
    for t, name in zip(outs, out_names):     # each output under its own name
        graph.nodes.append(onnx.helper.make_node("Identity", [tracer.v(t)], [name], name=graph.fresh("/Output")))
    g_inputs = [_value_info(n, t, _dynamic(dynamic_axes, n)) for t, n in zip(inputs, in_names)]
    g_outputs = [_value_info(n, t, _dynamic(dynamic_axes, n)) for t, n in zip(outs, out_names)]
    inits = graph.tensor_protos()
    if not export_params:
        kept = [i for i in inits if i.name not in tracer.used_params]
        g_inputs += [onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in inits
                     if i.name in tracer.used_params]
        inits = kept
    g = onnx.helper.make_graph(graph.nodes, "main_graph", g_inputs, g_outputs, inits)
    proto = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="rawdev", producer_version=_version())
    proto.ir_version = min(proto.ir_version, 10)      # readable by onnxruntime releases of the last years
    onnx.checker.check_model(proto)
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))


def _version():
    from importlib import metadata
    try:
        return metadata.version("rawdev")
    except metadata.PackageNotFoundError:
        return "0"


# torch.onnx._export: PyTorch's private alias of export that older tutorials call
_export = export

# The TorchDynamo-based exporter's API (torch.onnx.dynamo_export, ExportOptions, OnnxRegistry, ONNXProgram) over the
# same recording: rawdev has one exporter, which this entry point calls with the options translated.
from . import dynamo_api as _dynamo_api  # noqa: E402
from .dynamo_api import ExportOptions, ONNXProgram, OnnxRegistry, dynamo_export  # noqa: E402,F401

_dynamo_api.bind(export, DEFAULT_OPSET)
