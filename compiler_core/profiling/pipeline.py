"""A pipeline measured: every graph that changed, run in onnxruntime's profiler as written for
onnxruntime (what a user of GraphLab's output runs), the final graph's ops beside their
predictions, and the two claims the lessons start from checked on this machine:

- fusion lowers latency 2-5x (the model as loaded against the final graph, at each level);
- attention fusion saves 30-50 % of memory traffic (the bytes onnxruntime's kernels moved
  just before and just after `fuse_attention`).

`graphlab report --measured` and the notebook's `CompileResult.measure()` show the same record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..hardware.targets import Target
from ..verify import make_inputs
from .compare import Comparison, compare
from .pass_latency import PassLatency, pass_latencies
from .runner import ProfileSettings

if TYPE_CHECKING:
    from ..passes import PipelineResult

SEED_LATENCY = "fusion gives 2–5× lower latency"
SEED_TRAFFIC = "attention fusion saves 30–50 % of memory traffic"
ATTENTION_PASS = "fuse_attention"


@dataclass(frozen=True)
class LatencyGain:
    """The model as loaded and the final graph at one onnxruntime level (best runs, ms)."""

    level: str
    before_ms: float
    after_ms: float

    @property
    def ratio(self) -> float:
        return self.before_ms / self.after_ms


@dataclass(frozen=True)
class TrafficSaving:
    """Bytes onnxruntime's kernels read and wrote per run just before and after a pass."""

    pass_name: str
    level: str
    before_bytes: float
    after_bytes: float

    @property
    def saved(self) -> float:
        return 1 - self.after_bytes / self.before_bytes


@dataclass
class MeasuredPipeline:
    """The input model and every pass that changed the graph, measured and predicted."""

    passes: list[PassLatency]   # the input model, then every pass that changed the graph
    comparison: Comparison      # the final graph's ops at ORT_ENABLE_ALL, beside predictions

    @property
    def target(self) -> Target:
        return self.comparison.target

    def latency_gains(self) -> list[LatencyGain]:
        first, last = self.passes[0], self.passes[-1]
        return [LatencyGain(level, first.best_ms[level], last.best_ms[level])
                for level in first.measured_ms]

    def attention_traffic(self) -> TrafficSaving | None:
        """None when no attention was fused (the claim is then not tested by this model)."""
        index = next((i for i, p in enumerate(self.passes) if p.pass_name == ATTENTION_PASS),
                     None)
        if not index:
            return None
        level = list(self.passes[0].measured_ms)[-1]
        return TrafficSaving(ATTENTION_PASS, level,
                             self.passes[index - 1].profiles[level].bytes,
                             self.passes[index].profiles[level].bytes)


def measure_pipeline(result: "PipelineResult", target: Target, bindings: dict[str, int],
                     settings: ProfileSettings) -> MeasuredPipeline:
    """Every changed snapshot's latency and the final graph's ops, measured on ``target``,
    each graph as written for onnxruntime (its fused nodes as onnxruntime's operators, where
    it has them)."""
    inputs = make_inputs(result.initial, bindings)
    passes = pass_latencies(result, inputs, target, bindings, settings, for_onnxruntime=True)
    last = passes[-1]   # the last graph that changed is the final one
    profile = last.profiles.get("all") or next(iter(last.profiles.values()))
    return MeasuredPipeline(passes, compare(last.graph, profile, target, bindings))
