"""The walk over a graph that gathers its size facts (``walk.SizeFacts``)."""

from __future__ import annotations

from ..ir import Graph, Node
from . import shape_rules, shape_values, value_ranges
from .walk import SizeFacts, Walk

# What a malformed node can raise inside a rule; the node then keeps the IR's shapes.
_RULE_ERRORS = (IndexError, ValueError, TypeError, ArithmeticError, KeyError, AttributeError)


def collect_facts(graph: Graph) -> SizeFacts:
    """Walk the graph in order; every node's outputs get a shape, small integer outputs
    their contents, index tensors their least and greatest element, and every constraint
    between sizes an equation or a bound."""
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
    first = node.outputs[0] if node.outputs else None
    if first is None:
        return
    content_rule = shape_values.RULES.get(node.op_type)
    span_rule = value_ranges.RULES.get(node.op_type)
    check = value_ranges.CHECKS.get(node.op_type)
    try:
        if content_rule is not None:
            walk.set_content(first, content_rule(walk, node))
        if span_rule is not None and (found := span_rule(walk, node)) is not None:
            walk.spans[first.name] = found
        if check is not None:
            check(walk, node)
    except _RULE_ERRORS:
        pass
