"""`torch.fx.proxy`: Proxy (a value being traced: operations on it record Nodes), TracerBase (what records them)
and GraphAppendingTracer (records into an existing Graph)."""
from __future__ import annotations

import dis
import inspect
import operator
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

from . import patching
from .graph import Graph
from .node import Argument, Node, Target, map_aggregate

__all__ = ["TraceError", "TracerBase", "GraphAppendingTracer", "Proxy", "Attribute"]


class TraceError(ValueError):
    """Raised when traced code does what a trace cannot record (control flow on a traced value)."""


class TracerBase:
    """What Proxies record into: `graph`, and create_node/create_proxy/create_arg that subclasses may override."""
    graph: Graph

    def create_node(self, kind: str, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Argument],
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """Insert a node into self.graph (override to tag or reroute nodes).

        Args:
            kind: the opcode.
            target: the target.
            args: positional arguments (already Nodes, not Proxies).
            kwargs: keyword arguments.
            name: a wanted name.
            type_expr: an optional annotation.

        Returns:
            The Node.

        Example:
            >>> tracer.create_node("call_function", torch.relu, (x,), {})   # doctest: +SKIP
        """
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        """Wrap node in a Proxy of this tracer."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any],
                     name: str | None = None, type_expr: Any | None = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Record an operation whose arguments may hold Proxies, and return a Proxy of its result.

        Args:
            kind: the opcode.
            target: the target.
            args: positional arguments (Proxies, values, nested structures).
            kwargs: keyword arguments.
            name: a wanted name.
            type_expr: an optional annotation.
            proxy_factory_fn: builds the Proxy from the node (default: self.proxy).

        Returns:
            The Proxy of the new node.

        Example:
            >>> p = tracer.create_proxy("call_function", torch.relu, (x_proxy,), {})   # doctest: +SKIP
        """
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Argument:
        """Turn a value into what a Node stores: a Proxy becomes its Node, structures are walked, other values
        are kept as constants.

        Args:
            a: the value.

        Returns:
            The argument to store.

        Example:
            >>> tracer.create_arg((proxy, 1))   # doctest: +SKIP
        """
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            t = tuple(self.create_arg(e) for e in a)
            return type(a)(*t) if hasattr(a, "_fields") else t
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    raise NotImplementedError(f"Keys of a dict argument must be strings, not {type(k)}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        return a

    def to_bool(self, obj: Proxy) -> bool:
        """Called when a Proxy is used as a condition: a trace cannot follow it."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator[Any]:
        """Called when a Proxy is iterated outside `a, b = proxy` unpacking."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Any:
        """Called for `**proxy`: records a call of .keys()."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (at its insertion point): Proxy(node, GraphAppendingTracer(g)).

    Args:
        graph: the graph to record into.

    Example:
        >>> tracer = GraphAppendingTracer(gm.graph)   # doctest: +SKIP
        >>> y = torch.relu(Proxy(x_node, tracer))
    """

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.scope = None
        self.tensor_attrs: dict[int, tuple[Any, str]] = {}


class Proxy:
    """A value under tracing: every operation on it (operators, method calls, indexing, attribute reads,
    rawdev functions called with it) is recorded as a Node in its tracer's graph, and returns a new Proxy.

    Args:
        node: the node this proxy stands for.
        tracer: the tracer to record into (default: a GraphAppendingTracer of node's graph).

    Example:
        >>> y = Proxy(x_node, tracer) + 1   # records operator.add   # doctest: +SKIP
    """
    tracer: TracerBase
    node: Node

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.__dict__["tracer"] = tracer
        self.__dict__["node"] = node
        # inside Tracer.trace the trace itself holds the patch, so proxies left in a traceback do not keep it
        holds = not getattr(tracer, "_tracing", False)
        if holds:
            patching.acquire()
        self.__dict__["_holds_patch"] = holds

    def __del__(self) -> None:
        if self.__dict__.get("_holds_patch"):
            self.__dict__["_holds_patch"] = False
            try:
                patching.release()
            except Exception:   # noqa: BLE001  (interpreter shutdown: modules may already be torn down)
                pass

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)   # Python's protocols (copy, numpy, pickle) must not see a recorded getattr
        return Attribute(self, k)

    def __setattr__(self, k: str, v: Any) -> None:
        self.__dict__[k] = v

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Any]:
        # `a, b = proxy` is allowed: the caller's next instruction says how many values it unpacks
        frame = inspect.currentframe()
        assert frame is not None and frame.f_back is not None
        calling = frame.f_back
        try:
            insts = list(dis.get_instructions(calling.f_code))
            if sys.version_info >= (3, 11):
                idx = bisect_left(insts, calling.f_lasti, key=lambda x: x.offset)
            else:
                idx = calling.f_lasti // 2
        finally:
            del frame, calling   # a frame referring to itself would keep this proxy (and the patch) until gc
        inst = insts[idx] if idx < len(insts) else None
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":
            return (self.tracer.create_proxy("call_function", operator.getitem, (self, i), {})
                    for i in range(inst.argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self) -> Any:
        """Recorded `.keys()` (for `**proxy`)."""
        return self.tracer.keys(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Proxy:
        return self

    def __copy__(self) -> Proxy:
        return self   # a copy made without __init__ would release the patch it never acquired


class Attribute(Proxy):
    """`proxy.name`: a getattr node, created only if the attribute is used as a value (a call records
    call_method instead)."""
    root: Proxy
    attr: str
    _node: Node | None

    def __init__(self, root: Proxy, attr: str) -> None:
        self.__dict__["root"] = root
        self.__dict__["attr"] = attr
        self.__dict__["tracer"] = root.tracer
        self.__dict__["_node"] = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self.__dict__["_node"] = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr),
                                                              {}).node
        assert self._node is not None
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _binary(name: str, fn: Callable[[Any, Any], Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def forward(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", fn, (self, other), {})

    def reflected(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", fn, (other, self), {})
    forward.__name__, reflected.__name__ = f"__{name}__", f"__r{name}__"
    return forward, reflected


def _unary(fn: Callable[[Any], Any]) -> Callable[..., Any]:
    def method(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", fn, (self,), {})
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and", "or",
              "xor"):
    _fwd, _refl = _binary(_name, getattr(operator, _name + "_" if _name in ("and", "or") else _name))
    setattr(Proxy, f"__{_name}__", _fwd)
    setattr(Proxy, f"__r{_name}__", _refl)
for _name in ("lt", "le", "gt", "ge", "eq", "ne", "getitem"):
    setattr(Proxy, f"__{_name}__", _binary(_name, getattr(operator, _name))[0])
for _name in ("neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _unary(getattr(operator, _name)))
del _name, _fwd, _refl


patching.proxy_type = Proxy


def map_proxy_to_node(a: Any) -> Any:
    """A structure of Proxies as the same structure of their Nodes."""
    return map_aggregate(a, lambda x: x.node if isinstance(x, Proxy) else x)
