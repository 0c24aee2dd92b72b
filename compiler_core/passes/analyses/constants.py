"""Reading constants and making them: the vocabulary the cleanup and folding passes share.

A value is *constant* when its data is known before run time (an initializer or a Constant
node's output).  Folding a node turns its outputs into initializers in place: the Value keeps
its name and its readers, so the nodes downstream are not even touched.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ...ir import Graph, Node, Value
from ...ir.lazy_tensors import data_elem_type
from ...ir.spill import keep

INT64_MAX = int(np.iinfo(np.int64).max)


def constant_ints(value: Value | None) -> tuple[int, ...] | None:
    """A constant integer tensor (scalar or 1-D) as a tuple of ints; None otherwise."""
    if value is None:
        return None
    array = value.constant_value()
    if array is None or array.dtype.kind not in "iu" or array.ndim > 1:
        return None
    return tuple(int(x) for x in array.reshape(-1))


def ints_input_or_attr(node: Node, index: int, attr: str) -> tuple[int, ...] | None:
    """Axes-like parameters moved from attributes to inputs in newer opsets: read either."""
    if attr in node.attrs:
        return tuple(int(x) for x in node.attrs[attr])
    return constant_ints(node.input(index))


def make_initializer(graph: Graph, value: Value, array: np.ndarray) -> None:
    """Turn a value whose producer was removed into an initializer of the same name."""
    data = keep(array, value.name)  # read-only (or spilled) so copies can share it
    value.stored = data
    value.elem_type = data_elem_type(data)
    value.shape = data.shape
    graph.initializers[value.name] = value


def replace_with_constants(graph: Graph, node: Node, arrays: list[np.ndarray]) -> None:
    """Remove ``node``; each of its outputs someone reads becomes an initializer.

    Callers check ``produces_graph_output`` first: an initializer cannot take the name of a
    graph output without changing the model's interface.
    """
    outputs = list(node.outputs)
    producers = [v.producer for v in node.inputs if v is not None and v.producer is not None]
    graph.remove_node(node)
    for value, array in zip(outputs, arrays):
        if value is not None and value.uses:
            make_initializer(graph, value, array)
    remove_dead(graph, producers)


def produces_graph_output(node: Node) -> bool:
    return any(v is not None and v.is_graph_output for v in node.outputs)


def remove_dead(graph: Graph, nodes: Iterable[Node]) -> None:
    """Remove the given nodes, and then their producers, as long as nobody reads their outputs."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if not graph.has_node(node) or any(
                v is not None and (v.uses or v.is_graph_output) for v in node.outputs):
            continue
        pending += [v.producer for v in node.inputs if v is not None and v.producer is not None]
        graph.remove_node(node)
