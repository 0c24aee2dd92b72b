"""What of a Graph is drawn: its nodes plus one small node per graph input and output.

Weights (initializers) are not drawn — they would triple the node count and they belong in the
inspector.  Keys are node ids (ints) for operator nodes and 'in:NAME' / 'out:NAME' strings for
the model's inputs and outputs, so layout, elements and diffs all speak the same keys.
"""

from __future__ import annotations

from typing import Hashable

from compiler_core.ir import Graph

Key = Hashable


def input_key(name: str) -> str:
    return f"in:{name}"


def output_key(name: str) -> str:
    return f"out:{name}"


def drawn_keys(graph: Graph) -> list[Key]:
    """Inputs, nodes in execution order, outputs: the order layout uses to break ties."""
    keys: list[Key] = [input_key(v.name) for v in graph.inputs if not v.is_initializer]
    keys += [node.id for node in graph.nodes]
    keys += [output_key(v.name) for v in graph.outputs]
    return keys


def drawn_edges(graph: Graph) -> list[tuple[Key, Key]]:
    """(producer key, consumer key) for every tensor flowing between drawn keys."""
    drawn_inputs = {v.name for v in graph.inputs if not v.is_initializer}
    edges: list[tuple[Key, Key]] = []
    for node in graph.nodes:
        for value in list(node.inputs) + list(node.implicit_inputs):
            source = _source_key(value, drawn_inputs)
            if source is not None:
                edges.append((source, node.id))
    for value in graph.outputs:
        source = _source_key(value, drawn_inputs)
        if source is not None:
            edges.append((source, output_key(value.name)))
    return edges


def _source_key(value, drawn_inputs: set[str]) -> Key | None:
    if value is None:
        return None
    if value.producer is not None:
        return value.producer.id
    if value.name in drawn_inputs:
        return input_key(value.name)
    return None
