"""Cytoscape elements for one pane: nodes at their places in the nested layout, groups, edges.

Only what is visible is sent: a collapsed group is one compact node (group_elements) and the
edges into it are merged, with their count.  Diff marks arrive as classes ('removed', 'added',
'modified'); a collapsed group counts the marked nodes it holds.
"""

from __future__ import annotations

import re
from collections import Counter

from compiler_core.ir import Graph, Node

from .drawn_graph import Key, drawn_edges, drawn_keys
from .graph_layout import Position
from .group_elements import as_frame, collapsed_group_elements, open_group_element
from .nested_layout import Placement
from .scopes import ScopeTree

MAX_NAME_CHARS = 20


def element_id(key: Key) -> str:
    """'n12' for node 12 (safe in '#n12' selectors); 'in:x' / 'out:y' for inputs/outputs."""
    return f"n{key}" if isinstance(key, int) else str(key)


def node_label(node: Node) -> str:
    """The op type, and the node's own name when it says more than 'Op_12' would."""
    short = node.name.rsplit("/", 1)[-1]
    if not short or re.fullmatch(re.escape(node.op_type) + r"(_\d+)?", short):
        return node.op_type
    if len(short) > MAX_NAME_CHARS:
        short = short[:MAX_NAME_CHARS - 1] + "…"
    return f"{node.op_type}\n{short}"


def pane_elements(graph: Graph, placement: Placement, scopes: ScopeTree,
                  expanded: set[str], marks: dict[int, str], opened: set[int]) -> list[dict]:
    """Everything one pane draws for ``graph`` with the given groups open."""
    nodes: list[dict] = []
    collapsed: dict[str, list[Node]] = {}
    open_groups: set[str] = set()
    representative: dict[Key, str] = {}
    for key in drawn_keys(graph):
        node = graph.node_by_id(key) if isinstance(key, int) else None
        if node is None:
            representative[key] = element_id(key)
            nodes.append(_io_element(key, placement.centre(key)))
            continue
        group, parent = scopes.representative(node.id, expanded)
        if group is not None:
            collapsed.setdefault(group, []).append(node)
            representative[key] = group
            open_groups.update(scopes.ancestors(scopes.groups[group].parent))
            continue
        representative[key] = element_id(key)
        open_groups.update(scopes.ancestors(parent))
        element = _node_element(node, placement.centre(key), parent, marks.get(key))
        nodes.append(element)
        if node.body is not None and node.id in opened:   # the op becomes its body's frame
            element["classes"] += " opened"
            as_frame(element, placement.frames[node.id], len(scopes.ancestors(parent)) + 1)
            nodes += _body_elements(node, placement.bodies[node.id])
    groups = [open_group_element(scopes.groups[g], placement.frames[g], len(scopes.ancestors(g)))
              for g in scopes.groups if g in open_groups]
    for group_id, members in collapsed.items():
        groups += collapsed_group_elements(scopes.groups[group_id], placement.boxes[group_id],
                                           members, marks)
    return groups + nodes + _edge_elements(graph, representative, opened)


def _node_element(node: Node, position: Position, parent: str | None, mark: str | None,
                  ) -> dict:
    data = {"id": element_id(node.id), "label": node_label(node), "kind": "node",
            "node_id": node.id}
    if parent is not None:
        data["within"] = parent
    classes = ["op"]
    if node.body is not None:
        classes.append("fused")
    if mark:
        classes.append(mark)
    return {"data": data, "position": {"x": position[0], "y": position[1]},
            "classes": " ".join(classes)}


def _io_element(key: str, position: Position) -> dict:
    kind, _, name = key.partition(":")
    return {"data": {"id": key, "label": name, "kind": kind},
            "position": {"x": position[0], "y": position[1]}, "classes": f"io {kind}"}


def _body_elements(fused: Node, positions: dict[Key, Position]) -> list[dict]:
    elements = [_node_element(n, positions[n.id], element_id(fused.id), None)
                for n in fused.body.nodes]
    for element in elements:
        element["classes"] += " body"
    return elements


def _edge_elements(graph: Graph, representative: dict[Key, str], opened: set[int]) -> list[dict]:
    """One edge per pair of drawn items; merged edges (into a collapsed group) say how many."""
    pairs = list(drawn_edges(graph))
    for node in graph.nodes:
        if node.body is not None and node.id in opened:
            pairs += [(a, b) for a, b in drawn_edges(node.body)
                      if isinstance(a, int) and isinstance(b, int)]
    counts = Counter((representative.get(a, element_id(a)), representative.get(b, element_id(b)))
                     for a, b in pairs)
    edges: list[dict] = []
    for (source, target), count in counts.items():
        if source == target:
            continue
        data = {"id": f"e:{source}>{target}", "source": source, "target": target}
        if count > 1:
            data["count"] = count
        edges.append({"data": data})
    return edges
