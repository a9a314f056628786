"""Recording a forward into a torch.fx Graph by running it on the example inputs.

The same wrappers as rawdev.onnx's exporter (rawdev/onnx/tracer.py: rawdev's public op entry points, Module.__call__
traced through, autograd Functions and view ops as the safety net): each public op the program calls on a traced
tensor runs as usual and becomes one node — ``call_method`` for a Tensor method, ``call_function`` for a rawdev
function — whose arguments are the nodes of traced tensors, ``get_attr`` nodes for the model's parameters and
buffers (and for tensors the forward made from nothing, kept as constants), and plain values for the rest. Shapes
are read from the example inputs, so Python control flow on sizes is specialized, as torch.export specializes
static shapes; control flow on a traced tensor's *values* (``if x.sum() > 0``, ``x.item()``) cannot be recorded
and raises, as torch.export does.
"""
from __future__ import annotations

import inspect
import operator
from typing import Any

from ..fx import Graph
from ..onnx.tracer import Tracer as _OpTracer
from ..onnx.tracer import _tensors

__all__ = ["Recorder", "DataDependentError", "SymInt"]

# Tensor dunders recorded as the operator functions fx graphs use (x + y is operator.add(x, y))
_OPERATORS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv", "floordiv": "floordiv",
              "mod": "mod", "pow": "pow", "matmul": "matmul", "and": "and_", "or": "or_", "xor": "xor",
              "lshift": "lshift", "rshift": "rshift", "neg": "neg", "pos": "pos", "invert": "invert",
              "abs": "abs", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq", "ne": "ne",
              "getitem": "getitem", "setitem": "setitem"}
# reading a traced tensor's values into Python: the control flow that follows cannot be recorded
_VALUE_READS = ("__bool__", "item", "tolist", "__int__", "__float__", "__index__", "numpy")


class SymInt(int):
    """A size of a traced tensor, as the program reads it (``x.shape[0]``, ``B, T, C = x.size()``): the example's
    int for Python, plus the graph node that computes it at run time, so that ops taking it (``x.view(B, -1)``,
    ``torch.arange(T)``) are recorded with the size of the tensors they meet, not the example's. Arithmetic on
    SymInts records its node too; comparisons and int() give plain values (the graph then holds the example's)."""

    node: Any
    recorder: Any

    @staticmethod
    def make(value: int, node: Any, recorder: Any) -> SymInt:
        s = SymInt(value)
        s.node, s.recorder = node, recorder
        return s


def _sym_binary(op: Any, reflected: bool = False) -> Any:
    def f(self: SymInt, other: Any) -> Any:
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        value = op(int(a), int(b))
        if not isinstance(value, int):
            return value
        rec = self.recorder
        node = rec.graph.call_function(op, (rec.node_of(a), rec.node_of(b)))
        rec.sym_nodes.add(node)
        return SymInt.make(value, node, rec)
    return f


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("floordiv", operator.floordiv), ("mod", operator.mod)):
    setattr(SymInt, f"__{_name}__", _sym_binary(_op))
    setattr(SymInt, f"__r{_name}__", _sym_binary(_op, reflected=True))


def _sym_neg(self: SymInt) -> SymInt:
    node = self.recorder.graph.call_function(operator.neg, (self.node,))
    self.recorder.sym_nodes.add(node)
    return SymInt.make(-int(self), node, self.recorder)


SymInt.__neg__ = _sym_neg  # type: ignore[method-assign,assignment]


class DataDependentError(RuntimeError):
    """The forward branched on, or read into Python, the values of a tensor computed from the inputs."""


