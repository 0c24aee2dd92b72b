"""The walk over a graph that gathers its size facts (``walk.SizeFacts``)."""

from __future__ import annotations

from ..ir import Graph, Node
from . import shape_rules, shape_values
from .walk import SizeFacts, Walk

# What a malformed node can raise inside a rule; the node then keeps the IR's shapes.
_RULE_ERRORS = (IndexError, ValueError, TypeError, ZeroDivisionError, KeyError)


def collect_facts(graph: Graph) -> SizeFacts:
    """Walk the graph in order; every node's outputs get a shape, small integer outputs
    their contents, and every constraint between sizes an equation."""
    walk = Walk(graph)
    for node in graph.nodes:
        _visit(walk, node)
    return walk.facts


def _visit(walk: Walk, node: Node) -> None:
    rule = shape_rules.RULES.get(node.op_type)
    try:
        shapes = rule(walk, node) if rule is not None and node.inputs else []
    except _RULE_ERRORS:
        shapes = []
    for index in range(len(node.outputs)):
        walk.set_output(node, index, shapes[index] if index < len(shapes) else None)
    content_rule = shape_values.RULES.get(node.op_type)
    first = node.outputs[0] if node.outputs else None
    if content_rule is None or first is None:
        return
    try:
        walk.set_content(first, content_rule(walk, node))
    except _RULE_ERRORS:
        pass
