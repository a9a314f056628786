"""torch.onnx's TorchDynamo-era entry points — ``dynamo_export``, ``ExportOptions``, ``OnnxRegistry`` and the
``ONNXProgram`` they return — over rawdev's one exporter (rawdev.onnx.export, which records the forward's ops).

``dynamo_export(model, *args, export_options=ExportOptions(dynamic_shapes=True))`` exports with every input
dimension symbolic; ``ONNXProgram`` holds the ModelProto (``model_proto``), writes it (``save``) and runs it with
onnxruntime (``__call__``). ``OnnxRegistry`` answers which ops rawdev's exporter maps (``is_registered_op``);
registering an onnxscript function in place of rawdev's mapping is refused: rawdev's exporter emits ONNX nodes from
its own symbolic table and does not inline onnxscript functions.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["dynamo_export", "ExportOptions", "OnnxRegistry", "ONNXProgram", "bind"]

# rawdev.onnx's export and default opset, handed over by rawdev.onnx when it loads (it imports this module)
_exporter: dict[str, Any] = {}


def bind(export: Any, default_opset: int) -> None:
    """Give this module rawdev.onnx.export and its default opset (rawdev.onnx calls it)."""
    _exporter.update(export=export, opset=default_opset)


class OnnxRegistry:
    """Which ops the exporter maps to ONNX, keyed as PyTorch's registry is (namespace, op name, overload).

    Example:
        >>> torch.onnx.OnnxRegistry().is_registered_op(namespace="aten", op_name="add", overload="Tensor")
        True
    """

    def __init__(self) -> None:
        self._opset_version: int = _exporter["opset"]

    @property
    def opset_version(self) -> int:
        """The ONNX opset the exporter targets."""
        return self._opset_version

    def is_registered_op(self, namespace: str, op_name: str, overload: str | None = None) -> bool:
        """Whether rawdev's exporter maps ``namespace::op_name`` (any overload: rawdev maps an op, not each of
        ATen's overloads). Only the "aten" namespace holds ops."""
        from . import symbolic
        if namespace != "aten":
            return False
        return symbolic.lookup(symbolic.canonical(op_name))[0] is not None

    def get_op_functions(self, namespace: str, op_name: str, overload: str | None = None) -> list[Any] | None:
        """The mapping functions of an op (rawdev's symbolic function), or None."""
        from . import symbolic
        if namespace != "aten":
            return None
        fn = symbolic.lookup(symbolic.canonical(op_name))[0]
        return [fn] if fn is not None else None

    def register_op(self, function: Any, namespace: str, op_name: str, overload: str | None = None,
                    is_complex: bool = False) -> None:
        """Refused: rawdev's exporter emits nodes from its own symbolic functions and does not inline onnxscript
        functions, so a registered function would not be used."""
        raise NotImplementedError(
            f"torch.onnx.OnnxRegistry.register_op ({namespace}::{op_name}) is not supported by rawdev: its ONNX "
            f"exporter emits each op from its own symbolic table and does not inline onnxscript functions")


@dataclass
class ExportOptions:
    """Options of dynamo_export.

    Args:
        dynamic_shapes: True: every input dimension is symbolic in the exported graph; False/None: static.
        fake_context: accepted for PyTorch's signature (rawdev exports from real example inputs).
        onnx_registry: an OnnxRegistry (its opset_version is the export's opset).
        diagnostic_options: accepted for PyTorch's signature.
    """
    dynamic_shapes: bool | None = None
    fake_context: Any = None
    onnx_registry: OnnxRegistry | None = None
    diagnostic_options: Any = None


class ONNXProgram:
    """An exported model: ``model_proto`` (an onnx.ModelProto), ``save(destination)``, and calling it runs the
    model with onnxruntime on rawdev tensors or numpy arrays."""

    def __init__(self, model_bytes: bytes, input_names: list[str]) -> None:
        from .graph import onnx_module
        self._bytes = model_bytes
        self._input_names = input_names
        self.model_proto = onnx_module().load_from_string(model_bytes)
        self._session: Any = None

    def save(self, destination: str | os.PathLike[str] | io.BufferedIOBase, *,
             include_initializers: bool = True, model_state: Any = None, serializer: Any = None) -> None:
        """Write the model to a path or a binary file object.

        Args:
            destination: where to write.
            include_initializers: True (default): the weights are in the file; False: they are left out (the
                graph then takes them as inputs of the same names).
            model_state: accepted for PyTorch's signature (the weights exported are the model's).
            serializer: accepted for PyTorch's signature.
        """
        data = self._bytes
        if not include_initializers:
            proto = self.model_proto.__class__()
            proto.CopyFrom(self.model_proto)
            del proto.graph.initializer[:]
            data = proto.SerializeToString()
        if isinstance(destination, (str, os.PathLike)):
            with open(destination, "wb") as fh:
                fh.write(data)
        else:
            destination.write(data)

    def adapt_torch_inputs_to_onnx(self, *args: Any, **kwargs: Any) -> list[Any]:
        """The model's inputs as the ONNX graph takes them: numpy arrays, keyword arguments after positional."""
        import numpy as np

        from ..tensor import Tensor
        vals = list(args) + list(kwargs.values())
        return [np.asarray(v.detach().cpu()) if isinstance(v, Tensor) else np.asarray(v) for v in vals]

    def __call__(self, *args: Any, **kwargs: Any) -> list[Any]:
        """Run the exported model with onnxruntime (the test extra) and return its outputs as rawdev tensors."""
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise ModuleNotFoundError("running an ONNXProgram needs onnxruntime: pip install onnxruntime") from e
        import numpy as np

        from ..tensor.factory import from_numpy
        if self._session is None:
            self._session = ort.InferenceSession(self._bytes, providers=["CPUExecutionProvider"])
        feeds = dict(zip(self._input_names, self.adapt_torch_inputs_to_onnx(*args, **kwargs)))
        return [from_numpy(np.ascontiguousarray(o)) for o in self._session.run(None, feeds)]


def dynamo_export(model: Any, /, *model_args: Any, export_options: ExportOptions | None = None,
                  **model_kwargs: Any) -> ONNXProgram:
    """Export a model to ONNX (PyTorch's TorchDynamo-era entry point), with rawdev's exporter.

    Args:
        model: the nn.Module or function.
        *model_args: the example positional inputs.
        export_options: ExportOptions (dynamic_shapes=True makes every input dimension symbolic).
        **model_kwargs: the example keyword inputs.

    Returns:
        An ONNXProgram.

    Example:
        >>> program = torch.onnx.dynamo_export(model, torch.randn(1, 1, 32, 32))
        >>> program.save("model.onnx")
    """
    from .tracer import _tensors
    export = _exporter["export"]
    opts = export_options or ExportOptions()
    inputs = _tensors((model_args, model_kwargs), [])
    names = [f"l_{'x' if i == 0 else f'x_{i}'}_" for i in range(len(inputs))]
    dynamic_axes = None
    if opts.dynamic_shapes:
        dynamic_axes = {n: {d: f"{n}_dim_{d}" for d in range(t.ndim)} for n, t in zip(names, inputs)}
    opset = opts.onnx_registry.opset_version if opts.onnx_registry is not None else None
    buf = io.BytesIO()
    export(model, tuple(model_args) + ((dict(model_kwargs),) if model_kwargs else ()), buf, input_names=names,
           opset_version=opset, dynamic_axes=dynamic_axes)
    return ONNXProgram(buf.getvalue(), names)