class Recorder(_OpTracer):
    """The state of one torch.export capture: the fx Graph, each traced tensor's node, the model's attribute
    names."""

    def __init__(self, params: dict[int, tuple[str, Any]]) -> None:
        super().__init__(Graph(), params)
        self.constants: dict[str, Any] = {}
        self._attr_nodes: dict[str, Any] = {}
        self.symbolic_sizes = False      # sizes are SymInts (some input dimension is dynamic)
        self.module_paths: dict[int, str] = {}    # id(submodule) -> its path (the modules recorded whole)
        self.modules: dict[str, Any] = {}         # path -> module, of the call_module nodes
        self.sym_nodes: set[Any] = set()

    # ------------------------------------------------------------------ values
    def node_of(self, x: Any) -> Any:
        """The graph argument for x: a traced tensor's node, a get_attr node for a parameter, buffer or constant
        tensor, containers mapped element by element, anything else as it is."""
        from ..tensor import Tensor
        if isinstance(x, SymInt) and getattr(x, "recorder", None) is self:
            return x.node
        if isinstance(x, Tensor):
            hit = self.values.get(id(x))
            if hit is not None:
                return hit[0]
            p = self.params.get(id(x))
            if p is not None:
                return self._attr(p[0])
            name = f"_tensor_constant{len(self.constants)}"
            self.constants[name] = x.detach()
            self.values[id(x)] = (self._attr(name), x)
            return self.values[id(x)][0]
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*[self.node_of(a) for a in x])
        if isinstance(x, (tuple, list)):
            return type(x)(self.node_of(a) for a in x)
        if isinstance(x, dict):
            return {k: self.node_of(v) for k, v in x.items()}
        if isinstance(x, slice):
            return slice(self.node_of(x.start), self.node_of(x.stop), self.node_of(x.step))
        return x

    def _attr(self, name: str) -> Any:
        if name not in self._attr_nodes:
            self._attr_nodes[name] = self.graph.get_attr(name)
        return self._attr_nodes[name]

    def bind_outputs(self, out: Any, node: Any) -> None:
        """Bind out's tensors to node (a tensor) or to getitem nodes of it (tuples, lists, nested)."""
        from ..tensor import Tensor
        if isinstance(out, Tensor):
            self.values[id(out)] = (node, out)
        elif isinstance(out, (tuple, list)):
            for i, o in enumerate(out):
                if _tensors(o, []):
                    self.bind_outputs(o, self.graph.call_function(operator.getitem, (node, i)))

    # ------------------------------------------------------------------ recording
    def record_call(self, raw: Any, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    swap: bool = False) -> Any:
        """Run raw(*args, **kwargs) (unrecorded inside), then add its node; swap: a reflected operator
        (`2 - x` reaches Tensor.__rsub__(x, 2)), recorded as operator.sub(2, x)."""
        self.depth += 1
        try:
            out = raw(*args, **kwargs)
        finally:
            self.depth -= 1
        node_args = (args[1], args[0]) + tuple(args[2:]) if swap else tuple(args)
        node = self.graph.create_node(kind, target, self.node_of(node_args), self.node_of(dict(kwargs)))
        if target is not operator.setitem:   # x[i] = v returns None; x's node is the written value afterwards
            self.bind_outputs(out, node)
        return out

    def touches(self, args: Any, kwargs: Any) -> bool:
        return super().touches(args, kwargs) or (self.symbolic_sizes and _has_sym((args, kwargs)))

    def size_of(self, t: Any, dim: int | None) -> Any:
        """t.size(dim) / t.size() of a traced tensor: SymInts whose nodes read the size at run time."""
        node = self.values[id(t)][0]
        shape = tuple(t._shape)
        if dim is not None:
            d = dim + len(shape) if dim < 0 else dim
            n = self.graph.call_method("size", (node, d))
            self.sym_nodes.add(n)
            return SymInt.make(shape[d], n, self)
        from ..tensor.size import Size
        out = []
        for d, v in enumerate(shape):
            n = self.graph.call_method("size", (node, d))
            self.sym_nodes.add(n)
            out.append(SymInt.make(v, n, self))
        return tuple.__new__(Size, out)

    def drop_unused_sizes(self) -> None:
        """Remove size reads and their arithmetic that no recorded op used (only those: an in-place op's result
        may be unused and must stay)."""
        for node in reversed(list(self.graph.nodes)):
            if node in self.sym_nodes and not node.users:
                self.graph.erase_node(node)

    def module_emitter(self, mod: Any) -> Any:
        """Every module's forward is traced through to its ops, except the recurrent layers, whose forward runs
        rawdev's fused cell kernels below the public ops: they are one call_module node."""
        from ..nn.layers import rnn
        if type(mod) not in (rnn.LSTM, rnn.GRU, rnn.RNN) or id(mod) not in self.module_paths:
            return None
        path = self.module_paths[id(mod)]

        def emit(tr: Recorder, m: Any, out: Any, *args: Any, **kwargs: Any) -> list[Any]:
            node = tr.graph.call_module(path, tr.node_of(tuple(args)), tr.node_of(dict(kwargs)))
            tr.modules[path] = m
            return _leaves(out, node, tr.graph)
        return emit

    def _stray(self, what: str) -> None:
        raise NotImplementedError(f"torch.export: the op {what} ran on a traced tensor through a path rawdev does "
                                  f"not record (a function captured before the export, or a rawdev internal); call "
                                  f"it through rawdev's public names (rawdev.<op>, F.<op>, Tensor.<op>)")

    def _wrap(self, raw: Any, canon: str, what: str) -> Any:
        tracer = self
        method = what.startswith("Tensor.")
        name = what.split(".")[-1]
        swap = False
        if method and name.startswith("__r") and name[3:-2] in _OPERATORS:
            kind, target, swap = "call_function", getattr(operator, _OPERATORS[name[3:-2]]), True
        elif method and name[2:-2] in _OPERATORS:
            kind, target = "call_function", getattr(operator, _OPERATORS[name[2:-2]])
        elif method:
            kind, target = "call_method", name
        else:
            kind, target = "call_function", raw

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if tracer.depth or not tracer.touches(args, kwargs):
                return raw(*args, **kwargs)
            return tracer.record_call(raw, kind, target, args, kwargs, swap)
        wrapper.__name__ = getattr(raw, "__name__", canon)
        wrapper.__doc__ = raw.__doc__
        try:
            wrapper.__signature__ = inspect.signature(raw)  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            pass
        return wrapper

    def _install(self) -> None:
        super()._install()
        from ..tensor import Tensor
        tracer = self
        for name in _VALUE_READS:
            raw = getattr(Tensor, name, None)
            if raw is None:
                continue

            def guard(t: Any, *a: Any, _raw: Any = raw, _name: str = name, **k: Any) -> Any:
                if tracer.depth == 0 and tracer.traced(t):
                    raise DataDependentError(
                        f"torch.export: Could not guard on data-dependent expression: the forward called "
                        f"Tensor.{_name}() on a tensor computed from the inputs, so the Python code that follows "
                        f"depends on its values, which the exported graph cannot record; rewrite it with tensor ops "
                        f"(torch.where, masks) or torch.cond-free arithmetic")
                return _raw(t, *a, **k)
            self._set(Tensor, name, guard)
        from ..ops import torch_ops

        def op_call(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if tracer.depth or not tracer.touches(args, kwargs):
                return op._op(*args, **kwargs)
            return tracer.record_call(op._op, "call_function", op, args, kwargs)   # torch.ops.<ns>.<op>: one node
        self._set(torch_ops, "_call_hook", op_call)
        if not self.symbolic_sizes:
            return
        raw_size = Tensor.__dict__["size"]
        raw_shape = Tensor.__dict__["shape"]

        def size(t: Any, dim: int | None = None) -> Any:
            if tracer.depth == 0 and tracer.traced(t):
                return tracer.size_of(t, dim)
            return raw_size(t, dim)

        def shape(t: Any) -> Any:
            if tracer.depth == 0 and tracer.traced(t):
                return tracer.size_of(t, None)
            return raw_shape.__get__(t)
        self._set(Tensor, "size", size)
        self._set(Tensor, "shape", property(shape))


def _has_sym(obj: Any) -> bool:
    if isinstance(obj, SymInt):
        return True
    if isinstance(obj, (tuple, list)):
        return any(_has_sym(o) for o in obj)
    if isinstance(obj, dict):
        return any(_has_sym(o) for o in obj.values())
    return False


def _leaves(out: Any, node: Any, graph: Any) -> list[Any]:
    """The nodes of out's tensors, in _tensors order: node itself for a tensor, getitem chains into tuples."""
    from ..tensor import Tensor
    if isinstance(out, Tensor):
        return [node]
    found: list[Any] = []
    if isinstance(out, (tuple, list)):
        for i, o in enumerate(out):
            if _tensors(o, []):
                found += _leaves(o, graph.call_function(operator.getitem, (node, i)), graph)
    return found
