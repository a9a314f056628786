"""`torch.fx.node`: one operation of a Graph (Node), and map_arg/map_aggregate over nested arguments."""
from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

__all__ = ["Node", "Target", "Argument", "map_arg", "map_aggregate"]

Target = Callable[..., Any] | str
Argument = Any   # a Node, a literal, or a (nested) tuple/list/dict/slice of them

_OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply fn to every leaf of a nested tuple/list/dict/slice structure, keeping the structure.

    Args:
        a: the (nested) argument.
        fn: called on each leaf.

    Returns:
        The same structure with each leaf replaced by fn(leaf).

    Example:
        >>> map_aggregate((1, [2, 3]), lambda v: v * 10)
        (10, [20, 30])
    """
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)   # a namedtuple keeps its type
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply fn to every Node inside a nested argument structure (other leaves are kept).

    Args:
        a: a Node's args or kwargs, or any part of them.
        fn: called on each Node.

    Returns:
        The structure with each Node replaced by fn(node).

    Example:
        >>> proxy_args = map_arg(node.args, lambda n: Proxy(n, tracer))   # doctest: +SKIP
    """
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


class Node:
    """One operation in a Graph: `op` (placeholder, get_attr, call_function, call_method, call_module, output),
    its `target`, `args`/`kwargs` (which may hold other Nodes), its unique `name`, its `users` and `meta`.

    Nodes form a doubly linked list owned by their Graph; create them with the Graph's methods.

    Args:
        graph: the owning Graph.
        name: the unique name (also the variable name in generated code).
        op: the opcode.
        target: what is called or read (a callable for call_function, a string otherwise).
        args: positional arguments.
        kwargs: keyword arguments.
        return_type: an optional type annotation.

    Example:
        >>> n = graph.call_function(torch.relu, (x_node,))   # doctest: +SKIP
    """

    def __init__(self, graph: Any, name: str, op: str, target: Target, args: tuple[Argument, ...],
                 kwargs: dict[str, Argument], return_type: Any | None = None) -> None:
        if op not in _OPCODES:
            raise ValueError(f"Node opcode must be one of {_OPCODES[:-1]}, got {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{builtins.type(target)} but a Callable is expected")
        if op in ("placeholder", "get_attr", "call_method", "call_module", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{builtins.type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        # a function named while rawdev's functions are wrapped for tracing (patching.py) is stored as itself
        self.target = getattr(target, "__fx_original__", target)
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self._args: tuple[Argument, ...] = ()
        self._kwargs: dict[str, Argument] = {}
        self._update_args_kwargs(map_arg(args, lambda x: x), map_arg(kwargs, lambda x: x))

    # ------------------------------------------------------------------ list links
    @property
    def next(self) -> Node:
        """The next Node in the graph's order."""
        return self._next

    @property
    def prev(self) -> Node:
        """The previous Node in the graph's order."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move x to sit just before this Node.

        Args:
            x: the node to move (of the same graph).

        Returns:
            None

        Example:
            >>> add_node.prepend(new_node)   # doctest: +SKIP
        """
        if self is x:
            raise AssertionError("Cannot prepend a node to itself")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Move x to sit just after this Node.

        Args:
            x: the node to move (of the same graph).

        Returns:
            None

        Example:
            >>> add_node.append(new_node)   # doctest: +SKIP
        """
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        # the node keeps its own _next, so an iteration standing on an erased node goes on to its old successor
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # ------------------------------------------------------------------ arguments and users
    @property
    def args(self) -> tuple[Argument, ...]:
        """The positional arguments; assigning them updates the users of the nodes involved."""
        return self._args

    @args.setter
    def args(self, a: tuple[Argument, ...]) -> None:
        self._update_args_kwargs(map_arg(a, lambda x: x), self._kwargs)

    @property
    def kwargs(self) -> dict[str, Argument]:
        """The keyword arguments; assigning them updates the users of the nodes involved."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict[str, Argument]) -> None:
        self._update_args_kwargs(self._args, map_arg(k, lambda x: x))

    @property
    def all_input_nodes(self) -> list[Node]:
        """The distinct Nodes this node reads, in the order they appear in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set args[idx] (keeping users right).

        Args:
            idx: the position.
            arg: the new argument.

        Returns:
            None

        Example:
            >>> node.update_arg(0, other_node)   # doctest: +SKIP
        """
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set kwargs[key] (keeping users right).

        Args:
            key: the keyword.
            arg: the new argument.

        Returns:
            None

        Example:
            >>> node.update_kwarg("dim", 1)   # doctest: +SKIP
        """
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args: tuple[Argument, ...], new_kwargs: dict[str, Argument]) -> None:
        self._args = new_args
        self._kwargs = new_kwargs
        for old_use in self._input_nodes:
            old_use.users.pop(self)
        self._input_nodes = {}
        map_arg(self._args, self._input_nodes.setdefault)
        map_arg(self._kwargs, self._input_nodes.setdefault)
        for new_use in self._input_nodes:
            new_use.users.setdefault(self)

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this Node read replace_with instead.

        Args:
            replace_with: the node to use instead.
            delete_user_cb: a user is changed only when this returns True for it.
            propagate_meta: copy this node's meta into replace_with's (which must have none).

        Returns:
            The users that were changed.

        Example:
            >>> bn_node.replace_all_uses_with(conv_node)   # doctest: +SKIP
        """
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                                     "but replace_with already has .meta keys")
            replace_with.meta.update(self.meta)
        to_process = list(self.users)
        skipped = []
        for use_node in to_process:
            if not delete_user_cb(use_node):
                skipped.append(use_node)
                continue
            use_node._replace_input(self, replace_with)
        return [n for n in to_process if n not in skipped]

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Make this Node read new_input wherever it read old_input.

        Args:
            old_input: the input to replace.
            new_input: its replacement.

        Returns:
            None

        Example:
            >>> add_node.replace_input_with(x_node, y_node)   # doctest: +SKIP
        """
        self._replace_input(old_input, new_input)

    def _replace_input(self, old: Node, new: Node) -> None:
        def swap(n: Node) -> Node:
            return new if n is old else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # ------------------------------------------------------------------ printing
    def __repr__(self) -> str:
        return self.name

    def format_node(self) -> str:
        """This node as one line of the graph's printout (`%name : [num_users=N] = op[target=...](args ...)`).

        Returns:
            The line.

        Example:
            >>> print(node.format_node())   # doctest: +SKIP
            %add : [num_users=1] = call_function[target=operator.add](args = (%x, %y), kwargs = {})
        """
        from .naming import qualified_name
        if self.op == "placeholder":
            default = f"(default={self.args[0]!r})" if self.args else ""
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]{default}"
        if self.op == "output":
            return f"return {self.args[0]}"
        target = self.target if isinstance(self.target, str) else qualified_name(self.target)
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def is_impure(self) -> bool:
        """Whether removing this node (when nothing reads it) could change what the program does.

        Returns:
            True for placeholders, outputs, in-place method calls (`x.add_(y)`) and wrapped side-effect functions.

        Example:
            >>> node.is_impure()   # doctest: +SKIP
        """
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_method" and isinstance(self.target, str):
            return self.target.endswith("_") and not self.target.endswith("__")
        if self.op == "call_function":
            return getattr(self.target, "_fx_side_effectful", False)
        return False


def _format_arg(arg: Argument) -> str:
    if isinstance(arg, Node):
        return f"%{arg.name}"
    if isinstance(arg, tuple):
        inner = ", ".join(_format_arg(a) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)
