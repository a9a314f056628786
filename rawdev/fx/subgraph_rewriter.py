"""`torch.fx.replace_pattern`: find every non-overlapping occurrence of a pattern function's dataflow in a
GraphModule and replace it by a replacement function's."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: the node that produced the pattern's result, and pattern node -> graph node."""
    anchor: Node
    nodes_map: dict[Node, Node]


def _graph_of(fn: Any) -> Graph:
    if isinstance(fn, GraphModule):
        return fn.graph
    from .tracer import symbolic_trace
    return symbolic_trace(fn).graph


def _match(pn: Node, gn: Node, m: dict[Node, Node], pattern_nodes: set) -> bool:
    # pattern node pn against graph node gn, extending m (pattern -> graph); placeholders match any value,
    # each placeholder always the same one
    if pn in m:
        return m[pn] is gn
    if pn.op == "placeholder":
        m[pn] = gn
        return True
    if pn.op != gn.op or pn.target != gn.target or len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
        return False
    m[pn] = gn
    ok = all(_match_arg(a, b, m, pattern_nodes) for a, b in zip(pn.args, gn.args)) and \
        all(_match_arg(pn.kwargs[k], gn.kwargs[k], m, pattern_nodes) for k in pn.kwargs)
    if not ok:
        del m[pn]
    return ok


def _match_arg(a: Any, b: Any, m: dict[Node, Node], pattern_nodes: set) -> bool:
    if isinstance(a, Node):
        return isinstance(b, Node) and _match(a, b, m, pattern_nodes)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_match_arg(x, y, m, pattern_nodes)
                                                              for x, y in zip(a, b))
    if isinstance(b, Node):
        return False
    return bool(a == b)


def replace_pattern(gm: GraphModule, pattern: Callable[..., Any], replacement: Callable[..., Any]) -> list[Match]:
    """Replace each occurrence of pattern's computation in gm's graph by replacement's, then recompile.

    Matching follows data dependencies, not names: a pattern placeholder matches any value (the same one every
    time it is used), other nodes match on opcode, target and arguments. An occurrence whose inner values are
    read outside it is left alone. pattern and replacement take the same parameters and return one value.

    Args:
        gm: the GraphModule to rewrite in place.
        pattern: a function (or GraphModule) describing what to find.
        replacement: a function (or GraphModule) with what to put instead.

    Returns:
        The Matches replaced.

    Example:
        >>> def pattern(a, b): return torch.cat([torch.neg(a), b]).sum()   # doctest: +SKIP
        >>> def replacement(a, b): return torch.stack([a, b])
        >>> replace_pattern(traced, pattern, replacement)
    """
    pg, rg = _graph_of(pattern), _graph_of(replacement)
    p_out = next(n for n in pg.nodes if n.op == "output")
    anchor_p = p_out.args[0]
    if not isinstance(anchor_p, Node):
        raise ValueError("replace_pattern: the pattern must return a single value computed from its inputs")
    p_placeholders = [n for n in pg.nodes if n.op == "placeholder"]
    pattern_nodes = {n for n in pg.nodes if n.op not in ("placeholder", "output")}
    graph = gm.graph
    matches: list[Match] = []
    taken: set = set()
    for gn in list(graph.nodes):
        if gn in taken or gn.op in ("placeholder", "output"):
            continue
        m: dict[Node, Node] = {}
        if not _match(anchor_p, gn, m, pattern_nodes):
            continue
        inner = {m[p] for p in pattern_nodes if p in m}
        if inner & taken:
            continue
        # the matched values other than the anchor must be read only inside the match
        if any(u not in inner for n in inner if n is not gn for u in n.users):
            continue
        if any(m[p] in inner for p in p_placeholders if p in m):
            continue
        matches.append(Match(gn, dict(m)))
        taken |= inner
    for match in matches:
        _replace_one(graph, match, p_placeholders, pattern_nodes, rg)
    gm.recompile()
    return matches


def _replace_one(graph: Graph, match: Match, p_placeholders: list[Node], pattern_nodes: set, rg: Graph) -> None:
    r_placeholders = [n for n in rg.nodes if n.op == "placeholder"]
    if len(r_placeholders) != len(p_placeholders):
        raise ValueError("replace_pattern: pattern and replacement must take the same number of inputs")
    val_map: dict[Node, Any] = {}
    for rp, pp in zip(r_placeholders, p_placeholders):
        val_map[rp] = match.nodes_map.get(pp)
    anchor = match.anchor
    with graph.inserting_before(anchor):
        result: Any | None = None
        for rn in rg.nodes:
            if rn.op == "placeholder":
                continue
            if rn.op == "output":
                result = map_arg(rn.args[0], lambda n: val_map[n])
                break
            val_map[rn] = graph.node_copy(rn, lambda n: val_map[n])
    if not isinstance(result, Node):
        raise ValueError("replace_pattern: the replacement must return a single value")
    anchor.replace_all_uses_with(result)
    # erase the matched nodes, users first
    matched = [match.nodes_map[p] for p in pattern_nodes if p in match.nodes_map]
    order = {n: i for i, n in enumerate(graph.nodes)}
    for n in sorted(matched, key=lambda n: order.get(n, -1), reverse=True):
        if not n.users:
            graph.erase_node(n)
