"""Growing maximal connected regions of accelerator-supported nodes that can each become one
node without creating a cycle.

Walking the graph in execution order, each supported node joins the regions of its supported
producers (merging them) whenever the union stays fusible: a region is fusible unless some
path leaves it and comes back (through a CPU op), since the fused node would then depend on
itself.  A second sweep merges regions joined by an edge until nothing more can merge, so no
two neighbouring regions could be one.
"""

from __future__ import annotations

from ...ir import Graph, Node
from ..framework.rewrite import creates_cycle


def grow_regions(graph: Graph, supported: set[int]) -> list[list[Node]]:
    """Maximal acyclic connected regions of the ``supported`` node ids, in execution order."""
    region_of: dict[int, int] = {}
    members: dict[int, list[Node]] = {}
    for node in graph.nodes:
        if node.id not in supported:
            continue
        region_of[node.id] = node.id
        members[node.id] = [node]
        for producer in _supported_neighbours(node, supported, upstream=True):
            _try_merge(graph, region_of[producer.id], region_of[node.id], region_of, members)
    merged = True
    while merged:
        merged = False
        for region in list(members):
            if region not in members:
                continue
            for node in list(members[region]):
                for consumer in _supported_neighbours(node, supported, upstream=False):
                    if _try_merge(graph, region_of[node.id], region_of[consumer.id], region_of,
                                  members):
                        merged = True
    order = {node.id: index for index, node in enumerate(graph.nodes)}
    regions = [sorted(nodes, key=lambda n: order[n.id]) for nodes in members.values()]
    return sorted(regions, key=lambda nodes: order[nodes[0].id])


def _supported_neighbours(node: Node, supported: set[int], upstream: bool) -> list[Node]:
    if upstream:
        found = [v.producer for v in node.inputs if v is not None and v.producer is not None]
    else:
        found = [user for v in node.outputs if v is not None for user, _ in v.uses]
    return list({n.id: n for n in found if n.id in supported}.values())


def _try_merge(graph: Graph, a: int, b: int, region_of: dict[int, int],
               members: dict[int, list[Node]]) -> bool:
    """Merge regions ``a`` and ``b`` if their union can be fused; True if they were merged."""
    if a == b:
        return False
    union = members[a] + members[b]
    if creates_cycle(graph, union):
        return False
    for node in members[b]:
        region_of[node.id] = a
    members[a] = union
    del members[b]
    return True
