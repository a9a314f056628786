"""`torch.fx.Graph`: the ordered list of Nodes of one function, with the methods that build, edit, check,
copy and print it."""
from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .codegen import PythonCode, python_code
from .naming import Namespace, qualified_name, target_to_str
from .node import Argument, Node, Target, map_arg

__all__ = ["Graph", "PythonCode"]

# placeholder()'s "no default": inspect.Signature.empty itself would read as no default to inspect, which then
# sees a parameter without a default after ones with defaults.
_NO_DEFAULT: Any = type("_NoDefault", (), {"__repr__": lambda self: "<no default>"})()


class _NodeList:
    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        cur = root._prev if self._reverse else root._next
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = cur._prev if self._reverse else cur._next

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._reverse))


class Graph:
    """A function as a list of Nodes: placeholders (the inputs), operations, one output.

    Args:
        owning_module: the GraphModule this graph belongs to (set by GraphModule).
        tracer_cls: the Tracer class that produced it.
        tracer_extras: kept as torch.fx keeps it.

    Example:
        >>> g = Graph()
        >>> x = g.placeholder("x")
        >>> g.output(g.call_function(torch.relu, (x,)))   # doctest: +SKIP
    """

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None,
                 tracer_extras: dict[str, Any] | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._graph_namespace = Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._insert: Callable[[Node], None] = self._root.prepend

    @property
    def owning_module(self) -> Any:
        """The GraphModule that owns this graph, or None."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod: Any) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order (iterating goes on correctly past a node erased or inserted meanwhile)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target | None = None) -> list[Node]:
        """The nodes with this opcode (and target, when given).

        Args:
            op: the opcode.
            target: the target to match, or None for any.

        Returns:
            A list of nodes in graph order.

        Example:
            >>> g.find_nodes(op="placeholder")   # doctest: +SKIP
        """
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ------------------------------------------------------------------ creating nodes
    def create_node(self, op: str, target: Target, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        """Create a node at the current insertion point (the end, unless inside inserting_before/after).

        Args:
            op: the opcode.
            target: the target.
            args: positional arguments.
            kwargs: keyword arguments.
            name: the name wanted (made unique); by default derived from target.
            type_expr: an optional type annotation.

        Returns:
            The new Node.

        Example:
            >>> n = g.create_node("call_function", torch.relu, (x,))   # doctest: +SKIP
        """
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else target_to_str(target)
        unique = self._graph_namespace.create_name(candidate)
        n = Node(self, unique, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any | None = None,
                    default_value: Any = _NO_DEFAULT) -> Node:
        """An input of the function.

        Args:
            name: the parameter name.
            type_expr: an optional annotation.
            default_value: the parameter's default, if it has one.

        Returns:
            The placeholder Node.

        Example:
            >>> x = g.placeholder("x")   # doctest: +SKIP
        """
        args = () if default_value is _NO_DEFAULT or default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Read an attribute (a parameter, buffer or submodule) of the owning module by its dotted path.

        Args:
            qualified_name: e.g. "linear.weight".
            type_expr: an optional annotation.

        Returns:
            The get_attr Node.

        Example:
            >>> w = g.get_attr("linear.weight")   # doctest: +SKIP
        """
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, type_expr: Any | None = None) -> Node:
        """Call a submodule of the owning module by its dotted path.

        Args:
            module_name: e.g. "layer1.0.conv1".
            args: positional arguments.
            kwargs: keyword arguments.
            type_expr: an optional annotation.

        Returns:
            The call_module Node.

        Example:
            >>> y = g.call_module("linear", (x,))   # doctest: +SKIP
        """
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, type_expr: Any | None = None) -> Node:
        """Call a method on args[0].

        Args:
            method_name: e.g. "relu".
            args: the object first, then the method's arguments.
            kwargs: keyword arguments.
            type_expr: an optional annotation.

        Returns:
            The call_method Node.

        Example:
            >>> y = g.call_method("view", (x, -1))   # doctest: +SKIP
        """
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable[..., Any], args: tuple[Argument, ...] | None = None,
                      kwargs: dict[str, Argument] | None = None, type_expr: Any | None = None) -> Node:
        """Call a free function.

        Args:
            the_function: the callable (torch.add, operator.add, ...).
            args: positional arguments.
            kwargs: keyword arguments.
            type_expr: an optional annotation.

        Returns:
            The call_function Node.

        Example:
            >>> y = g.call_function(torch.relu, (x,))   # doctest: +SKIP
        """
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        """The function's return value.

        Args:
            result: a node, or a structure holding nodes.
            type_expr: an optional annotation.

        Returns:
            The output Node.

        Example:
            >>> g.output(y)   # doctest: +SKIP
        """
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """Copy a node of another graph into this one.

        Args:
            node: the node to copy.
            arg_transform: maps each Node in its args/kwargs to this graph's value for it.

        Returns:
            The new node (same op, target, meta; a unique name).

        Example:
            >>> new = g.node_copy(old, lambda n: env[n])   # doctest: +SKIP
        """
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False) -> Any:
        """Copy every node of g (but its output) into this graph.

        Args:
            g: the source graph.
            val_map: filled with old node -> new node (entries already there are used as given).
            return_output_node: return the output node itself rather than its mapped value.

        Returns:
            The value g's output node returns, mapped into this graph.

        Example:
            >>> out = new_graph.graph_copy(old_graph, {})   # doctest: +SKIP
        """
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict[int, Any]) -> Graph:
        g = Graph(tracer_cls=self._tracer_cls)
        val_map: dict[Node, Node] = {}
        out = g.graph_copy(self, val_map, return_output_node=True)
        if out is not None:
            rv, output_node = out
            g.output(rv, type_expr=output_node.type)
        return g

    # ------------------------------------------------------------------ editing
    @contextmanager
    def inserting_before(self, n: Node | None = None) -> Iterator[None]:
        """Within the with-block, new nodes go just before n (the start of the graph when n is None).

        Args:
            n: the node to insert before.

        Returns:
            A context manager.

        Example:
            >>> with g.inserting_before(node):   # doctest: +SKIP
            ...     g.call_function(torch.relu, (x,))
        """
        if n is None:
            with self.inserting_after(self._root):
                yield
            return
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        previous, self._insert = self._insert, n.prepend
        try:
            yield
        finally:
            self._insert = previous

    @contextmanager
    def inserting_after(self, n: Node | None = None) -> Iterator[None]:
        """Within the with-block, new nodes go just after n, in order (the end of the graph when n is None).

        Args:
            n: the node to insert after.

        Returns:
            A context manager.

        Example:
            >>> with g.inserting_after(node):   # doctest: +SKIP
            ...     new = g.call_function(torch.bitwise_and, node.args)
        """
        if n is None:
            with self.inserting_before(self._root):
                yield
            return
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        last = [n]

        def insert_after(x: Node) -> None:
            last[0].append(x)
            last[0] = x
        previous, self._insert = self._insert, insert_after
        try:
            yield
        finally:
            self._insert = previous

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node nothing reads any more.

        Args:
            to_erase: the node.

        Returns:
            None

        Raises:
            RuntimeError: when the node still has users.

        Example:
            >>> g.erase_node(bn_node)   # doctest: +SKIP
        """
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs(map_arg(to_erase._args, lambda n: None),
                                     map_arg(to_erase._kwargs, lambda n: None))

    def eliminate_dead_code(self) -> bool:
        """Erase nodes whose value nothing reads (not placeholders, outputs or impure calls), last first.

        Returns:
            Whether anything was erased.

        Example:
            >>> traced.graph.eliminate_dead_code(); traced.recompile()   # doctest: +SKIP
        """
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: each node's inputs are earlier nodes of this graph, names unique,
        one output last, targets of call_module/get_attr exist in the owning module.

        Returns:
            None

        Raises:
            RuntimeError: naming what is wrong.

        Example:
            >>> traced.graph.lint()   # doctest: +SKIP
        """
        seen: set = set()
        names: set = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, "
                                       "but was used as an argument! If you are copying nodes from another graph, "
                                       "make sure to use ``arg_transform`` on node_copy() to remap values")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       "Please check that Nodes in the graph are topologically ordered")
            seen.add(node)
            if node.op == "output" and node._next is not self._root:
                raise RuntimeError("Graph should have exactly one output node, at the end")
            if self._owning_module is not None and node.op in ("get_attr", "call_module"):
                obj = self._owning_module
                for i, atom in enumerate(str(node.target).split(".")):
                    if not hasattr(obj, atom):
                        where = ".".join(str(node.target).split(".")[:i])
                        raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                           f"{atom} of {where or 'root'}")
                    obj = getattr(obj, atom)

    # ------------------------------------------------------------------ code and printing
    def python_code(self, root_module: str) -> PythonCode:
        """The Python source of this graph's function, and the globals it needs.

        Args:
            root_module: the name the code uses for the module (usually "self").

        Returns:
            PythonCode(src, globals).

        Example:
            >>> print(g.python_code("self").src)   # doctest: +SKIP
        """
        return python_code(list(self.nodes), root_module)

    def __str__(self) -> str:
        lines = ["graph():"] + ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table (opcode, name, target, args, kwargs): with the `tabulate` package when
        installed, as PyTorch does, else as plain aligned columns.

        Returns:
            None

        Example:
            >>> traced.graph.print_tabular()   # doctest: +SKIP
        """
        rows = [[n.op, n.name, n.target if isinstance(n.target, str) else qualified_name(n.target),
                 n.args, n.kwargs] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        try:
            from tabulate import tabulate
        except ImportError:
            print(_plain_table(headers, rows))
        else:
            print(tabulate(rows, headers=headers))


def _plain_table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*headers), "  ".join("-" * w for w in widths)] + [fmt.format(*r) for r in cells[1:]]
    return "\n".join(line.rstrip() for line in out)
