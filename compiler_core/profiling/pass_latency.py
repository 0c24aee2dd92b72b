"""Each pass's measured latency beside its predicted one ("fuse_attention 1.8 -> 1.1 ms").

The model as loaded and the graph after every pass that changed it are profiled in one child
(`runner.profile_graphs`), on the same inputs; a pass that changed nothing has its
predecessor's figures, so it is not run again.  The prediction is the roofline total plus the
measured per-op overhead on the same target (`compare`), so the two columns read alike.
Passes are compared by their best run (`best_ms`): on a shared machine the other runs wait
for a CPU by amounts that have nothing to do with the graph; the median and the spread are
kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..hardware.targets import Target
from ..lowering import lower_for_onnxruntime
from ..records import record_field
from ..runtime_check import by_level_name
from .compare import compare
from .runner import LevelProfile, ProfileSettings, profile_graphs

if TYPE_CHECKING:
    from ..ir import Graph
    from ..passes import PipelineResult

INPUT = "(input model)"


@dataclass(frozen=True)
class PassLatency:
    """The graph after one pass (index -1: the model as loaded), measured and predicted."""

    index: int
    pass_name: str = record_field(key="pass")
    nodes: int
    # onnxruntime level -> median run time
    measured_ms: dict[str, float] = record_field(convert=by_level_name)
    spread_ms: dict[str, tuple[float, float]] = record_field(key="measured_spread_ms",
                                                            convert=by_level_name)
    predicted_ms: float
    # kernels onnxruntime ran at each level
    kernels: dict[str, int] = record_field(convert=by_level_name)
    profiles: dict[str, LevelProfile] = record_field(omit=True, default_factory=dict,
                                                     compare=False, repr=False)
    # as profiled
    graph: "Graph | None" = record_field(omit=True, default=None, compare=False, repr=False)

    json_derived = (("best_ms", "best_ms", by_level_name),
                    ("kernel_ms", "kernel_ms", by_level_name),
                    ("measured_bytes", "measured_bytes", by_level_name))
    json_order = ("index", "pass", "nodes", "best_ms", "measured_ms", "measured_spread_ms",
                  "kernel_ms", "measured_bytes", "predicted_ms", "kernels")

    @property
    def best_ms(self) -> dict[str, float]:
        """The fastest timed run at each level: what the graph costs when nothing else runs."""
        return {level: low for level, (low, _) in self.spread_ms.items()}

    @property
    def kernel_ms(self) -> dict[str, float]:
        """The kernels' own time at each level (`LevelProfile.kernel_ms`)."""
        return {level: p.kernel_ms for level, p in self.profiles.items()}

    @property
    def measured_bytes(self) -> dict[str, float]:
        """Bytes the kernels read and wrote per run at each level, as onnxruntime reports them."""
        return {level: p.bytes for level, p in self.profiles.items()}


def pass_latencies(result: "PipelineResult", inputs: dict[str, np.ndarray], target: Target,
                   bindings: dict[str, int] | None = None,
                   settings: ProfileSettings | None = None,
                   for_onnxruntime: bool = False) -> list[PassLatency]:
    """The input model and every snapshot that changed the graph, measured and predicted;
    ``for_onnxruntime``: each as written for onnxruntime (fused nodes as its operators)."""
    steps = [(-1, INPUT, result.initial)] + [(s.index, s.pass_name, s.graph)
                                             for s in result.snapshots if s.changed]
    if for_onnxruntime:
        steps = [(index, name, lower_for_onnxruntime(graph).graph)
                 for index, name, graph in steps]
    profiles = profile_graphs([graph for _, _, graph in steps], inputs, settings)
    rows = []
    for (index, name, graph), levels in zip(steps, profiles):
        first = next(iter(levels.values()))
        predicted = compare(graph, first, target, bindings).predicted_total_ms
        rows.append(PassLatency(
            index, name, len(graph.nodes),
            {level: p.total_ms for level, p in levels.items()},
            {level: (min(p.wall_ms), max(p.wall_ms)) for level, p in levels.items()},
            predicted, {level: len({k for op in p.ops for k in op.kernels})
                        for level, p in levels.items()}, levels, graph))
    return rows
