"""`torch.fx.GraphModule`: an nn.Module whose forward is generated from a Graph, holding the submodules,
parameters and buffers the graph reads (copied from the root it was made from)."""
from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any

from ..nn import Module, Parameter
from .graph import Graph

__all__ = ["GraphModule"]

_keys = itertools.count()


def _copy_attr(from_module: Any, to_module: Any, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return   # the whole submodule is already installed
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    _assign_attr(getattr(from_module, field), to_module, field)


def _assign_attr(value: Any, to_module: Any, field: str) -> None:
    from ..tensor import Tensor
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


def _set_path(root: Any, target: str, value: Any) -> None:
    *prefix, field = target.split(".")
    mod = root
    for item in prefix:
        nxt = getattr(mod, item, None)
        if nxt is None:
            nxt = Module()
            setattr(mod, item, nxt)
        mod = nxt
    _assign_attr(value, mod, field)


class GraphModule(Module):
    """An nn.Module generated from a Graph: `.graph`, `.code` (the forward's Python source), recompile()
    after editing the graph. Each GraphModule gets its own class, so recompiling one leaves others alone.

    Args:
        root: an nn.Module (the attributes the graph's get_attr/call_module nodes name are copied from it)
            or a dict from qualified name to module/parameter/tensor.
        graph: the Graph.
        class_name: the name the class reports.

    Example:
        >>> gm = GraphModule(model, graph)   # doctest: +SKIP
        >>> gm(x)
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[valid-type,misc]
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    assert isinstance(node.target, str)
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    assert isinstance(node.target, str)
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was not "
                                           "provided in ``root``!")
                    _set_path(self, node.target, root[node.target])
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta: dict[str, Any] = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The Graph; assigning one makes this module its owner and recompiles."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of forward, as generated from the graph."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> Any:
        """Regenerate forward from self.graph (call after editing the graph). The source is compiled in this
        process and registered with linecache so tracebacks show the generated lines; no file is written.

        Returns:
            The PythonCode that was compiled.

        Example:
            >>> gm.graph.erase_node(n); gm.recompile()   # doctest: +SKIP
        """
        code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = code.src
        key = f"<eval_with_key>.{next(_keys)}"
        linecache.cache[key] = (len(code.src), None, code.src.splitlines(True), key)
        glb = dict(code.globals)
        exec(compile(code.src, key, "exec"), glb)   # noqa: S102  (the graph's own generated forward)
        type(self).forward = glb["forward"]  # type: ignore[method-assign]  # its own class (see __new__)
        return code

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code])

    def print_readable(self, print_output: bool = True) -> str:
        """The module as a class with its generated forward (and any GraphModule children's).

        Args:
            print_output: print it as well as return it.

        Returns:
            The text.

        Example:
            >>> gm.print_readable()   # doctest: +SKIP
        """
        body = self._code.strip("\n").replace("\n", "\n    ")
        out = f"class {type(self).__name__}(torch.nn.Module):\n    {body}\n"
        for name, sub in self.named_children():
            if isinstance(sub, GraphModule):
                out += "\n" + f"# {name}\n" + sub.print_readable(print_output=False)
        if print_output:
            print(out)
        return out

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install m at the dotted path target, creating empty parent modules as needed.

        Args:
            target: e.g. "fused.conv".
            m: the module.

        Returns:
            True (False when a parent on the path is not a Module).

        Example:
            >>> gm.add_submodule("fused", fused_conv)   # doctest: +SKIP
        """
        *prefix, field = target.split(".")
        mod: Any = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at the dotted path target.

        Args:
            target: e.g. "bn1".

        Returns:
            Whether it existed and was removed.

        Example:
            >>> gm.delete_submodule("bn1")   # doctest: +SKIP
        """
        *prefix, field = target.split(".")
        mod: Any = self
        for item in prefix:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if field not in mod._modules:
            return False
        del mod._modules[field]
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no call_module or get_attr node uses (nor a parent of one).

        Returns:
            None

        Example:
            >>> gm.delete_all_unused_submodules()   # doctest: +SKIP
        """
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = str(node.target).split(".")
                for i in range(1, len(atoms) + 1):
                    used.add(".".join(atoms[:i]))
                if node.op == "call_module":
                    used.update(f"{node.target}.{n}" for n, _ in self.get_submodule(str(node.target)).named_modules()
                                if n)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def __deepcopy__(self, memo: dict[int, Any]) -> GraphModule:
        fake = Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        res = GraphModule(fake, fake.__dict__["_graph"], type(self).__name__)
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self._graph, type(self).__name__)
        res.meta = getattr(self, "meta", {})
        return res
