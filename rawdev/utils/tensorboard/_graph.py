"""The model graph SummaryWriter.add_graph writes, built from rawdev.fx: PyTorch records a TorchScript trace,
rawdev has no TorchScript, so the module is traced symbolically (rawdev.fx.symbolic_trace) and, given example
inputs, run once through ShapeProp for each node's output shape. Each fx node becomes a GraphDef NodeDef named
by its module scope (`Net/Linear[fc1]/fc1`), with the nodes it reads as inputs; inputs and outputs are
"IO Node"s, as in PyTorch's graphs."""
from typing import Any

__all__ = ["graph"]


def _shapes(meta: Any) -> list:
    """The shapes of a node's tensor_meta (one TensorMetadata, or a tuple/list/dict of them)."""
    if meta is None:
        return []
    if hasattr(meta, "shape") and hasattr(meta, "dtype"):
        return [tuple(int(d) for d in meta.shape)]
    items = meta.values() if isinstance(meta, dict) else meta if isinstance(meta, (list, tuple)) else []
    out = []
    for m in items:
        out.extend(_shapes(m))
    return out


def _scope(root: Any, target: str) -> str:
    """`Net/Sequential[features]/Conv2d[0]` for the submodule at dotted path target."""
    parts, mod = [type(root).__name__], root
    for name in target.split("."):
        mod = getattr(mod, name)
        parts.append(f"{type(mod).__name__}[{name}]")
    return "/".join(parts)


def _op_name(node: Any) -> str:
    if node.op == "call_module":
        return ""   # filled in from the module's class
    if node.op == "call_function":
        return getattr(node.target, "__name__", str(node.target))
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "get_attr":
        return "prim::GetAttr"
    return "IO Node"


def graph(model: Any, args: Any = None, verbose: bool = False, use_strict_trace: bool = True) -> tuple:
    """Trace model with rawdev.fx and return (GraphDef, RunMetadata) protos for FileWriter.add_graph.

    Args:
        model: the nn.Module.
        args: an example input (a tensor, or a tuple/list of them) for the output shapes; None leaves them out.
        verbose: print the traced graph.
        use_strict_trace: unused (TorchScript's strict flag in PyTorch).

    Returns:
        (tensorboard GraphDef, tensorboard RunMetadata).

    Example:
        >>> graph_def, run_meta = graph(model, rawdev.randn(1, 4))   # doctest: +SKIP
    """
    from tensorboard.compat.proto.attr_value_pb2 import AttrValue
    from tensorboard.compat.proto.config_pb2 import RunMetadata
    from tensorboard.compat.proto.graph_pb2 import GraphDef
    from tensorboard.compat.proto.node_def_pb2 import NodeDef
    from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.compat.proto.versions_pb2 import VersionDef

    from ...fx import symbolic_trace
    from ...fx.passes.shape_prop import ShapeProp
    try:
        gm = symbolic_trace(model)
    except Exception as e:
        raise NotImplementedError(
            "torch.utils.tensorboard.SummaryWriter.add_graph: rawdev draws the graph from rawdev.fx.symbolic_trace "
            f"(PyTorch's TorchScript trace is not built), which cannot trace this model: {type(e).__name__}: {e}"
        ) from e
    if args is not None:
        example = tuple(args) if isinstance(args, (list, tuple)) else (args,)
        modes = [(m, m.training) for m in gm.modules()]   # run in eval mode as PyTorch traces; each restored
        gm.eval()
        try:
            from ...autograd import no_grad
            with no_grad():
                ShapeProp(gm).propagate(*example)
        finally:
            for m, training in modes:
                m.training = training
    if verbose:
        print(gm.graph)
    root_name = type(model).__name__
    names: dict = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            names[node] = f"input/{node.name}"
        elif node.op == "output":
            names[node] = f"output/{node.name}"
        elif node.op in ("call_module", "get_attr"):
            scope = _scope(model, node.target.rpartition(".")[0]) if node.op == "get_attr" else \
                _scope(model, node.target)
            names[node] = f"{scope}/{node.name}"
        else:
            names[node] = f"{root_name}/{node.name}"
    nodes = []
    for node in gm.graph.nodes:
        op = type(gm.get_submodule(node.target)).__name__ if node.op == "call_module" else _op_name(node)
        attrs = {"attr": AttrValue(s=repr(node.kwargs).encode() if node.kwargs else b"")}
        shapes = _shapes(node.meta.get("tensor_meta"))
        if node.op == "output" and not shapes:
            shapes = [s for i in node.all_input_nodes for s in _shapes(i.meta.get("tensor_meta"))]
        if shapes:
            attrs["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[
                TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in s]) for s in shapes]))
        nodes.append(NodeDef(name=names[node], op=op, input=[names[i] for i in node.all_input_nodes],
                             device="/device:CPU:0", attr=attrs))
    stats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stats
