"""`torch.fx`: symbolic tracing of modules and functions into a Graph of Nodes, GraphModule (a module whose
forward is generated from its graph), Interpreter/Transformer, replace_pattern, passes.shape_prop and
experimental.optimization.fuse.

Example:
    >>> import rawdev as torch
    >>> gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    >>> [n.op for n in gm.graph.nodes]
    ['placeholder', 'call_module', 'call_module', 'output']
"""
from . import experimental, node, passes, proxy  # noqa: F401  (torch.fx.node.map_arg, torch.fx.proxy.GraphAppendingTracer)  # noqa: E402,I001  (after GraphModule: they build on it)
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy, TraceError
from .subgraph_rewriter import replace_pattern
from .tracer import Tracer, symbolic_trace, wrap

__all__ = ["Graph", "GraphModule", "Interpreter", "Transformer", "Node", "Proxy", "TraceError", "Tracer",
           "symbolic_trace", "wrap", "replace_pattern", "map_arg", "node", "proxy", "passes", "experimental"]
