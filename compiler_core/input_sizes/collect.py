"""The walk over a graph that gathers its size facts (``walk.SizeFacts``), into the bodies of
fused nodes and of model-local function calls."""

from __future__ import annotations

from ..ir import Graph, Node
from ..ir.collection import collection_paused
from ..ir.function_bodies import body_of
from . import shape_rules, shape_values, value_ranges
from .walk import SizeFacts, Walk

# What a malformed node can raise inside a rule; the node then keeps the IR's shapes.
_RULE_ERRORS = (IndexError, ValueError, TypeError, ArithmeticError, KeyError, AttributeError)


@collection_paused
def collect_facts(graph: Graph) -> SizeFacts:
    """Walk the graph in order; every node's outputs get a shape, small integer outputs
    their contents, index tensors their least and greatest element, and every constraint
    between sizes an equation or a bound (with the cycle collector paused: a fact per value
    lives on, ``ir.collection``)."""
    walk = Walk(graph)
    for node in graph.nodes:
        _visit(walk, node)
    return walk.facts


def _visit(walk: Walk, node: Node) -> None:
    body = body_of(walk.graph, node)
    if body is not None:
        _visit_body(walk, node, body)
        return
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


def _visit_body(walk: Walk, node: Node, body: Graph) -> None:
    """A fused node or a call of a model-local function, walked through what it computes: the
    shape arithmetic a fusion took inside (total = past + new keys, met where the mask is
    added to the scores) stays visible, as it is in the graph the node came from."""
    inner = walk.inside(body, node.inputs)
    for member in body.nodes:
        _visit(inner, member)
    for index, (outer, result) in enumerate(zip(node.outputs, body.outputs)):
        walk.set_output(node, index, inner.shape(result))
        if outer is not None:
            walk.set_content(outer, inner.content(result))
            if result.name in inner.spans:
                walk.spans[outer.name] = inner.spans[result.name]
