"""Everything the report tells, gathered once from compiler_core's records (no markup here):
the pipeline's snapshots, the roofline before and after it, the memory plans, and what the
pattern library finds in the model as loaded."""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler_core.errors import VerificationError
from compiler_core.hardware.pass_traffic import PipelineTraffic, pipeline_traffic
from compiler_core.hardware.systolic_choices import SystolicStory, systolic_story
from compiler_core.hardware.representative_sizes import ChosenSizes
from compiler_core.hardware import CostComparison, MemoryPlan, Target, compare_costs, plan_memory
from compiler_core.ir import Graph
from compiler_core.passes import PassManager, PipelineResult
from compiler_core.passes.framework.rulebook import registered_patterns
from compiler_core.patterns import PatternReport, explain
from compiler_core.profiling.compare import Comparison, compare
from compiler_core.profiling.pass_latency import PassLatency, pass_latencies
from compiler_core.profiling.runner import ProfileSettings
from compiler_core.verify import make_inputs


@dataclass(frozen=True)
class NodeLabel:
    name: str
    op: str

    def __str__(self) -> str:
        return f"{self.name} ({self.op})"


@dataclass
class Measured:
    """The pipeline measured in onnxruntime's profiler on a measured target."""

    passes: list[PassLatency]   # the input model, then every pass that changed the graph
    comparison: Comparison      # the final graph's ops at ORT_ENABLE_ALL, beside predictions


@dataclass
class Story:
    label: str                  # the model as the user named it (sample or file name)
    pipeline: str               # the pipeline as asked for ("O2", or a pass list)
    target: Target
    sizes: ChosenSizes          # what the symbolic dims were priced at, and why
    result: PipelineResult
    verify_note: str            # why there is no numerical check ("" when there is one)
    costs: CostComparison
    memory_before: MemoryPlan
    memory_after: MemoryPlan
    traffic: PipelineTraffic    # FLOPs, bytes, time and arena peak after every pass
    systolic: SystolicStory     # the GEMMs on the array after every pass, the busiest one
    model_patterns: list[PatternReport]
    nodes: dict[int, NodeLabel] = field(default_factory=dict)   # every id the pipeline saw
    measured: Measured | None = None   # with `report --measured`

    @property
    def bindings(self) -> dict[str, int]:
        return self.sizes.bindings

    def node(self, node_id: int) -> NodeLabel:
        return self.nodes.get(node_id, NodeLabel(f"#{node_id}", "?"))


def run_verified(graph: Graph, pipeline: str, bindings: dict[str, int]
                 ) -> tuple[PipelineResult, str]:
    """Run the pipeline with the numerical check after every pass; a model onnxruntime cannot
    run still gets its report, with the reason the check is missing."""
    try:
        return PassManager(pipeline, bindings=bindings, verify=True).run(graph), ""
    except VerificationError as err:
        result = PassManager(pipeline, bindings=bindings).run(graph)
        return result, f"not checked: {err}"


def tell(result: PipelineResult, label: str, pipeline: str, target: Target,
         sizes: ChosenSizes, verify_note: str = "", measured: Measured | None = None) -> Story:
    """The story of one pipeline run (the heavy analyses run here, once)."""
    bindings = sizes.bindings
    return Story(
        label=label, pipeline=pipeline, target=target, sizes=sizes,
        result=result, verify_note=verify_note,
        costs=compare_costs(result.initial, result.final, target, bindings),
        memory_before=plan_memory(result.initial, bindings),
        memory_after=plan_memory(result.final, bindings),
        traffic=pipeline_traffic(result, target, bindings),
        systolic=systolic_story(result, target, bindings),
        model_patterns=explain(result.initial, registered_patterns().values()),
        nodes=_node_labels(result), measured=measured)


def measure(result: PipelineResult, target: Target, bindings: dict[str, int],
            settings: ProfileSettings) -> Measured:
    """Every changed snapshot's latency and the final graph's ops, measured on ``target``,
    each graph as written for onnxruntime (its fused nodes as onnxruntime's operators, where
    it has them): what a user of GraphLab's output runs."""
    inputs = make_inputs(result.initial, bindings)
    passes = pass_latencies(result, inputs, target, bindings, settings, for_onnxruntime=True)
    last = passes[-1]   # the last graph that changed is the final one
    profile = last.profiles.get("all") or next(iter(last.profiles.values()))
    return Measured(passes, compare(last.graph, profile, target, bindings))


def _node_labels(result: PipelineResult) -> dict[int, NodeLabel]:
    labels: dict[int, NodeLabel] = {}
    for graph in [result.initial] + [s.graph for s in result.snapshots]:
        for node in graph.nodes:
            labels.setdefault(node.id, NodeLabel(node.name, node.qualified_op))
    return labels
