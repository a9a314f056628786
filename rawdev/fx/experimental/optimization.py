"""`torch.fx.experimental.optimization`: fuse (fold each eval-mode BatchNorm into the convolution before it)
and remove_dropout."""
from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from ..graph_module import GraphModule
from ..node import Node
from ..tracer import symbolic_trace

__all__ = ["fuse", "remove_dropout", "matches_module_pattern", "replace_node_module"]


def _parent_name(target: str) -> tuple[str, str]:
    *parent, name = target.rsplit(".", 1)
    return (parent[0] if parent else ""), name


def matches_module_pattern(pattern: Iterable[type[Any]], node: Node, modules: dict[str, Any]) -> bool:
    """Whether node is a call of a module of pattern's last type on a call of one of its first type (a chain of
    call_module nodes whose module types are pattern, in order).

    Args:
        pattern: module types, producer first.
        node: the last node of the chain.
        modules: dict(gm.named_modules()).

    Returns:
        True on a match.

    Example:
        >>> matches_module_pattern((nn.Conv2d, nn.BatchNorm2d), node, modules)   # doctest: +SKIP
    """
    pattern = list(pattern)
    if len(node.args) == 0:
        return False
    nodes: tuple[Any, Node] = (node.args[0], node)
    for expected_type, current_node in zip(pattern, nodes):
        if not isinstance(current_node, Node) or current_node.op != "call_module":
            return False
        if not isinstance(current_node.target, str) or current_node.target not in modules:
            return False
        if type(modules[current_node.target]) is not expected_type:
            return False
    return True


def replace_node_module(node: Node, modules: dict[str, Any], new_module: Any) -> None:
    """Install new_module where node's call_module target points (and in modules).

    Args:
        node: a call_module node.
        modules: dict(gm.named_modules()).
        new_module: the replacement module.

    Returns:
        None

    Example:
        >>> replace_node_module(conv_node, modules, fused_conv)   # doctest: +SKIP
    """
    assert isinstance(node.target, str)
    parent_name, name = _parent_name(node.target)
    modules[node.target] = new_module
    setattr(modules[parent_name], name, new_module)


def fuse(model: Any, inplace: bool = False, no_trace: bool = False) -> GraphModule:
    """Fold each BatchNorm that directly follows a convolution (read by nothing else) into that convolution's
    weight and bias. Only for inference: the batch norm's running statistics are used.

    Args:
        model: the module (traced unless no_trace and it is already a GraphModule).
        inplace: change model itself rather than a deep copy.
        no_trace: model is already a GraphModule.

    Returns:
        The fused GraphModule.

    Example:
        >>> fused = fuse(model.eval())   # doctest: +SKIP
    """
    from ... import nn
    from ...nn.utils.fusion import fuse_conv_bn_eval
    patterns = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d)]
    if not inplace:
        model = copy.deepcopy(model)
    fx_model = model if (no_trace and isinstance(model, GraphModule)) else symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    new_graph = copy.deepcopy(fx_model.graph)
    for pattern in patterns:
        for node in new_graph.nodes:
            if matches_module_pattern(pattern, node, modules):
                if len(node.args[0].users) > 1:   # the conv's output is used by other nodes as well
                    continue
                conv = modules[node.args[0].target]
                bn = modules[node.target]
                if not bn.track_running_stats:
                    continue
                fused_conv = fuse_conv_bn_eval(conv, bn)
                replace_node_module(node.args[0], modules, fused_conv)
                node.replace_all_uses_with(node.args[0])
                new_graph.erase_node(node)
    return GraphModule(fx_model, new_graph)


def remove_dropout(model: Any) -> GraphModule:
    """The model traced with every nn.Dropout call removed (its input passed through).

    Args:
        model: the module.

    Returns:
        A GraphModule.

    Example:
        >>> gm = remove_dropout(model)   # doctest: +SKIP
    """
    from ... import nn
    fx_model = symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    for node in list(fx_model.graph.nodes):
        if node.op == "call_module" and isinstance(modules.get(str(node.target)), nn.Dropout):
            node.replace_all_uses_with(node.args[0])
            fx_model.graph.erase_node(node)
    fx_model.recompile()
    return fx_model
