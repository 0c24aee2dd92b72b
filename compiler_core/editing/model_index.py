"""Who produces and who reads each value of an ONNX graph, for edits to look names up in.

The index is rebuilt after every edit (an edit list is short; a rebuild is one walk over the
nodes), so each edit is checked against the graph the edits before it left.
"""

from __future__ import annotations

import difflib
from collections import defaultdict

import onnx

from ..errors import EditError
from ..ir.subgraphs import free_variables

SUBGRAPH_TYPES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


class ModelIndex:
    """Nodes by name, values by name: their producer, their readers, what kind they are."""

    def __init__(self, model: onnx.ModelProto):
        self.model = model
        g = model.graph
        self.nodes_by_name: dict[str, list[int]] = defaultdict(list)
        self.producer: dict[str, tuple[int, int]] = {}      # value -> (node index, output)
        self.readers: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.body_readers: dict[str, list[int]] = defaultdict(list)   # read inside a body
        for index, node in enumerate(g.node):
            self.nodes_by_name[node.name].append(index)
            for slot, name in enumerate(node.input):
                if name:
                    self.readers[name].append((index, slot))
            for slot, name in enumerate(node.output):
                if name:
                    self.producer[name] = (index, slot)
            for attr in node.attribute:
                if attr.type in SUBGRAPH_TYPES:
                    bodies = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs
                    for body in bodies:
                        for name in free_variables(body):
                            self.body_readers[name].append(index)
        self.initializers = {t.name: i for i, t in enumerate(g.initializer)}
        self.graph_inputs = {vi.name for vi in g.input} - set(self.initializers)
        self.graph_outputs = [vi.name for vi in g.output]
        self.opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version
                       for o in model.opset_import}

    # -- nodes ------------------------------------------------------------------------------
    def node(self, name: str, label: str) -> int:
        """The index of the one node called ``name``, or an EditError saying why not."""
        found = self.nodes_by_name.get(name, [])
        if len(found) == 1:
            return found[0]
        if found:
            raise EditError(f"{label}: {len(found)} nodes are called {name!r}",
                            where=name, hint="rename one of them first (a rename edit)")
        close = difflib.get_close_matches(name, list(self.nodes_by_name), n=3)
        raise EditError(f"{label}: no node called {name!r}", where=name,
                        hint=f"did you mean {', '.join(close)}?" if close else
                        "name a node as `graphlab show MODEL` prints it")

    def node_text(self, index: int) -> str:
        node = self.model.graph.node[index]
        return f"{node.op_type} {node.name!r}"

    # -- values -----------------------------------------------------------------------------
    def exists(self, name: str) -> bool:
        return (name in self.producer or name in self.initializers
                or name in self.graph_inputs)

    def value(self, name: str, label: str) -> str:
        """``name`` when the graph has such a value, else an EditError with close names."""
        if self.exists(name):
            return name
        known = [*self.producer, *self.initializers, *self.graph_inputs]
        close = difflib.get_close_matches(name, known, n=3)
        raise EditError(f"{label}: no value called {name!r}", where=name,
                        hint=f"did you mean {', '.join(close)}?" if close else
                        "name a value as `graphlab show MODEL` prints it (after %)")

    def is_read(self, name: str) -> bool:
        """Read by a node, a body or the graph's caller (a graph output)."""
        return bool(self.readers.get(name) or self.body_readers.get(name)
                    or name in self.graph_outputs)

    def refuse_body_reads(self, name: str, label: str, what: str) -> None:
        """Bodies of If/Loop/Scan read outer values by name: edits do not rewrite bodies."""
        readers = self.body_readers.get(name)
        if readers:
            raise EditError(f"{label}: value {name!r} is read inside the body of "
                            f"{self.node_text(readers[0])}, so it cannot be {what}",
                            where=name, hint="edit the nodes around it instead")

    def taken_names(self) -> set[str]:
        """Every value name in use (new values must not take one)."""
        return {*self.producer, *self.initializers, *self.graph_inputs,
                *(vi.name for vi in self.model.graph.value_info)}

    def opset(self, domain: str) -> int | None:
        return self.opsets.get(domain)


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first not in ``taken``."""
    if base not in taken:
        return base
    suffix = 2
    while f"{base}_{suffix}" in taken:
        suffix += 1
    return f"{base}_{suffix}"
