"""Small local rewrites the cleanup passes share: drop a node, or replace a few by one.

Both keep the model's interface: a rewrite that would rename a graph output is declined, and
the decline says why — the app shows it next to the node.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from ..ir import Graph, Node, Value
from .base import PassContext, PassResult
from .constants import remove_dead
from .rewrite import bypass_node


def standard_nodes(graph: Graph) -> Iterator[Node]:
    """The graph's default-domain nodes in execution order, skipping those a rewrite made
    earlier in the same sweep has already removed (rewrites may delete nodes ahead)."""
    for node in graph.nodes:
        if graph.has_node(node) and not node.domain:
            yield node


def bypass_or_decline(graph: Graph, node: Node, replacement: Value, rule: str,
                      result: PassResult) -> bool:
    """Remove a single-output node whose readers can read ``replacement`` instead.

    Nodes left without readers (the producers of the node's other inputs) go too.
    """
    output = node.outputs[0]
    producers = [v.producer for v in node.inputs if v is not None and v.producer is not None]
    if not bypass_node(graph, node, replacement):
        result.decline(node, rule, (
            f"{output.name!r} is a graph output and {replacement.name!r} is a graph "
            f"{_interface_role(replacement)}: removing {node.op_type} would rename the "
            f"model's output"))
        return False
    remove_dead(graph, producers)
    result.rewrites += 1
    return True


def _interface_role(value: Value) -> str:
    if value.is_graph_input:
        return "input"
    if value.is_initializer:
        return "initializer"
    return "output too"


def replace_node(graph: Graph, ctx: PassContext, rule: str, root: Node, op_type: str,
                 inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None,
                 absorbed: Sequence[Node] = ()) -> Node:
    """Replace ``root`` by a new ``op_type`` node computing root's outputs from ``inputs``.

    The new node takes over root's output values (names, types, readers, graph outputs
    unchanged) and its place in the order; ``absorbed`` nodes (folded into the new one) are
    removed once nobody reads them.  Provenance names root and the absorbed nodes.
    """
    with ctx.working_on(root):
        provenance = ctx.provenance(rule, [*absorbed, root])
        outputs = list(root.outputs)
        name, order = root.name, root.order
        graph.remove_node(root)
        node = graph.add_node(op_type, inputs, outputs, attrs=attrs, name=name,
                              provenance=provenance, order=order)
        remove_dead(graph, absorbed)
        return node
