"""Build a pattern from a piece of a graph ("find more like this").

Each node becomes an op pattern with its exact attributes, bound to the node's name; values
from outside become leaves (a graph input, a constant with its exact data, or any value), and a
value read twice becomes one shared leaf, so the pattern is as rigid as the subgraph itself.
Intermediates that are also read outside the piece are allowed to be, so the pattern matches
the piece it came from.
"""

from __future__ import annotations

from typing import Iterable

import onnx

from ..ir import Node, Value
from .language import OpPattern, Pattern, any_value, const, graph_input, op


def pattern_from_nodes(nodes: Iterable[Node], root: Node | None = None) -> Pattern:
    """A pattern matching exactly these nodes, rooted at ``root`` (default: the one node whose
    output no other node of the piece reads)."""
    members = {n.id: n for n in nodes}
    if root is None:
        root = _find_root(members)
    ops: dict[int, OpPattern] = {}
    leaves: dict[int, Pattern] = {}

    def value_pattern(value: Value | None) -> Pattern | None:
        if value is None:
            return None
        producer = value.producer
        if producer is not None and producer.id in members:
            node_pattern = node_to_pattern(producer)
            return node_pattern if value.output_index == 0 else node_pattern.output(
                value.output_index)
        if id(value) not in leaves:
            leaves[id(value)] = _leaf(value)
        return leaves[id(value)]

    def node_to_pattern(node: Node) -> OpPattern:
        if node.id not in ops:
            inputs = [value_pattern(v) for v in node.inputs]
            attrs = {k: v for k, v in node.attrs.items() if not isinstance(
                v, (onnx.GraphProto, onnx.SparseTensorProto, onnx.TypeProto, tuple)) or (
                isinstance(v, tuple) and not any(isinstance(x, onnx.GraphProto) for x in v))}
            pattern = op(node.op_type, *inputs, domain=node.domain, **attrs).bind(node.name)
            if node is not root and _read_outside(node, members):
                pattern = pattern.allow_external_uses()
            ops[node.id] = pattern
        return ops[node.id]

    return node_to_pattern(root)


def _leaf(value: Value) -> Pattern:
    data = value.constant_value()
    if data is not None:
        return const(data, tol=0.0)
    return graph_input() if value.is_graph_input else any_value()


def _find_root(members: dict[int, Node]) -> Node:
    roots = [n for n in members.values()
             if not any(u.id in members for out in n.outputs if out is not None
                        for u, _ in out.uses)]
    if len(roots) != 1:
        raise ValueError(f"the nodes have {len(roots)} outputs to the rest of the graph; "
                         f"name the root")
    return roots[0]


def _read_outside(node: Node, members: dict[int, Node]) -> bool:
    return any(out is not None and (out.is_graph_output or any(
        u.id not in members for u, _ in out.uses)) for out in node.outputs)
