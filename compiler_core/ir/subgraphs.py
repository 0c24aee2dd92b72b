"""If/Loop/Scan bodies are carried as onnx GraphProtos; this module reasons about their scope.

A body may read values of the enclosing graph by name without declaring them ("implicit
inputs").  The IR records those as uses of the outer values so that dead-code elimination never
deletes what a body needs, and renames them inside the body when the outer value is replaced.
"""

from __future__ import annotations

from typing import Iterable

import onnx


def subgraph_attributes(attrs: dict) -> Iterable[onnx.GraphProto]:
    """Every GraphProto held by a node's attributes."""
    for value in attrs.values():
        if isinstance(value, onnx.GraphProto):
            yield value
        elif isinstance(value, tuple) and value and isinstance(value[0], onnx.GraphProto):
            yield from value


def free_variables(graph: onnx.GraphProto) -> list[str]:
    """Names a body reads but does not define itself (in first-use order)."""
    defined: set[str] = {i.name for i in graph.input}
    defined |= {t.name for t in graph.initializer}
    defined |= {t.values.name for t in graph.sparse_initializer}
    free: dict[str, None] = {}
    for node in graph.node:
        for name in node.input:
            if name and name not in defined:
                free.setdefault(name)
        for attr in node.attribute:
            for sub in _attribute_graphs(attr):
                for name in free_variables(sub):
                    if name not in defined:
                        free.setdefault(name)
        defined.update(o for o in node.output if o)
    for output in graph.output:
        if output.name not in defined:
            free.setdefault(output.name)
    return list(free)


def rename_free_variable(graph: onnx.GraphProto, old: str, new: str) -> onnx.GraphProto:
    """A copy of ``graph`` in which the outer name ``old`` reads ``new`` (shadowing respected)."""
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    _rename_in_place(copy, old, new)
    return copy


def _rename_in_place(graph: onnx.GraphProto, old: str, new: str) -> None:
    if old in {i.name for i in graph.input} | {t.name for t in graph.initializer}:
        return  # the body defines its own `old`: the outer one is shadowed
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name == old:
                node.input[index] = new
        for attr in node.attribute:
            for sub in _attribute_graphs(attr):
                _rename_in_place(sub, old, new)
        if old in node.output:
            return  # from here on `old` is the body's own value
    for output in graph.output:
        if output.name == old:
            output.name = new


def _attribute_graphs(attr: onnx.AttributeProto) -> Iterable[onnx.GraphProto]:
    if attr.type == onnx.AttributeProto.GRAPH:
        yield attr.g
    elif attr.type == onnx.AttributeProto.GRAPHS:
        yield from attr.graphs
