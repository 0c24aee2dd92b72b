"""The traffic story of a pipeline, pass by pass: after each pass, the graph's FLOPs, bytes
moved, estimated time on a target and arena peak.

Fusion's point is that it leaves the arithmetic alone and cuts the traffic: the intermediates
a fused node keeps on chip are neither written out nor read back, so bytes (and, for
memory-bound ops, time) fall while FLOPs stay.  Shown per pass, a student sees which pass
bought what.  Every graph is priced at the same sizes (``sizing.sized``), so the figures
compare.  A pass that changed nothing has its predecessor's figures (not recomputed).

The fused nodes of the final graph are listed too, each with the bytes its body would move
run op by op and the share of that traffic fusion keeps on chip.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..hardware.cost import GraphCost, graph_cost
from ..hardware.memory import plan_memory
from ..hardware.roofline import TargetLike
from ..hardware.targets import Target, get_target
from ..ir import Graph
from ..passes import PipelineResult
from ..records import name_of, record_field
from .sizing import sized

INPUT = "(input model)"


@dataclass(frozen=True)
class PassFigures:
    """The graph after one pass (index -1: the model as loaded), priced on the target."""

    index: int
    pass_name: str = record_field(key="pass")
    changed: bool
    nodes: int
    flops: int
    bytes: int
    est_seconds: float
    arena_peak_bytes: int
    ops_with_assumed_dims: int


@dataclass(frozen=True)
class FusedTraffic:
    """One fused node: bytes it moves, and what its body would move op by op."""

    node: str
    op_type: str
    bytes: int
    unfused_bytes: int

    json_derived = ("saving",)

    @property
    def saving(self) -> float:
        return 1 - self.bytes / self.unfused_bytes


@dataclass
class PipelineTraffic:
    target: Target = record_field(convert=name_of)
    steps: list[PassFigures] = record_field(key="passes")   # the input model, then each pass
    fused: list[FusedTraffic] = field(default_factory=list)   # the final graph's fused nodes

    json_derived = (("fused_by_op", "fused_kinds"),)

    def fused_by_op(self) -> dict[str, tuple[int, int, int]]:
        """op type -> (count, bytes fused, bytes unfused), for a one-line summary per kind."""
        totals: dict[str, tuple[int, int, int]] = {}
        for f in self.fused:
            count, moved, unfused = totals.get(f.op_type, (0, 0, 0))
            totals[f.op_type] = (count + 1, moved + f.bytes, unfused + f.unfused_bytes)
        return totals

    @property
    def fused_kinds(self) -> dict[str, dict]:
        """`fused_by_op` with names, and the share of traffic each kind keeps on chip."""
        return {op: {"count": c, "bytes": b, "unfused_bytes": u, "saving": 1 - b / u}
                for op, (c, b, u) in self.fused_by_op().items()}


def pipeline_traffic(result: PipelineResult, target: TargetLike = None,
                     bindings: dict[str, int] | None = None) -> PipelineTraffic:
    """Figures after every pass of ``result`` (module docstring)."""
    chosen = get_target(target)
    bindings = bindings or {}
    steps = [_figures(-1, INPUT, True, result.initial, chosen, bindings)]
    for snapshot in result.snapshots:
        previous = steps[-1]
        if snapshot.changed:
            steps.append(_figures(snapshot.index, snapshot.pass_name, True, snapshot.graph,
                                  chosen, bindings))
        else:
            steps.append(PassFigures(snapshot.index, snapshot.pass_name, False, previous.nodes,
                                     previous.flops, previous.bytes, previous.est_seconds,
                                     previous.arena_peak_bytes,
                                     previous.ops_with_assumed_dims))
    return PipelineTraffic(chosen, steps, fused_traffic(
        graph_cost(sized(result.final, bindings), chosen, bindings)))


def fused_traffic(cost: GraphCost) -> list[FusedTraffic]:
    """The fused nodes of a priced graph whose body traffic is known."""
    return [FusedTraffic(op.node, op.op_type, op.bytes, op.unfused_bytes)
            for op in cost.ops if op.unfused_bytes]


def _figures(index: int, name: str, changed: bool, graph: Graph, target: Target,
             bindings: dict[str, int]) -> PassFigures:
    priced = sized(graph, bindings)   # once for both analyses
    cost = graph_cost(priced, target, bindings)
    peak = plan_memory(priced, bindings).peak_bytes
    return PassFigures(index, name, changed, len(graph), cost.total_flops, cost.total_bytes,
                       cost.total_est_seconds, peak, cost.ops_with_assumed_dims)
