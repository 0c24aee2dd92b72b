"""Positions that stay put from one pass to the next, so the eye sees only what changed.

The input graph is laid out once.  Every later snapshot reuses those positions: a node keeps
its place for the whole pipeline (removed nodes too, so the "before" pane never moves), and a
node a pass creates is placed where the nodes it came from were (its provenance), or next to
its neighbours, in the nearest free slot of that layer.  A fused node's body keeps the ids of
the nodes it replaced, so opening it shows them exactly where they used to be.
"""

from __future__ import annotations

from collections import defaultdict

from compiler_core.ir import Graph, Node
from compiler_core.passes import PipelineResult

from .drawn_graph import Key, drawn_edges, drawn_keys
from .graph_layout import LayoutOptions, layered_layout

Position = tuple[float, float]


def pipeline_positions(result: PipelineResult,
                       options: LayoutOptions = LayoutOptions()) -> dict[Key, Position]:
    """One position for every key that appears in any snapshot of the pipeline."""
    positions = graph_positions(result.initial, options)
    for snapshot in result.snapshots:
        place_new_keys(snapshot.graph, positions, options)
    return positions


def graph_positions(graph: Graph, options: LayoutOptions = LayoutOptions()) -> dict[Key, Position]:
    positions = layered_layout(drawn_keys(graph), drawn_edges(graph), options)
    for node in graph.nodes:
        if node.body is not None:
            _place_body(node, positions, options)
    return positions


def place_new_keys(graph: Graph, positions: dict[Key, Position], options: LayoutOptions) -> None:
    """Give every key of ``graph`` that has no position yet one near its origin."""
    keys = drawn_keys(graph)
    new = [k for k in keys if k not in positions]
    if not new:
        return
    rows = _occupied_rows(keys, positions, options)
    preds: dict[Key, list[Key]] = defaultdict(list)
    succs: dict[Key, list[Key]] = defaultdict(list)
    for a, b in drawn_edges(graph):
        preds[b].append(a)
        succs[a].append(b)
    for key in new:
        node = graph.node_by_id(key) if isinstance(key, int) else None
        x, y = _anchor(node, preds[key], succs[key], positions, options)
        row = round(y / options.layer_step)
        x = _free_x(rows[row], x, options.column_step)
        rows[row].append(x)
        positions[key] = (x, row * options.layer_step)
        if node is not None and node.body is not None:
            _place_body(node, positions, options)


def _occupied_rows(keys, positions, options) -> dict[int, list[float]]:
    rows: dict[int, list[float]] = defaultdict(list)
    for key in keys:
        if key in positions:
            x, y = positions[key]
            rows[round(y / options.layer_step)].append(x)
    return rows


def _anchor(node: Node | None, preds: list[Key], succs: list[Key],
            positions: dict[Key, Position], options: LayoutOptions) -> Position:
    """Where a new key wants to be: on its sources, else below its producers or above users."""
    if node is not None and node.provenance is not None:
        sources = [positions[s] for s in node.provenance.sources if s in positions]
        if sources:
            return _mean(sources)
    placed_preds = [positions[k] for k in preds if k in positions]
    if placed_preds:
        x, _ = _mean(placed_preds)
        return x, max(y for _, y in placed_preds) + options.layer_step
    placed_succs = [positions[k] for k in succs if k in positions]
    if placed_succs:
        x, _ = _mean(placed_succs)
        return x, min(y for _, y in placed_succs) - options.layer_step
    return 0.0, 0.0


def _free_x(taken: list[float], wanted: float, step: float) -> float:
    """The position nearest ``wanted`` (alternating right, left) at least ``step`` from others."""
    for k in range(len(taken) + 1):
        for candidate in (wanted + k * step, wanted - k * step):
            if all(abs(candidate - x) >= step - 1e-6 for x in taken):
                return candidate
    return wanted + (len(taken) + 1) * step


def _place_body(node: Node, positions: dict[Key, Position], options: LayoutOptions) -> None:
    """Body nodes that were never drawn (a fused op read from a file) get a small local layout."""
    body = node.body
    missing = [n.id for n in body.nodes if n.id not in positions]
    if not missing:
        return
    local = layered_layout([n.id for n in body.nodes], drawn_edges(body), options)
    cx, cy = _mean(list(local.values()))
    ox, oy = positions[node.id]
    for key in missing:
        x, y = local[key]
        positions[key] = (ox + x - cx, oy + y - cy)


def _mean(points: list[Position]) -> Position:
    return (sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points))
