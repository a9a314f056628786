"""`torch._dynamo.explain(fn)(*args)`: where a function's graph capture would break, and what each graph holds.

rawdev compiles nothing (torch.compile runs eagerly), but it can answer the question explain answers: the function
runs once on the given inputs while rawdev's public ops are recorded (rawdev/export/recorder.py). Where the Python
code reads a traced tensor's value (``if b.sum() < 0``, ``x.item()``) TorchDynamo breaks the graph: here the read
is answered with the real value, the break is noted with its reason and the user's line, and recording goes on
in a new graph whose inputs are the earlier graphs' tensors it uses. The result lists the graphs (fx GraphModules),
their ops and the break reasons, as PyTorch's ExplainOutput.
"""
from __future__ import annotations

import functools
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..export.recorder import _VALUE_READS, Recorder

__all__ = ["explain", "ExplainOutput", "GraphCompileReason"]


@dataclass
class GraphCompileReason:
    """Why a graph ended: ``reason`` and the ``user_stack`` (traceback.FrameSummary list) of the line."""
    reason: str
    user_stack: list[Any]
    graph_break: bool = True


@dataclass
class ExplainOutput:
    """What explain found: the graphs, how many, the breaks and their reasons, the ops of each graph."""
    graphs: list[Any] = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list[GraphCompileReason] = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list[list[Any]] = field(default_factory=list)
    out_guards: list[Any] = field(default_factory=list)
    compile_times: str = ""

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, r in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {r.reason}", "    User Stack:"]
            lines += [f"      <FrameSummary file {f.filename}, line {f.lineno} in {f.name}>" for f in r.user_stack]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops per Graph {i}:")
            lines += [f"    {_op_name(op)}" for op in ops]
        return "\n".join(lines) + "\n"


def _op_name(target: Any) -> str:
    if isinstance(target, str):
        return f"<method '{target}'>"
    return f"<function {getattr(target, '__module__', '?')}.{getattr(target, '__name__', target)}>"


class _Segments(Recorder):
    """A Recorder that, instead of raising on a value read, closes the current graph and opens the next."""

    def __init__(self) -> None:
        super().__init__({})
        self.graphs = [self.graph]
        self.reasons: list[GraphCompileReason] = []
        self.owner: dict[Any, int] = {}       # node -> index of the graph it is in
        self.imported: list[dict[int, Any]] = [{}]   # per graph: id(node of an earlier graph) -> placeholder
        self.exported: list[list[Any]] = [[]]        # per graph: its nodes later graphs use

    def node_of(self, x: Any) -> Any:
        from ..tensor import Tensor
        if isinstance(x, Tensor) and id(x) in self.values:
            node = self.values[id(x)][0]
            g = self.owner.get(node, len(self.graphs) - 1)
            here = len(self.graphs) - 1
            if g != here:
                ph = self.imported[here].get(id(node))
                if ph is None:
                    ph = self.graph.placeholder(f"graph{g}_{node.name}")
                    self.imported[here][id(node)] = ph
                    self.owner[ph] = here
                    if node not in self.exported[g]:
                        self.exported[g].append(node)
                return ph
            return node
        return super().node_of(x)

    def record_call(self, raw: Any, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    swap: bool = False) -> Any:
        out = super().record_call(raw, kind, target, args, kwargs, swap)
        here = len(self.graphs) - 1
        for n in self.graph.nodes:
            self.owner.setdefault(n, here)
        return out

    def graph_break(self, what: str) -> None:
        from ..fx import Graph
        stack = [f for f in traceback.extract_stack() if "/rawdev/" not in f.filename.replace("\\", "/")]
        self.reasons.append(GraphCompileReason(f"generic_jump: the code reads a tensor's value ({what})",
                                               stack[-1:]))
        self.graph = Graph()
        self.graphs.append(self.graph)
        self.imported.append({})
        self.exported.append([])
        self._attr_nodes = {}

    def _install(self) -> None:
        super()._install()
        from ..onnx.tracer import _MISSING
        from ..tensor import Tensor
        tracer = self
        for name in _VALUE_READS:
            # the guard the Recorder installed raises; in its place, one that breaks the graph and answers
            original = next((old for owner, n, old in self._undo if owner is Tensor and n == name), _MISSING)
            if original is _MISSING:
                continue

            def breaker(t: Any, *a: Any, _raw: Any = original, _name: str = name, **k: Any) -> Any:
                if tracer.depth or not tracer.traced(t):
                    return _raw(t, *a, **k)
                tracer.graph_break(f"Tensor.{_name}")
                tracer.depth += 1      # one break per read: bool() reading item() inside is the same read
                try:
                    return _raw(t, *a, **k)
                finally:
                    tracer.depth -= 1
            self._set(Tensor, name, breaker)


def explain(f: Any, *extra_args: Any, **extra_kwargs: Any) -> Any:
    """``torch._dynamo.explain(fn)(*args, **kwargs)``: run fn once, recording its ops, and report the graphs a
    graph capture would make and where it would break.

    Args:
        f: the function or module.

    Returns:
        A function of fn's arguments returning an ExplainOutput.

    Example:
        >>> print(torch._dynamo.explain(bar)(torch.randn(10), torch.randn(10)))
    """
    if extra_args or extra_kwargs:   # the old form explain(fn, *args)
        return explain(f)(*extra_args, **extra_kwargs)

    @functools.wraps(f)
    def inner(*args: Any, **kwargs: Any) -> ExplainOutput:
        from ..autograd.grad_mode import no_grad
        from ..fx import GraphModule
        from ..nn import Module
        from ..onnx.tracer import _tensors
        rec = _Segments()
        if isinstance(f, Module):
            rec.params = {id(p): (n, p) for n, p in list(f.named_parameters()) + list(f.named_buffers())}
        for i, t in enumerate(_tensors((args, kwargs), [])):
            node = rec.graph.placeholder(f"l_x{i}_")
            rec.owner[node] = 0
            rec.values[id(t)] = (node, t)
        with no_grad(), rec:
            if isinstance(f, Module):
                rec.patch_module_attributes(f)
            out = f(*args, **kwargs)
        final = rec.node_of(out)
        last = len(rec.graphs) - 1
        for g, graph in enumerate(rec.graphs):
            if g == last:
                graph.output(final)
            else:
                graph.output(tuple(rec.exported[g]))
        graphs, ops = [], []
        root: dict[str, Any] = dict(rec.constants)
        root.update({name: p for _, (name, p) in rec.params.items()})
        for graph in rec.graphs:
            used = {n.target for n in graph.nodes if n.op == "get_attr"}
            graphs.append(GraphModule({k: v for k, v in root.items() if k in used}, graph))
            ops.append([n.target for n in graph.nodes if n.op in ("call_function", "call_method")])
        keep = [i for i, o in enumerate(ops) if o]
        return ExplainOutput(graphs=[graphs[i] for i in keep], graph_count=len(keep),
                             graph_break_count=len(rec.reasons), break_reasons=rec.reasons,
                             op_count=sum(len(o) for o in ops), ops_per_graph=[ops[i] for i in keep])
    return inner
