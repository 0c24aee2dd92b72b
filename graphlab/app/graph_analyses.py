"""The hardware analyses of a workspace's graphs (per-op cost, memory plan), each computed once
per graph and kept in the workspace's cache, so the roofline, the intensity overlay and the
memory panel all read the same record and stepping back and forth recomputes nothing.

Graphs are keyed by identity: a workspace holds its snapshots' graphs for its whole life.
``sizes`` are the view's bindings, already read (`ViewState.bound`).
"""

from __future__ import annotations

from compiler_core.hardware.cost import GraphCost, graph_cost
from compiler_core.hardware.memory import MemoryPlan, plan_memory
from compiler_core.ir import Graph

from .intensity_bands import node_bands
from .workbench import Workspace


def cost_of(ws: Workspace, graph: Graph, target: str, sizes: dict[str, int]) -> GraphCost:
    key = ("cost", id(graph), target, sizes_key(sizes))
    if key not in ws.derived:
        ws.derived[key] = graph_cost(graph, target, sizes)
    return ws.derived[key]


def memory_plan_of(ws: Workspace, graph: Graph, sizes: dict[str, int]) -> MemoryPlan:
    key = ("memory", id(graph), sizes_key(sizes))
    if key not in ws.derived:
        ws.derived[key] = plan_memory(graph, sizes)
    return ws.derived[key]


def band_classes(ws: Workspace, graph: Graph, target: str, sizes: dict[str, int]
                 ) -> dict[int, str]:
    """Node id -> intensity band class, for the panes' overlay."""
    cost = cost_of(ws, graph, target, sizes)
    return node_bands(graph, cost, cost.target)


def sizes_key(sizes: dict[str, int]) -> tuple:
    """Bindings as part of a cache key: the same sizes however they were typed."""
    return tuple(sorted(sizes.items()))
