"""The hardware analyses of a workspace's graphs (per-op cost, memory plan), each computed once
per graph and kept in the workspace's cache, so the roofline, the intensity overlay, the
inspector and the memory panel all read the same record and stepping back and forth
recomputes nothing.

Graphs are keyed by identity: a workspace holds its snapshots' graphs for its whole life.  The
sizes are the workspace's (`Workspace.sizes`: the compile entry's decision, the user's bindings
and representative sizes for the rest), and a graph whose shapes those sizes do not fix is
priced through its sized copy (`compilation.sized`), made once.
"""

from __future__ import annotations

from compiler_core.compilation import sized
from compiler_core.compilation.pass_traffic import PipelineTraffic, pipeline_traffic
from compiler_core.hardware.cost import GraphCost, OpCost, graph_cost
from compiler_core.hardware.memory import MemoryPlan, plan_memory
from compiler_core.hardware.targets import DEFAULT_TARGET
from compiler_core.ir import Graph

from typing import TYPE_CHECKING

from .intensity_bands import group_bands, node_bands

if TYPE_CHECKING:   # the workspace's build precomputes the traffic story (workbench)
    from .workbench import Workspace


def sized_of(ws: Workspace, graph: Graph) -> Graph:
    """``graph`` with every shape the workspace's sizes can fix made concrete (same node ids)."""
    key = ("sized", id(graph))
    if key not in ws.derived:
        ws.derived[key] = sized(graph, ws.sizes.bindings)
    return ws.derived[key]


def cost_of(ws: Workspace, graph: Graph, target: str | None) -> GraphCost:
    key = ("cost", id(graph), target or DEFAULT_TARGET)
    if key not in ws.derived:
        ws.derived[key] = graph_cost(sized_of(ws, graph), target, ws.sizes.bindings)
    return ws.derived[key]


def op_cost_of(ws: Workspace, graph: Graph, node_id: int, target: str | None
               ) -> OpCost | None:
    """The cost record of one node of ``graph`` (None: not one of its nodes)."""
    key = ("op costs", id(graph), target or DEFAULT_TARGET)
    if key not in ws.derived:
        ws.derived[key] = {node.id: op for node, op in
                           zip(graph.nodes, cost_of(ws, graph, target).ops)}
    return ws.derived[key].get(node_id)


def memory_plan_of(ws: Workspace, graph: Graph) -> MemoryPlan:
    key = ("memory", id(graph))
    if key not in ws.derived:
        ws.derived[key] = plan_memory(sized_of(ws, graph), ws.sizes.bindings)
    return ws.derived[key]


def band_classes(ws: Workspace, graph: Graph, target: str) -> dict[int, str]:
    """Node id -> intensity band class, for the panes' overlay."""
    cost = cost_of(ws, graph, target)
    return node_bands(graph, cost, cost.target)


def group_band_classes(ws: Workspace, graph: Graph, target: str) -> dict[str, str]:
    """Group id -> the intensity band class of its members together (a collapsed group)."""
    cost = cost_of(ws, graph, target)
    scopes = ws.scopes
    return group_bands(graph, cost, cost.target,
                       lambda node_id: scopes.ancestors(scopes.group_of.get(node_id)))


def traffic_of(ws: Workspace, target: str | None) -> PipelineTraffic:
    """FLOPs, bytes, time and arena peak after every pass of the workspace's pipeline.  The
    build computes it for the default target (`workbench`), in the builder process: pricing
    every pass takes from a few hundred milliseconds to seconds, which opening the Roofline
    tab used to wait for.  The default target is keyed by its name, as the page names it."""
    key = ("traffic", target or DEFAULT_TARGET)
    if key not in ws.derived:
        ws.derived[key] = pipeline_traffic(ws.result, target, ws.sizes.bindings)
    return ws.derived[key]
