"""A Graph as Python source: the `forward` a GraphModule compiles, written as torch.fx writes it
(`add = x + y;  x = y = None`: each value is dropped right after its last use, so memory is freed as early as
the eager program would free it)."""
from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple

from .. import dtypes
from ..device import device
from ..dtypes import dtype
from .naming import qualified_name
from .node import Node
from .patching import top_namespace

__all__ = ["PythonCode", "python_code"]

_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
           operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.lshift: "<<",
           operator.rshift: ">>", operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lt: "<",
           operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==", operator.ne: "!="}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


class PythonCode(NamedTuple):
    """The generated source and the globals it must be run with."""
    src: str
    globals: dict[str, Any]


class _Globals:
    def __init__(self) -> None:
        self.table: dict[str, Any] = {"torch": top_namespace(), "operator": operator, "inf": math.inf, "nan": math.nan}
        self._by_id: dict[int, str] = {}

    def name_of(self, obj: Any) -> str:
        # a function or constant the code refers to: `torch.x`/`operator.x` as is, others under a global name
        if id(obj) in self._by_id:
            return self._by_id[id(obj)]
        q = qualified_name(obj) if callable(obj) else None
        if q is not None and (q.startswith("torch.") or q.startswith("operator.") or "." not in q):
            name = q
        else:
            base = (q or f"_fx_const_{type(obj).__name__}").replace(".", "_").replace("<", "_").replace(">", "_")
            name, i = base, 0
            while name in self.table and self.table[name] is not obj:
                i += 1
                name = f"{base}_{i}"
            self.table[name] = obj
        self._by_id[id(obj)] = name
        return name


def _literal(arg: Any, g: _Globals) -> str:
    if isinstance(arg, Node):
        return arg.name
    if isinstance(arg, tuple):
        if hasattr(arg, "_fields"):
            return f"{g.name_of(type(arg))}(" + ", ".join(_literal(a, g) for a in arg) + ")"
        inner = ", ".join(_literal(a, g) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_literal(a, g) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k!r}: {_literal(v, g)}" for k, v in arg.items()) + "}"
    if isinstance(arg, slice):
        return f"slice({_literal(arg.start, g)}, {_literal(arg.stop, g)}, {_literal(arg.step, g)})"
    if arg is Ellipsis:
        return "..."
    if isinstance(arg, float) and (math.isinf(arg) or math.isnan(arg)):
        return repr(arg)   # inf / -inf / nan, bound in the globals
    if arg is None or isinstance(arg, (bool, int, float, str, complex)):
        return repr(arg)
    if isinstance(arg, dtype):
        for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
                     "bool"):
            if getattr(dtypes, name, None) is arg:
                return f"torch.{name}"
    if isinstance(arg, device):
        return f"torch.device({str(arg)!r})"
    return g.name_of(arg)


def _path(root: str, target: str) -> str:
    expr = root
    for atom in target.split("."):
        expr = f"{expr}.{atom}" if atom.isidentifier() else f"getattr({expr}, {atom!r})"
    return expr


def python_code(nodes: list[Node], root_module: str = "self") -> PythonCode:
    """Write the forward function of these nodes (a Graph's, in order).

    Args:
        nodes: the graph's nodes.
        root_module: the name of the module the code reads attributes from.

    Returns:
        PythonCode(src, globals).

    Example:
        >>> print(python_code(list(graph.nodes)).src)   # doctest: +SKIP
    """
    g = _Globals()
    params: list[str] = []
    body: list[str] = []
    last_use: dict[Node, Node] = {}
    for node in nodes:
        for n in node.all_input_nodes:
            last_use[n] = node
    freed_after: dict[Node, list[Node]] = {}
    for value, user in last_use.items():
        freed_after.setdefault(user, []).append(value)

    def call_args(args, kwargs) -> str:
        parts = [_literal(a, g) for a in args] + [f"{k} = {_literal(v, g)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    for node in nodes:
        op, target = node.op, node.target
        if op == "placeholder":
            assert isinstance(target, str)
            default = f" = {_literal(node.args[0], g)}" if node.args else ""
            params.append(f"{target}{default}")
            if target.lstrip("*") != node.name:
                body.append(f"{node.name} = {target.lstrip('*')}")
            continue
        if op == "output":
            body.append(f"return {_literal(node.args[0], g)}")
            continue
        if op == "get_attr":
            line = f"{node.name} = {_path(root_module, str(target))}"
        elif op == "call_module":
            line = f"{node.name} = {_path(root_module, str(target))}({call_args(node.args, node.kwargs)})"
        elif op == "call_method":
            line = (f"{node.name} = {_literal(node.args[0], g)}.{target}"
                    f"({call_args(node.args[1:], node.kwargs)})")
        elif target in _BINARY and len(node.args) == 2 and not node.kwargs:
            line = f"{node.name} = {_literal(node.args[0], g)} {_BINARY[target]} {_literal(node.args[1], g)}"
        elif target in _UNARY and len(node.args) == 1 and not node.kwargs:
            line = f"{node.name} = {_UNARY[target]}{_literal(node.args[0], g)}"
        elif target is operator.getitem and len(node.args) == 2 and not node.kwargs:
            line = f"{node.name} = {_literal(node.args[0], g)}[{_literal(node.args[1], g)}]"
        elif target is getattr and len(node.args) == 2 and isinstance(node.args[1], str) \
                and node.args[1].isidentifier() and not node.kwargs:
            line = f"{node.name} = {_literal(node.args[0], g)}.{node.args[1]}"
        else:
            line = f"{node.name} = {g.name_of(target)}({call_args(node.args, node.kwargs)})"
        dead = [n.name for n in freed_after.get(node, [])]
        if not node.users:
            dead.append(node.name)   # a value nothing reads (an in-place call kept for its effect)
        if dead:
            line += ";  " + " = ".join(dead) + " = None"
        body.append(line)
    signature = ", ".join([root_module] + params)
    src = f"\n\n\ndef forward({signature}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    return PythonCode(src, g.table)
