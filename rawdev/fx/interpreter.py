"""`torch.fx.Interpreter` (run a GraphModule node by node, each opcode a method to override) and
`torch.fx.Transformer` (the same walk producing a new GraphModule)."""
from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy
from .tracer import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs a GraphModule's graph one node at a time: run_node dispatches to placeholder, get_attr,
    call_function, call_method, call_module and output, each of which a subclass may override.

    Args:
        module: the GraphModule (or any module, with graph given).
        garbage_collect_values: drop each value after its last use.
        graph: the graph to run (default: module.graph).

    Example:
        >>> class Count(Interpreter):   # doctest: +SKIP
        ...     def call_module(self, target, args, kwargs):
        ...         self.calls += 1
        ...         return super().call_module(target, args, kwargs)
        >>> Count(gm).run(x)
    """

    def __init__(self, module: Any, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.args_iter: Iterator[Any] = iter(())
        if garbage_collect_values:
            last_use: dict[Node, Node] = {}
            for node in self.graph.nodes:
                for n in node.all_input_nodes:
                    last_use[n] = node
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for value, user in last_use.items():
                self.user_to_last_uses.setdefault(user, []).append(value)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on args.

        Args:
            *args: the inputs, in placeholder order.
            initial_env: values for nodes known in advance (they are not run).
            enable_io_processing: kept for torch's signature.

        Returns:
            What the output node returns.

        Example:
            >>> Interpreter(gm).run(x)   # doctest: +SKIP
        """
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    e.args = (f"{e.args[0]}\n\n{msg}" if e.args and isinstance(e.args[0], str) else msg,
                              *e.args[1:])
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list[Any]) -> Any:
        """Run with the inputs in a list that is emptied first (so they can be freed as the run goes).

        Args:
            args_list: the inputs; cleared.

        Returns:
            What the output node returns.

        Example:
            >>> Interpreter(gm).boxed_run([x])   # doctest: +SKIP
        """
        args_iter = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(args_iter)
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments from the environment and call the method named by its opcode.

        Args:
            n: the node.

        Returns:
            Its value.

        Example:
            >>> super().run_node(n)   # doctest: +SKIP
        """
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        assert isinstance(args, tuple) and isinstance(kwargs, dict)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ------------------------------------------------------------------ one method per opcode
    def placeholder(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """A placeholder node: the next input.

        Args:
            target: the parameter name (`*args` takes the remaining inputs).
            args: the parameter's default, if it has one.
            kwargs: unused.

        Returns:
            The input, or the default when the inputs ran out.

        Example:
            >>> Interpreter(gm).run(x)   # the placeholder x gets x   # doctest: +SKIP
        """
        assert isinstance(target, str)
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not "
                               "passed in!") from si

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """A get_attr node: the module attribute at a dotted path.

        Args:
            target: e.g. "linear.weight".
            args: unused.
            kwargs: unused.

        Returns:
            The attribute (fetch_attr).

        Example:
            >>> interp.get_attr("linear.weight", (), {})   # doctest: +SKIP
        """
        assert isinstance(target, str)
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """A call_function node: target(*args, **kwargs).

        Args:
            target: the function.
            args: positional arguments, values already fetched.
            kwargs: keyword arguments.

        Returns:
            The call's result.

        Example:
            >>> interp.call_function(torch.relu, (x,), {})   # doctest: +SKIP
        """
        assert not isinstance(target, str)
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """A call_method node: args[0].target(*args[1:], **kwargs).

        Args:
            target: the method name.
            args: the object, then the method's arguments.
            kwargs: keyword arguments.

        Returns:
            The call's result.

        Example:
            >>> interp.call_method("view", (x, -1), {})   # doctest: +SKIP
        """
        self_obj, *args_tail = args
        assert isinstance(target, str)
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """A call_module node: the submodule at target, called.

        Args:
            target: its dotted path.
            args: positional arguments.
            kwargs: keyword arguments.

        Returns:
            The module's output.

        Example:
            >>> interp.call_module("conv1", (x,), {})   # doctest: +SKIP
        """
        assert isinstance(target, str)
        submod = self.fetch_attr(target)
        return submod(*args, **kwargs)

    def output(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """The output node: the value the graph returns.

        Args:
            target: "output".
            args: (the value,).
            kwargs: unused.

        Returns:
            args[0].

        Example:
            >>> interp.output("output", (y,), {})   # doctest: +SKIP
        """
        return args[0]

    # ------------------------------------------------------------------ helpers
    def fetch_attr(self, target: str) -> Any:
        """The attribute of self.module at a dotted path.

        Args:
            target: e.g. "layer1.0.conv1.weight".

        Returns:
            The attribute.

        Raises:
            RuntimeError: naming the first missing part.

        Example:
            >>> interp.fetch_attr("linear.weight")   # doctest: +SKIP
        """
        atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """n's args and kwargs with each Node replaced by its value.

        Args:
            n: the node about to run.

        Returns:
            (args, kwargs).

        Example:
            >>> args, kwargs = interp.fetch_args_kwargs_from_env(n)   # doctest: +SKIP
        """
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args: Argument, n: Node) -> Any:
        """args with each Node replaced by its value from the environment.

        Args:
            args: a structure holding Nodes.
            n: the node they belong to (named in the error).

        Returns:
            The structure with values.

        Example:
            >>> interp.map_nodes_to_values(n.args, n)   # doctest: +SKIP
        """
        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph

    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Walks a GraphModule like Interpreter, but on Proxies: each method records into a new graph, so an
    override that calls super() with a different target rewrites the program. transform() returns the new
    GraphModule.

    Args:
        module: the GraphModule to transform.

    Example:
        >>> class AddToMul(Transformer):   # doctest: +SKIP
        ...     def call_function(self, target, args, kwargs):
        ...         return super().call_function(operator.mul if target is operator.add else target, args, kwargs)
        >>> new_gm = AddToMul(gm).transform()
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Proxy:
        assert isinstance(target, str)
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Proxy:
        assert isinstance(target, str)
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        assert isinstance(target, str)
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the walk and return the new GraphModule.

        Returns:
            A GraphModule over the same module's attributes with the new graph.

        Example:
            >>> new_gm = Transformer(gm).transform()   # doctest: +SKIP
        """
        result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a: Any) -> Any:
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip_proxy))
        return GraphModule(self.module, self.new_graph)
