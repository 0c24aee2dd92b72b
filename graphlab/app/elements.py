"""Cytoscape elements for one pane: nodes at their stable positions, scope groups, edges.

Only what is visible is sent: a collapsed group is one box (covering its members' area, so
nothing moves when it opens) and edges into it are merged.  Diff marks arrive as classes
('removed', 'added', 'modified'); a collapsed group containing marked nodes says so too.
"""

from __future__ import annotations

import re

from compiler_core.ir import Graph, Node

from .drawn_graph import Key, drawn_edges, drawn_keys
from .graph_layout import LayoutOptions
from .scopes import ScopeTree
from .stable_positions import Position

MAX_NAME_CHARS = 20
SIZE = LayoutOptions()


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


def pane_elements(graph: Graph, positions: dict[Key, Position], scopes: ScopeTree,
                  expanded: set[str], marks: dict[int, str], opened: set[int]) -> list[dict]:
    """Everything one pane draws for ``graph`` with the given groups open."""
    nodes: list[dict] = []
    collapsed: dict[str, _CollapsedGroup] = {}
    used_groups: set[str] = set()
    representative: dict[Key, str] = {}
    for key in drawn_keys(graph):
        node = graph.node_by_id(key) if isinstance(key, int) else None
        if node is None:
            representative[key] = element_id(key)
            nodes.append(_io_element(key, positions[key]))
            continue
        group, parent = scopes.representative(node.id, expanded)
        if group is not None:
            collapsed.setdefault(group, _CollapsedGroup(group)).add(positions[key], marks.get(key))
            representative[key] = group
            used_groups.update(scopes.ancestors(group))
            continue
        representative[key] = element_id(key)
        if parent is not None:
            used_groups.update(scopes.ancestors(parent))
        nodes.append(_node_element(node, positions[key], parent, marks.get(key)))
        if node.body is not None and node.id in opened:
            nodes += _body_elements(node, positions)
    groups = [_group_element(scopes, g, collapsed.get(g)) for g in scopes.groups if g in used_groups]
    return groups + nodes + _edge_elements(graph, representative, opened)


class _CollapsedGroup:
    """Accumulates the area and the diff marks of a collapsed group's members."""

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.count = 0
        self.marks: dict[str, int] = {}
        self.box = [float("inf"), float("inf"), float("-inf"), float("-inf")]

    def add(self, position: Position, mark: str | None) -> None:
        x, y = position
        box = self.box
        box[0], box[1] = min(box[0], x), min(box[1], y)
        box[2], box[3] = max(box[2], x), max(box[3], y)
        self.count += 1
        if mark:
            self.marks[mark] = self.marks.get(mark, 0) + 1


def _group_element(scopes: ScopeTree, group_id: str, collapsed: _CollapsedGroup | None) -> dict:
    group = scopes.groups[group_id]
    data = {"id": group_id, "label": group.label, "kind": "group"}
    if group.parent is not None:
        data["parent"] = group.parent
    if collapsed is None:
        return {"data": data, "classes": "group"}
    x0, y0, x1, y1 = collapsed.box
    data["w"] = x1 - x0 + SIZE.node_width
    data["h"] = y1 - y0 + SIZE.node_height
    changes = sum(collapsed.marks.values())
    data["label"] = (f"{group.label}\n{collapsed.count} nodes"
                     + (f" · {changes} changed" if changes else "") + "  ▸ tap to open")
    classes = ["collapsed"] + [f"has-{mark}" for mark in sorted(collapsed.marks)]
    return {"data": data, "position": {"x": (x0 + x1) / 2, "y": (y0 + y1) / 2},
            "classes": " ".join(classes)}


def _node_element(node: Node, position: Position, parent: str | None, mark: str | None,
                  ) -> dict:
    data = {"id": element_id(node.id), "label": node_label(node), "kind": "node",
            "node_id": node.id}
    if parent is not None:
        data["parent"] = parent
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
    seen: set[tuple[str, str]] = set()
    edges: list[dict] = []
    pairs = list(drawn_edges(graph))
    for node in graph.nodes:
        if node.body is not None and node.id in opened:
            pairs += [(a, b) for a, b in drawn_edges(node.body)
                      if isinstance(a, int) and isinstance(b, int)]
    for a, b in pairs:
        source = representative.get(a, element_id(a))
        target = representative.get(b, element_id(b))
        if source == target or (source, target) in seen:
            continue
        seen.add((source, target))
        edges.append({"data": {"id": f"e{len(edges)}", "source": source, "target": target}})
    return edges
