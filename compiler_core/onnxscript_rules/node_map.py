"""onnxscript IR nodes back to the GraphLab nodes they were exported from.

GraphLab names every node it imports (an unnamed one becomes ``Op_index``) and its exporter
writes those names, in graph order, so a top-level node maps back by name; by position, with
the op checked, when a name is absent or repeated (a model changed outside GraphLab).  A node
inside a model-local function stands for the first GraphLab node that calls the function (a
fused node's body is such a function), and a node inside a control-flow body for the node that
owns the body; ``where`` says so.
"""

from __future__ import annotations

from collections import Counter

from ..ir import Graph
from ..patterns import NodeRef

UNMAPPED = -1   # the id of a node GraphLab cannot name: no pane draws it


class NodeMap:
    def __init__(self, graph: Graph, model) -> None:
        self._refs: dict[int, tuple[NodeRef, str]] = {}   # id(ir node) -> (ref, where)
        ours = graph.nodes
        theirs = list(model.graph)
        names = Counter(n.name for n in theirs)
        callers: dict[tuple, NodeRef] = {}
        for position, ir_node in enumerate(theirs):
            ref = self._top_level(graph, ours, position, ir_node, names)
            self._refs[id(ir_node)] = (ref, "")
            self._owned(ir_node, ref, f"inside the body of {ref.name}")
            callers.setdefault((ir_node.domain, ir_node.op_type, ir_node.overload), ref)
        for identifier, function in model.functions.items():
            caller = callers.get(identifier)
            label = f"{identifier[0]}.{identifier[1]}" if identifier[0] else identifier[1]
            where = f"inside function {label}" + (f", called by {caller.name}" if caller else
                                                  ", which no node calls")
            for ir_node in function:
                ref = caller or NodeRef(UNMAPPED, ir_node.name or ir_node.op_type)
                self._refs[id(ir_node)] = (ref, where)
                self._owned(ir_node, ref, where)

    @staticmethod
    def _top_level(graph: Graph, ours, position: int, ir_node, names: Counter) -> NodeRef:
        if ir_node.name and names[ir_node.name] == 1:
            node = graph.node_by_name(ir_node.name)
            if node is not None and node.op_type == ir_node.op_type:
                return NodeRef(node.id, node.name)
        if position < len(ours) and ours[position].op_type == ir_node.op_type:
            return NodeRef(ours[position].id, ours[position].name)
        return NodeRef(UNMAPPED, ir_node.name or f"{ir_node.op_type} #{position}")

    def _owned(self, ir_node, owner: NodeRef, where: str) -> None:
        """Nodes of control-flow bodies (at any depth) stand for ``owner``."""
        for attribute in ir_node.attributes.values():
            kind = getattr(attribute.type, "name", "")
            if kind not in ("GRAPH", "GRAPHS") or attribute.is_ref():
                continue
            for body in (attribute.value if kind == "GRAPHS" else [attribute.value]):
                for inner in body:
                    self._refs[id(inner)] = (owner, where)
                    self._owned(inner, owner, where)

    def ref(self, ir_node) -> NodeRef:
        found = self._refs.get(id(ir_node))
        return found[0] if found else NodeRef(UNMAPPED, ir_node.name or ir_node.op_type)

    def where(self, ir_node) -> str:
        found = self._refs.get(id(ir_node))
        return found[1] if found else "in a graph GraphLab did not export"

    def refs(self, ir_nodes) -> tuple[NodeRef, ...]:
        """The GraphLab nodes of several IR nodes, each once, in order."""
        return tuple(dict.fromkeys(self.ref(n) for n in ir_nodes))
