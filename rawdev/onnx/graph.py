"""The ONNX graph being built: nodes, initializers (parameters and constants), value names. The only file of
rawdev.onnx that touches the `onnx` package's protobuf classes (besides the final model assembly)."""
import numpy as np

__all__ = ["Graph", "onnx_module", "elem_type"]

_EXTRA = "pip install 'rawdev[onnx]' (the onnx package; onnxruntime to run the exported model)"


def onnx_module():
    """The onnx package, or PyTorch's kind of ModuleNotFoundError naming rawdev's extra."""
    try:
        import onnx
    except ImportError as e:
        raise ModuleNotFoundError(f"rawdev.onnx.export needs the onnx package: {_EXTRA}") from e
    return onnx


def elem_type(np_dtype):
    """The TensorProto element type of a numpy dtype."""
    onnx = onnx_module()
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(np_dtype))


class Graph:
    """Nodes in the order they were emitted; names are unique within the graph."""

    def __init__(self, opset):
        self.opset = opset
        self.nodes = []
        self.initializers = {}        # name -> numpy array
        self._counts = {}

    def fresh(self, hint):
        n = self._counts.get(hint, 0)
        self._counts[hint] = n + 1
        return f"{hint}_{n}"

    def node(self, op_type, inputs, n_out=1, name_hint=None, **attrs):
        """Emit one node; returns its output name (or list of names when n_out > 1). An input of "" is an
        omitted optional input."""
        onnx = onnx_module()
        outs = [self.fresh(f"/{name_hint or op_type}/output") for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(onnx.helper.make_node(op_type, list(inputs), outs, name=self.fresh(f"/{op_type}"),
                                                **attrs))
        return outs[0] if n_out == 1 else outs

    def initializer(self, name, array):
        """A named initializer (a parameter, buffer or constant); returns its name."""
        self.initializers[name] = np.ascontiguousarray(array)
        return name

    def const(self, array, hint="Constant"):
        """A constant tensor (an initializer with a fresh name)."""
        return self.initializer(self.fresh(f"onnx::{hint}"), np.asarray(array))

    def ints(self, values):
        """A 1-D int64 constant (shapes, axes, starts/ends)."""
        return self.const(np.asarray(values, dtype=np.int64), "ints")

    def tensor_protos(self):
        onnx = onnx_module()
        return [onnx.numpy_helper.from_array(a, name) for name, a in self.initializers.items()]
