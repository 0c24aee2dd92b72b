"""Positions that stay put from one pass to the next, so the eye sees only what changed.

The whole pipeline is laid out as one graph: every key that any snapshot draws, with the edges
of every snapshot, so one layout serves every pass and both panes.  Keys that are never drawn
together may share a slot: a node a pass creates takes over the slot of the last of the nodes
it replaced (its provenance; a fused op sits where its sources' result used to be computed), if
that node was removed by the same pass and belongs to the same group.  Any other new node gets
a slot of its own, which layering puts between its producers and consumers.  Removed nodes keep
their slots, so the "before" pane never moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from compiler_core.ir import Graph
from compiler_core.passes import PipelineResult

from .drawn_graph import Key, drawn_edges, drawn_keys


@dataclass
class PipelineGraph:
    """What is laid out: slots (each stands for keys never drawn at the same time) and edges."""

    slots: list[Key] = field(default_factory=list)       # preferred order: input graph first
    slot_of: dict[Key, Key] = field(default_factory=dict)
    edges: set[tuple[Key, Key]] = field(default_factory=set)
    bodies: dict[int, Graph] = field(default_factory=dict)   # fused node id -> its body

    def add_slot(self, key: Key, slot: Key | None = None) -> None:
        if slot is None:
            self.slots.append(key)
        self.slot_of[key] = key if slot is None else slot

    def add_graph(self, graph: Graph) -> None:
        """The edges and fused bodies of one snapshot (every key of it has a slot)."""
        slot_of = self.slot_of
        self.edges.update((slot_of[a], slot_of[b]) for a, b in drawn_edges(graph))
        self.bodies.update((n.id, n.body) for n in graph.nodes if n.body is not None)


def pipeline_graph(result: PipelineResult, group_of: Callable[[Key], str | None]
                   ) -> PipelineGraph:
    """The slots and edges of every snapshot; ``group_of`` keeps slots inside one group."""
    union = PipelineGraph()
    for key in drawn_keys(result.initial):
        union.add_slot(key)
    union.add_graph(result.initial)
    for snapshot in result.snapshots:
        if not snapshot.changed:
            continue
        graph = snapshot.graph
        freed = set(snapshot.diff.removed)
        for key in drawn_keys(graph):
            if key in union.slot_of:
                continue
            node = graph.node_by_id(key) if isinstance(key, int) else None
            source = _freed_source(node, freed, group_of) if node is not None else None
            if source is not None:
                freed.discard(source)
            union.add_slot(key, None if source is None else union.slot_of[source])
        union.add_graph(graph)
    return union


def _freed_source(node, freed: set[int], group_of: Callable[[Key], str | None]) -> int | None:
    """The last of the node's sources removed by this pass, in the node's group."""
    sources = node.provenance.sources if node.provenance is not None else ()
    group = group_of(node.id)
    return next((s for s in reversed(sources) if s in freed and group_of(s) == group), None)
